"""PEM private-key blocks: found over whole texts, so a slice that starts mid-block is still masked."""

from __future__ import annotations

import re
from collections import Counter

from codeask.redact.kinds import marker

# "PRIVATE KEY" anywhere covers RSA/EC/DSA/OPENSSH/ENCRYPTED/PGP variants; certificates and
# public keys never contain it, so they are left alone.
_PEM_BEGIN = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = re.compile(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
# A whole key on one line happens in JSON (service-account files) with escaped newlines.
# The body class excludes quotes so code that merely mentions both markers is not matched.
_PEM_INLINE_BODY = re.compile(r"[A-Za-z0-9+/=\\ \t:,-]{32,}")
_PEM_INLINE = re.compile(_PEM_BEGIN.pattern + r"[A-Za-z0-9+/=\\ \t:,-]{32,}?" + _PEM_END.pattern)
# Gutters ("  42 | ", rg's "path:42:" and context "42-", read_file's "42  " and search_code's
# "  > 42  ") are kept so numbered output stays readable; base64 has no '|', ':', '-' or space,
# so a gutter can never swallow key material.
GUTTER = re.compile(
    r"[ \t]*(?:(?:[^\s:|]*[:-])?\d+[ \t]*[|:-][ \t]?|(?:>[ \t]+)?\d+[ \t]{2})?[ \t]*"
)
_PEM_BODY = re.compile(r"[A-Za-z0-9+/=]+")
_PEM_HEADER = re.compile(r"(?:Proc-Type|DEK-Info|Comment|Version|Hash|Charset): ")
# Full-width body lines are 64-76 chars; demanding a long run keeps words like `return` out.
_PEM_MIN_BODY = 32
_PEM_LOOSE_BODY = re.compile(r"[A-Za-z0-9+/=]{16,}")
_PEM_QUOTES = re.compile(r"[\"']*")
# What may follow key material on its line and still be kept: escaped newlines, a closing
# quote with a comma or concatenation '+', and the line end. A bare '+' could be base64.
_PEM_SUFFIX = re.compile(r"(?:\\[nr])*(?:[\"'][ \t]*[,+]?)?[ \t]*\r?$")


def gutter(line: str) -> str:
    """The line-number gutter and indentation a tool printed before a line's text."""
    m = GUTTER.match(line)
    assert m is not None  # every part of GUTTER is optional: it matches at any line's start
    return m.group(0)


def _body_content(line: str) -> str:
    content = line[len(gutter(line)) :]
    # Keys pasted as string literals look like "MIIE...\n", so quotes and escapes are peeled off.
    content = content.strip(" \t\r\"',+")
    for escape in ("\\n", "\\r"):
        content = content.removesuffix(escape)
    return content.strip("\"'")


def _is_body_line(line: str, *, last: bool) -> bool:
    content = _body_content(line)
    if _PEM_HEADER.match(content):
        return True
    if not _PEM_BODY.fullmatch(content):
        return False
    # The final body line (or a PGP "=xxxx" checksum) is short; every other one is full width.
    return last or len(content) >= _PEM_MIN_BODY


def _orphan_start(lines: list[str], end_idx: int, floor: int) -> int:
    """First line of the body run just above an END whose BEGIN is not in `lines`."""
    start = end_idx
    i = end_idx - 1
    while i >= floor:
        line = lines[i]
        if not line[len(gutter(line)) :].strip():
            # Legacy encrypted keys put one blank line between headers and body (a gutter
            # alone, `4  `, in numbered output).
            above = lines[i - 1] if i - 1 >= floor else ""
            if _PEM_HEADER.match(_body_content(above)):
                i -= 1
                continue
            break
        if not _is_body_line(line, last=i == end_idx - 1):
            break
        start = i
        i -= 1
    return start


def _opens_block(lines: list[str], begin_idx: int) -> bool:
    """A BEGIN line starts a key only if key material follows; code that names the marker
    (`if line.startswith("-----BEGIN RSA PRIVATE KEY-----")`) does not."""
    nxt = begin_idx + 1
    if nxt < len(lines) and not lines[nxt].strip():
        nxt += 1  # PGP armor puts a blank line between the BEGIN line and the body
    if nxt >= len(lines):
        return True  # truncated right after BEGIN: nothing to judge by, so fail closed
    return _is_body_line(lines[nxt], last=False)


def pem_blocks(lines: list[str]) -> list[tuple[int, int]]:
    """Inclusive (first, last) line ranges of private-key blocks, including truncated ones."""
    blocks: list[tuple[int, int]] = []
    open_at: int | None = None
    floor = 0
    for idx, line in enumerate(lines):
        if "PRIVATE KEY" not in line:
            continue
        if open_at is None:
            begin = _PEM_BEGIN.search(line)
            if begin is not None:
                if _PEM_INLINE.search(line):
                    blocks.append((idx, idx))
                    floor = idx + 1
                elif _opens_block(lines, idx):
                    open_at = idx
                elif _PEM_INLINE_BODY.match(line, begin.end()):
                    # An escaped one-line key cut off before its END: the rest of the line is key.
                    blocks.append((idx, idx))
                    floor = idx + 1
            elif (end := _PEM_END.search(line)) is not None:
                start = _orphan_start(lines, idx, floor)
                # An END with neither body lines above nor key material before it on its own
                # line is code naming the marker, not a key.
                if start < idx or _PEM_LOOSE_BODY.search(line, 0, end.start()):
                    blocks.append((start, idx))
                    floor = idx + 1
        elif _PEM_END.search(line):
            blocks.append((open_at, idx))
            open_at = None
            floor = idx + 1
    if open_at is not None:
        blocks.append((open_at, len(lines) - 1))
    return blocks


def key_open_after(line: str, is_open: bool) -> bool:
    """Whether a private-key block is open after `line`, given whether one was before it: the
    state a reader that streams a file carries past the lines it does not keep. Any BEGIN line
    counts as opening one (fail closed: mask_file then judges the lines that follow)."""
    if "PRIVATE KEY" not in line:
        return is_open
    if is_open:
        return _PEM_END.search(line) is None
    begin = _PEM_BEGIN.search(line)
    return begin is not None and _PEM_END.search(line, begin.end()) is None


def private_key_lines(lines: list[str]) -> set[int]:
    """0-based indices of lines that are inside a PEM private-key block (BEGIN line, body lines,
    END line) of a whole file; a block with a BEGIN but no END runs to the end of the list.
    (mask_file masks these lines, among others, before any slice of a file is shown.)"""
    stripped = [line.rstrip("\r\n") for line in lines]
    return {i for first, last in pem_blocks(stripped) for i in range(first, last + 1)}


def redact_pem(text: str, counts: Counter[str]) -> str:
    """`text` with every private-key block masked line by line; one count per block."""
    key_marker = marker("private-key")
    text, inline = _PEM_INLINE.subn(key_marker, text)
    if inline:
        counts["private-key"] += inline
    if "PRIVATE KEY" not in text:
        return text
    lines = text.split("\n")
    for first, last in pem_blocks(lines):
        counts["private-key"] += 1
        for i in range(first, last + 1):
            lines[i] = _redact_pem_line(lines[i], key_marker, first=i == first, last=i == last)
    return "\n".join(lines)


def _redact_pem_line(line: str, key_marker: str, *, first: bool, last: bool) -> str:
    """The line with its key material replaced; gutter, quotes and escapes around it stay so
    numbered output and string literals keep their shape."""
    begin = _PEM_BEGIN.search(line) if first else None
    if begin is not None:
        head = line[: begin.start()]
        rest = line[begin.end() :]
    else:
        head = gutter(line)
        end_at = _PEM_END.search(line) if last else None
        if end_at is not None and end_at.start() < len(head):
            # A gutter read as rg's context separator (`13-`) ends where the END marker begins:
            # `13  -----END …` keeps its five dashes together.
            head = line[: end_at.start()]
        quotes = _PEM_QUOTES.match(line, len(head))
        head += quotes.group(0) if quotes else ""
        rest = line[len(head) :]
    end = _PEM_END.search(rest) if last else None
    if end is not None:
        return head + key_marker + rest[end.end() :]
    suffix = _PEM_SUFFIX.search(rest)
    return head + key_marker + (suffix.group(0) if suffix else "")
