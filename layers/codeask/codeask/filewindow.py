"""A window of lines from a file too large to load whole: streamed in bounded memory, masked with its context."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from codeask.redact import key_open_after, mask_file
from codeask.search.ripgrep import clean_text
from codeask.snapshot import CHUNK

# mask_file judges a whole file; a window is judged with this much of the file around it, which
# covers what whole-file masking looks back or ahead for (a value continued over lines, the key a
# value is named under, a YAML document's `kind: Secret`: Kubernetes caps a Secret at 1 MiB).
# A private key that began further up is carried in as a streamed state (key_open_after).
CONTEXT_BEFORE = 1000  # lines
CONTEXT_AFTER = 200  # lines
CONTEXT_BYTES = 2 * 1024 * 1024  # at most this much of the context is kept, nearest lines first
KEEP_BEFORE = 16  # lines above the window kept whatever their size (at most LINE_KEEP each)
LINE_KEEP = 16 * 1024  # bytes kept of one line; a shown line is cut far earlier (tools' LINE_MAX)
_SYNTHETIC_BEGIN = "-----BEGIN PRIVATE KEY-----"
_MARKER_TAIL = len("PRIVATE KEY") - 1  # bytes kept from a chunk's end to find a split marker


@dataclass
class Window:
    lines: list[str]  # masked lines first..first+len-1 (1-based), each cut at LINE_KEEP bytes
    first: int
    total: int  # the file's line count


class _Reader:
    """Lines of a file as they stream past: counted all, kept in a window, watched for keys."""

    def __init__(self, lo: int, hi: int) -> None:
        self.lo, self.hi = lo, hi  # the 1-based lines to keep, inclusive
        self.done = 0  # lines completed so far
        self.partial = bytearray()  # the line under way, cut at LINE_KEEP
        self.over = False  # the line under way was cut at LINE_KEEP
        self.kept: list[bytes] = []
        self.key_open = False  # a private key block is open before line lo
        self.tail = b""
        self.cut_line = False  # a kept line was cut at LINE_KEEP

    def feed(self, chunk: bytes) -> None:
        newlines = chunk.count(b"\n")
        after = self.done >= self.hi
        before = self.done + newlines + 1 < self.lo
        quiet = b"PRIVATE KEY" not in self.tail + chunk and b"PRIVATE KEY" not in self.partial
        if after or (before and quiet):
            # The bulk of a huge file: counted at C speed, never split into lines.
            self.done += newlines
            cut = chunk.rfind(b"\n")
            if cut != -1:
                self.partial.clear()
                self.over = False
            self._extend(chunk[cut + 1 :])
        else:
            pieces = chunk.split(b"\n")
            for piece in pieces[:-1]:
                self._extend(piece)
                self.line_done()
            self._extend(pieces[-1])
        self.tail = chunk[-_MARKER_TAIL:]

    def _extend(self, data: bytes) -> None:
        room = LINE_KEEP - len(self.partial)
        if room > 0:
            self.partial += data[:room]
        self.over = self.over or len(data) > room

    def line_done(self) -> None:
        n = self.done + 1
        line = bytes(self.partial)
        if self.lo <= n <= self.hi:
            self.kept.append(line)
            self.cut_line = self.cut_line or self.over
        elif n < self.lo:
            self.key_open = key_open_after(clean_text(line), self.key_open)
        self.done = n
        self.partial.clear()
        self.over = False


def read_window(
    real: Path, rel: str, start: int, count: int, *, check: Callable[[], None] = lambda: None
) -> Window:
    """Lines start..start+count-1 of a text file, masked as mask_file masks a whole file, reading
    it once in CHUNK pieces; `check` is called between pieces (a deadline). Raises OSError."""
    lo = max(1, start - CONTEXT_BEFORE)
    reader = _Reader(lo, start + count - 1 + CONTEXT_AFTER)
    with open(real, "rb") as f:
        while chunk := f.read(CHUNK):
            check()
            reader.feed(chunk)
    if reader.partial:
        reader.line_done()  # a last line without a newline
    kept = reader.kept
    key_open = reader.key_open
    # The context nearest the window is kept whole; far lines go first when it is too big, but
    # never the last KEEP_BEFORE lines above the window: a value's name may sit there (a value
    # continued with a backslash, on the line below its name, named a few lines up).
    first = lo
    size = sum(map(len, kept))
    while size > CONTEXT_BYTES and first < start - KEEP_BEFORE and kept:
        gone = kept.pop(0)
        size -= len(gone)
        key_open = key_open_after(clean_text(gone), key_open)
        first += 1
    text = [clean_text(b) for b in kept]
    # Cut after the file's first line, the window may begin inside a multi-line string; a line
    # cut at LINE_KEEP may have lost a string's opener (a `"""` past 16 KB), so the lines after
    # it may be inside one unseen. Either way mask_file judges every line as data.
    cut = first > 1 or reader.cut_line
    if key_open:
        text.insert(0, _SYNTHETIC_BEGIN)
        masked, _ = mask_file(text, rel, cut=cut)
        masked = masked[1:]
    else:
        masked, _ = mask_file(text, rel, cut=cut)
    at = start - first
    return Window(masked[at : at + count], start, reader.done)
