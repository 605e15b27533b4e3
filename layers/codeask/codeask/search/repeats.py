"""Hits that say the same thing: a line repeated across files (licence headers) and near-identical comment lines within a file, folded into one with a count."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from codeask.search.query import FileHits, Hit
from codeask.search.ranking import is_licence_header

ACROSS_FILES = 3  # a prose line in this many files is folded to its first
AROUND = 24  # characters either side of the match that make two comment lines "the same"
MIN_CHARS = 12  # a shorter line (`*/`, `# ---`) is too plain to fold
HEADER_ROWS = 30  # a line this near the top without code punctuation reads as a licence header

_MARKERS = re.compile(r"^[\s#/*!;\-{}%]+|[\s#/*!;\-{}%]+$")
_DIGITS = re.compile(r"\d+")
_CODE = re.compile(r"[{}=]|;\s*$|\w\(")  # `(C)` and a mid-line `;` are a licence's prose


@dataclass
class Repeated:
    """One line folded across files: its text, and where it was (path, row), first kept."""

    text: str
    where: list[tuple[str, int]] = field(default_factory=list)


def prose_like(fh: FileHits, h: Hit) -> bool:
    """A comment, a string, a docs line, or a header line with no code in it (the lines of a
    C block comment guess no kind before the parse)."""
    if h.kind in ("definition", "import", "assignment", "call") or "{{" in h.text:
        return False  # a template's action is code, in NOTES.txt too: each is a call site
    if h.kind in ("comment", "string") or fh.kind == "docs":
        return True
    if h.line > HEADER_ROWS:
        return False
    return is_licence_header(h.line, h.text) or _CODE.search(h.text) is None


def _plain(text: str, years: bool = False) -> str:
    """A line as its words say it: no comment markers, one space (and with `years`, any
    number alike: licence headers differ in their years only)."""
    plain = " ".join(_MARKERS.sub("", text).split()).lower()
    return _DIGITS.sub("0", plain) if years else plain


def _around_match(h: Hit) -> str:
    a, b = h.spans[0] if h.spans else (0, len(h.text))
    return _plain(h.text[max(0, a - AROUND) : b + AROUND])


def fold_across(files: list[FileHits]) -> tuple[list[FileHits], list[Repeated]]:
    """The files with a prose line that ACROSS_FILES or more files share kept in the first
    (best ranked) file only; a file left with no hit is dropped. Returns the files and what
    was folded."""
    seen: dict[str, list[tuple[FileHits, Hit]]] = {}
    for fh in files:
        for h in fh.hits:
            if prose_like(fh, h):
                key = _plain(h.text, years=True)
                if len(key) >= MIN_CHARS:
                    seen.setdefault(key, []).append((fh, h))
    folded: list[Repeated] = []
    drop: dict[int, set[int]] = {}
    for group in seen.values():
        if len({id(fh) for fh, _ in group}) < ACROSS_FILES:
            continue
        first, kept = group[0]
        rest = [(fh, h) for fh, h in group[1:] if fh is not first]
        folded.append(Repeated(" ".join(kept.text.split()), [(fh.path, h.line) for fh, h in rest]))
        for fh, h in rest:
            drop.setdefault(id(fh), set()).add(id(h))
    if not drop:
        return files, []
    out = []
    for fh in files:
        gone = drop.get(id(fh))
        if gone:
            fh.hits = [h for h in fh.hits if id(h) not in gone]
        if fh.hits:
            out.append(fh)
    folded.sort(key=lambda r: -len(r.where))
    return out, folded


def fold_within(fh: FileHits) -> dict[int, list[int]]:
    """Comment and prose lines of one file that read the same around the match (the same
    sentence under ten different parameters) folded into the first: its row -> the others."""
    first_of: dict[str, Hit] = {}
    same: dict[int, list[int]] = {}
    kept: list[Hit] = []
    for h in fh.hits:
        if prose_like(fh, h):
            key = _around_match(h)
            if len(key) >= MIN_CHARS:
                first = first_of.setdefault(key, h)
                if first is not h:
                    same.setdefault(first.line, []).append(h.line)
                    continue
        kept.append(h)
    if same:
        fh.hits = kept
        for rows in same.values():
            rows.sort()
    return same
