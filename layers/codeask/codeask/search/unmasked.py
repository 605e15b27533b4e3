"""Matches judged on the text redaction leaves: a match that touches a masked secret counts as none."""

from __future__ import annotations

import re
from collections.abc import Callable

from codeask.redact.kinds import MARKER_PREFIX
from codeask.search.patterns import compile_python
from codeask.search.ripgrep import MAX_COLUMNS, RawMatch

_MARKER = re.compile(re.escape(MARKER_PREFIX) + r"[a-z0-9-]+\]")

# What a search is given to drop the matches a redaction hides: from a run's pattern and case,
# a filter over the matches rg printed.
Keep = Callable[[list[RawMatch]], list[RawMatch]]
Hider = Callable[[str, bool], Keep]


def shows_match(rx: re.Pattern[str] | None, masked: str) -> bool:
    """Whether the pattern matches a masked line outside its markers. Each stretch between
    markers is searched as a text of its own, so the answer depends on nothing a marker hides
    (the secret's characters, even its length): searching a secret's value answers as searching
    a random string does. A pattern Python cannot read matches no line that has a marker."""
    if rx is None:
        return False
    return any(rx.search(piece) for piece in _MARKER.split(masked) if piece)


def _preview(line: str) -> str:
    """The line cut as rg cuts a long one (--max-columns-preview)."""
    if len(line) <= MAX_COLUMNS:
        return line
    return line[:MAX_COLUMNS] + " [... omitted end of long line]"


def show_all(pattern: str, ignore_case: bool) -> Keep:
    """The Hider of a search with nothing redacted."""
    return list


def hider(masked_line: Callable[[str, int], str | None]) -> Hider:
    """A Hider over `masked_line(path, line)`: the line as the redaction gate shows it, or None
    when it cannot be read (then the match is dropped: fail closed). Lines with no marker keep
    rg's verdict; a kept line with one carries its masked text, so that nothing ranked, counted
    or shown after it (alternatives, spans, kinds) reads the secret either."""

    def for_run(pattern: str, ignore_case: bool) -> Keep:
        rx: list[re.Pattern[str] | None] = []

        def keep(matches: list[RawMatch]) -> list[RawMatch]:
            out = []
            for m in matches:
                masked = masked_line(m.path, m.line)
                if masked is None:
                    continue
                if MARKER_PREFIX not in masked:
                    out.append(m)
                    continue
                if not rx:
                    rx.append(compile_python(pattern, ignore_case=ignore_case))
                if shows_match(rx[0], masked):
                    out.append(RawMatch(m.path, m.line, _preview(masked)))
            return out

        return keep

    return for_run
