"""How a file path is shown to a model, a terminal or Slack, and read back: control and invisible characters escaped."""

from __future__ import annotations

import re

_SHORT = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_ESCAPE = re.compile(r"\\(?:[\\nrt]|x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8})")


def _escaped(ch: str) -> str:
    short = _SHORT.get(ch)
    if short is not None:
        return short
    code = ord(ch)
    if code < 0x80:
        return f"\\x{code:02x}"
    if 0xDC80 <= code <= 0xDCFF:
        # A byte that is not UTF-8 (the file system's surrogateescape): shown as the byte it is.
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def display_path(path: str) -> str:
    """`path` as it may be shown anywhere: unchanged when every character is printable, else with
    control characters, bidi overrides, zero-width and other invisible characters (and, so that
    the form reads back unambiguously, every backslash) written as escapes: `new\\nline.py`,
    `evil\\u202etxt.py`. A name that needs no escape never contains a backslash once shown."""
    if path.isprintable():
        return path
    return "".join(ch if ch.isprintable() and ch != "\\" else _escaped(ch) for ch in path)


def _unescape(m: re.Match[str]) -> str:
    text = m.group(0)
    kind = text[1]
    if kind in "\\nrt":
        return {"\\": "\\", "n": "\n", "r": "\r", "t": "\t"}[kind]
    code = int(text[2:], 16)
    if kind == "x" and code >= 0x80:
        return chr(0xDC00 + code)
    return chr(code)


def read_displayed(text: str) -> str | None:
    """The path a displayed form names, if `text` is exactly how display_path shows some path
    with escapes in it; None for anything else (a plain path, a Windows-style `src\\app.py`)."""
    if "\\" not in text:
        return None
    rest = _ESCAPE.sub("", text)
    if "\\" in rest:
        return None  # an escape display_path never writes
    path = _ESCAPE.sub(_unescape, text)
    return path if display_path(path) == text else None
