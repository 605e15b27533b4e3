"""The project's own exceptions; vendor errors are translated into these at the edges."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import PurePosixPath


class CodeaskError(Exception):
    """Base class for every error codeask raises on purpose."""

    exit_code = 3


class BadInput(CodeaskError):
    """The caller asked for something invalid; the message says what and how to fix it."""

    exit_code = 2


class ConfigError(BadInput):
    """A setting is missing or malformed."""


class RepoUnavailable(CodeaskError):
    """A repository could not be fetched and no earlier mirror exists to fall back on."""

    exit_code = 3


class DiskFull(CodeaskError):
    """A disk codeask writes mirrors or snapshots to is full, even after old snapshots were removed."""

    exit_code = 3


class ToolRefused(CodeaskError):
    """A tool call was refused (path outside the snapshot, deny-listed, bad regex...)."""

    exit_code = 2


def first_line(exc: BaseException, limit: int = 160) -> str:
    """An exception as one short line for a person: libgit2 and SDK messages run long."""
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return text if len(text) <= limit else text[: limit - 1] + "…"


# An absolute path on the machine codeask runs on (/mnt/mirrors/…, /tmp/codeask/snapshots/…),
# also inside a file:// URL; not the path of an http(s) URL, nor `and/or` or `1/2`.
_START = r"(?<![\w.~:/\\-])(?:file://)?"
_PATH_CHAR = r"[^\s'\"`<>|:;,()\[\]{}]"
_ABSOLUTE = re.compile(rf"{_START}/{_PATH_CHAR}+")


def public(text: str, roots: Mapping[str, str] | None = None) -> str:
    """`text` fit to show off the machine it was written on (to Slack, to the model): a path under
    one of `roots` as its label and the rest (a snapshot's root as the repo it holds, so
    `/tmp/codeask/snapshots/ab12/src/app.py` reads `src/app.py`), any other absolute path by its
    last name only (`…/billing.lock`), so no error tells where codeask keeps what."""
    for root, label in sorted((roots or {}).items(), key=lambda kv: -len(kv[0])):
        base = re.escape(root.rstrip("/"))
        if base:
            shown = label.replace("\\", "\\\\")  # as a replacement, not a template
            text = re.sub(rf"{_START}{base}/", shown, text)
            text = re.sub(rf"{_START}{base}(?!{_PATH_CHAR})", shown or ".", text)
    return _ABSOLUTE.sub(_last_name, text)


def _last_name(m: re.Match[str]) -> str:
    name = PurePosixPath(m.group(0).removeprefix("file://")).name
    return f"…/{name}" if name else "…"
