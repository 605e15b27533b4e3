"""The project's own exceptions; vendor errors are translated into these at the edges."""


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
