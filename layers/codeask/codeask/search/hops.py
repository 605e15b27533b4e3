"""How does X reach Y: a question that asks for a path through the code is answered by places and
the calls that lead on from them, so a long definition is cited down to the line where it calls
the next place the question is about (the best-ranked other definition it calls)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, MutableMapping

from codeask.search.callers import (
    BODY_LINES,
    CALLABLE_KINDS,
    DEFINED_FILES,
    P,
    Place,
    best,
    callees,
)

__all__ = ["asks_for_hops", "cite_hops", "next_hop", "start_names", "starts"]

HOP_BODIES = 30  # the best long definitions cited down to a call
DEEP_LINES = 12  # a definition longer than this is cited down to its call
# A function the question writes as a call (`resolve()`) is where the path starts: its definition
# counts this many times its score (as a definition the question names by its identifier does).
START_WEIGHT = 3.0
_CALLED_RE = re.compile(r"\b([A-Za-z_]\w*)\(\)")

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


def start_names(question: str) -> list[str]:
    """The functions a question writes as calls, `resolve()` or `os.exit()`, in its order."""
    return list(dict.fromkeys(_CALLED_RE.findall(question)))


def starts(
    cands: MutableMapping[tuple[str, int], P],
    names: list[str],
    named: Callable[[list[str]], list[P]],
    read: Callable[[str], list[str] | None],
) -> dict[tuple[str, int], bool]:
    """The definitions of the functions a how-does-X-reach-Y question writes as calls ("how does
    a resolve() call end up reading the hosts file"), as candidates worth START_WEIGHT times their
    score: a path is told from where it starts, and the question names that place exactly. A name
    defined in more than DEFINED_FILES files singles none of them out. `named` gives the
    definitions with given names, as new candidates; `read` a file's lines. Returns their keys,
    each with whether it was cited down to a helper it hands on to.

    Each start is cited down to its call of the longest function of its own file that it calls
    (`handed_on`); one that calls none is left to cite_hops, to its call of a better-ranked place."""
    defs = [d for d in named(names) if d.kind in CALLABLE_KINDS] if names else []
    files: dict[str, set[str]] = {}
    for d in defs:
        files.setdefault(d.name, set()).add(d.path)
    out: dict[tuple[str, int], bool] = {}
    for d in defs:
        if len(files[d.name]) <= DEFINED_FILES:
            c = cands.setdefault((d.path, d.line), d)
            # worth as much as a named definition; search_only.rank cites a start down to its
            # hit line, the call (a named definition it cites at its own line, with no range)
            c.boost, c.named = max(c.boost, START_WEIGHT), False
            lines = read(c.path) if c.end - c.line > DEEP_LINES else None
            hop = None
            if lines:
                body = lines[c.line : min(c.end, c.line + BODY_LINES)]
                hop = handed_on(body, c.line + 1, c, named)
            c.hit_line = hop or c.hit_line
            out[(d.path, d.line)] = hop is not None
    return out


def handed_on(
    body: list[str], first: int, start: Place, named: Callable[[list[str]], list[P]]
) -> int | None:
    """The line of a body (numbered from `first`) that calls the longest other function defined
    in the same file: an entry point hands its work on to the helper that does it (a public
    `resolve` to its own `_scan_sources`), more than to the library calls around it."""
    own = {start.name, start.name.rsplit(".", 1)[-1]}
    mine = {d.name: d.end - d.line for d in named(sorted(callees(body) - own))
            if d.path == start.path and d.kind in CALLABLE_KINDS}  # fmt: skip
    if not mine:
        return None
    longest = max(sorted(mine), key=lambda n: mine[n])
    for row, text in enumerate(body, first):
        if longest in callees([text]):
            return row
    return None


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
    cands: Mapping[tuple[str, int], Place],
    read: Callable[[str], list[str] | None],
    first: Mapping[tuple[str, int], bool] | None = None,
) -> None:
    """For a how-does-X-reach-Y question: each of the best long definitions with no line of its own
    to cite is cited down to where it calls the best other place, the next hop. Where the path
    starts (`first`, from `starts`: whether it is cited down to the helper it hands on to) is cited
    down to such a call even when it has a line already, unless it has that helper's call: the
    call is what leads on from there."""
    handed = first or {}
    worth: dict[str, float] = {}
    for c in cands.values():
        if c.kind in CALLABLE_KINDS and c.name:
            for name in {c.name, c.name.rsplit(".", 1)[-1]}:
                worth[name] = max(worth.get(name, 0.0), c.score())
    long = (c for k, c in cands.items()
            if c.kind in CALLABLE_KINDS and (c.hit_line is None or handed.get(k) is False)
            and c.end - c.line > DEEP_LINES)  # fmt: skip
    files: dict[str, list[str] | None] = {}
    for c in best(long, HOP_BODIES):
        key = (c.path, c.line)
        if c.path not in files:
            files[c.path] = read(c.path)  # names to look up, never shown
        lines = files[c.path]
        if lines:
            body = lines[c.line : min(c.end, c.line + BODY_LINES)]
            hop = next_hop(body, c.line + 1, c.name, worth)
            if hop is not None or key not in handed:
                c.hit_line = hop
