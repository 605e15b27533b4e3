"""How does X reach Y: a question that asks for a path through the code is answered by places and
the calls that lead on from them, so a long definition is cited down to the line where it calls
the next place the question is about (the best-ranked other definition it calls)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from codeask.search.callers import BODY_LINES, CALLABLE_KINDS, Place, best, callees

__all__ = ["asks_for_hops", "cite_hops", "next_hop"]

HOP_BODIES = 30  # the best long definitions cited down to a call
DEEP_LINES = 12  # a definition longer than this is cited down to its call

# "how does X end up in / get from / reach / travel to / become Y", "walk me through", "pass through"
_HOPS_RE = re.compile(
    r"\b(?:end(?:s|ed)?\s+up|reach(?:es)?|travel(?:s|led)?|get(?:s)?\s+(?:from|to|into|out)|"
    r"pass(?:es)?\s+through|turn(?:s|ed)?\s+into|become(?:s)?|flows?|propagat\w*|"
    r"make(?:s)?\s+(?:it|its)\s+way|walk\s+me)\b",
    re.IGNORECASE,
)
_HOW_RE = re.compile(r"\bhow\b|\bwalk\s+me\b", re.IGNORECASE)


def asks_for_hops(question: str) -> bool:
    """Whether the question asks how something gets from one place to another."""
    return _HOW_RE.search(question) is not None and _HOPS_RE.search(question) is not None


def next_hop(body: list[str], first: int, own: str, worth: dict[str, float]) -> int | None:
    """The line of a body (numbered from `first`) that calls the other definition worth most to
    the question (`worth`: a name and the score of its best definition), or None if it calls
    none of them."""
    own_names = {own, own.rsplit(".", 1)[-1]}
    best_line, best = None, 0.0
    for row, text in enumerate(body, first):
        for name in callees([text]) - own_names:
            w = worth.get(name, 0.0)
            if w > best:
                best_line, best = row, w
    return best_line


def cite_hops(
    cands: Mapping[tuple[str, int], Place], read: Callable[[str], list[str] | None]
) -> None:
    """For a how-does-X-reach-Y question: each of the best long definitions with no line of its own
    to cite is cited down to where it calls the best other place, the next hop."""
    worth: dict[str, float] = {}
    for c in cands.values():
        if c.kind in CALLABLE_KINDS and c.name:
            for name in {c.name, c.name.rsplit(".", 1)[-1]}:
                worth[name] = max(worth.get(name, 0.0), c.score())
    long = (c for c in cands.values()
            if c.kind in CALLABLE_KINDS and c.hit_line is None and c.end - c.line > DEEP_LINES)  # fmt: skip
    files: dict[str, list[str] | None] = {}
    for c in best(long, HOP_BODIES):
        if c.path not in files:
            files[c.path] = read(c.path)  # names to look up, never shown
        lines = files[c.path]
        if lines:
            body = lines[c.line : min(c.end, c.line + BODY_LINES)]
            c.hit_line = next_hop(body, c.line + 1, c.name, worth)
