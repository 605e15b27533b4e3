"""Who calls X: which definition a who-calls question is about, and where that definition is called,
each call site with the definition it sits in.

A who-calls question rarely names its function ("the shared helper that walks up to the class"),
and describes what the callers do more than the helper: the places that rank best are callers, and
what they call in common is the helper (`lift_helpers`); `find_call_sites` lists where it is
called."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol, TypeVar

from codeask.errors import ToolRefused
from codeask.pathdisplay import display_path
from codeask.search import SearchOutcome
from codeask.search.filekinds import KIND_WEIGHT
from codeask.search.vocabulary import split_identifier, stem
from codeask.tools import Toolbox

__all__ = ["CallSite", "Place", "asks_for_callers", "best", "call_pattern", "callees",
           "find_call_sites", "lift_helpers", "mentions_callers", "says_words", "shared_callees",
           "write_call_sites"]  # fmt: skip

# Any mention of calls or uses: the answer then lists the call sites of what it cites first.
CALLERS_RE = re.compile(
    r"\b(call(?:ers?|s|ed)?|call[- ]sites?|who\s+uses|every\s+(?:use|place)|all\s+(?:uses|places)|"
    r"which\s+places|where\s+is\s+\S+\s+used|usages?)\b",
    re.IGNORECASE,
)
# A question that asks for the callers ("who calls X", "which checks use the helper", "list every
# use"), not one that only says "call" ("around the test call"): the ranking looks for a helper.
WHO_CALLS_RE = re.compile(
    r"\b(?:who|what|which(?:\s+\w+){1,2})\s+(?:calls?|uses?|invokes?)\b|\bcall(?:ers|[- ]sites?)\b|"
    r"\bcalled\s+from\b|\b(?:every|all)\s+(?:uses?|places?|calls?|call[- ]sites?)\b|"
    r"\bwhere\s+is\s+\S+\s+(?:used|called)\b|\busages?\b|\blist\s+every\b",
    re.IGNORECASE,
)
# What can be called: a function, a method, a Helm/Go template.
CALLABLE_KINDS = ("function", "method", "template")
CALLED_KINDS = ("function", "method", "class")  # ... what code calls by name, `name(`
MIN_SHARED = 2  # a name called by this many of the best places is what they share
MIN_STEM = 4  # the shortest stem that may start a longer word and say it
# A who-calls question: the best places whose calls are compared, and what a name they share gets
# of their summed scores.
CALLER_BODIES = 15
HELPER_SHARE = 0.5
BODY_LINES = 400  # a body's lines read for its calls
DEFINED_FILES = 3  # a name defined in more files than this: which one the calls reach is not known
SHOWN = 15  # call sites listed under the answer
SITE_MATCHES = 2000  # matches read for the list of call sites
_NAME_RE = re.compile(r"[A-Za-z_]\w*")
_NOT_CALLS = ("definition", "import", "comment")


class Place(Protocol):
    """A ranked candidate as search_only.rank keeps it: a definition with its score so far."""

    path: str
    line: int
    end: int
    kind: str
    name: str
    body: dict[str, float]
    hit_line: int | None
    boost: float
    named: bool

    def score(self) -> float: ...


P = TypeVar("P", bound=Place)


@dataclass(frozen=True)
class CallSite:
    path: str
    line: int
    text: str


def mentions_callers(question: str) -> bool:
    """Whether the question speaks of calls or uses at all (then the call sites are listed)."""
    return CALLERS_RE.search(question) is not None


def asks_for_callers(question: str) -> bool:
    """Whether the question asks who calls something ("who calls", "list every place that uses")."""
    return WHO_CALLS_RE.search(question) is not None


def call_pattern(name: str, kind: str) -> str | None:
    """What ripgrep searches for the calls of a definition: `name(` for code (a method by its own
    name, a class as it is made) or the name handed on as a callback, `include "name"` or `template "name"` for a template, the bare
    name for anything else (a constant is used, not called); None for a name too short or too odd
    to search for."""
    if kind == "template":
        if len(name) < 3 or '"' in name:
            return None
        return r'\b(?:include|template)\s+"' + re.escape(name) + '"'
    bare = name.rsplit(".", 1)[-1]
    if len(bare) < 3 or not _NAME_RE.fullmatch(bare):
        return None
    if kind not in CALLED_KINDS:
        return rf"\b{bare}\b"
    # called, or handed on to be called: `partial(name, ...)`, `cb = name;`, `&name`
    return rf"\b{bare}\s*\(|[(,=&]\s*(?:[\w.]+\.)?{bare}\s*[,);]"


def _search(toolbox: Toolbox, pattern: str) -> SearchOutcome | None:
    try:
        return toolbox.search_outcome(pattern, max_matches=SITE_MATCHES, stable=True)
    except ToolRefused:
        return None


def _sites(outcome: SearchOutcome, name: str, def_path: str, def_line: int) -> list[CallSite]:
    """The hits that call, source first, then in path and line order: not the definition itself,
    nor a prototype, an import or a comment that names it."""
    out = []
    order: dict[str, float] = {}
    declared = _declaration(name)
    for fh in outcome.files:
        order[fh.path] = -KIND_WEIGHT.get(fh.kind, 0.0)
        for h in fh.hits:
            # GNU C puts the return type on the line above the name: either is the definition
            if h.kind in _NOT_CALLS or (fh.path == def_path and abs(h.line - def_line) <= 1):
                continue
            if declared.match(h.text):
                continue
            out.append(CallSite(fh.path, h.line, h.text.strip()))
    return sorted(out, key=lambda s: (order[s.path], s.path, s.line))


def _declaration(name: str) -> re.Pattern[str]:
    """A C prototype of `name` (`extern int name (...);`, `bool name (int x);`): only type words
    before the name, no call of it."""
    bare = re.escape(name.rsplit(".", 1)[-1])
    return re.compile(rf"^\s*(?!(?:return|else|case|do|goto|await|yield|not|new|throw|delete)\b)(?:[A-Za-z_]\w*[\s*]+)+"
                      rf"\**{bare}\s*\([^=]*\)\s*(?:\w+\s*(?:\([^)]*\))?\s*)*;\s*$")  # fmt: skip


def find_call_sites(
    toolbox: Toolbox, name: str, kind: str, def_path: str, def_line: int
) -> tuple[list[CallSite], bool]:
    """Every call of the definition `name` at `def_path:def_line`, and whether the search stopped
    before the end (then there are more)."""
    pattern = call_pattern(name, kind)
    if pattern is None:
        return [], False
    outcome = _search(toolbox, pattern)
    if outcome is None:
        return [], False
    toolbox.searches.append(outcome.describe())
    return _sites(outcome, name, def_path, def_line), outcome.stopped_early


def write_call_sites(
    name: str,
    sites: list[CallSite],
    more: bool,
    scope_of: Callable[[str, int], str],
    verb: str = "called",
) -> list[str]:
    """The call sites as answer lines: `path:line` in the definition that calls, then the line."""
    if not sites:
        return []
    shown = sites[:SHOWN]
    files = len({s.path for s in sites})
    noun = "call" if verb == "called" else "use"
    calls = f"{len(sites)}{'+' if more else ''} {_plural(len(sites), noun)}"
    head = f"Where `{name}` is {verb} ({calls} in {files} {_plural(files, 'file')}"
    head += f", first {SHOWN} shown):" if len(sites) > SHOWN or more else "):"
    rows = [head]
    for s in shown:
        scope = scope_of(s.path, s.line)
        where = f"- `{display_path(s.path)}:{s.line}`" + (f" in `{scope}`" if scope else "")
        rows.append(f"{where}: `{s.text[:120]}`" if s.text and "`" not in s.text else where)
    return rows


def _plural(n: int, word: str) -> str:
    return word if n == 1 else word + "s"


_CALL_RE = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
_INCLUDE_RE = re.compile(r"\b(?:include|template)\s+\"([^\"]+)\"")
# Words that look like calls in C, Python, JS and Go templates but call nothing of the repository's.
_NOT_CALLEES = frozenset(
    """if for while switch return sizeof elif and or not in is assert with except lambda defined
    typeof catch new print super isinstance len""".split()
)


def callees(body: list[str]) -> set[str]:
    """The names a body calls: `name(` in code, `include "name"` in a template."""
    out: set[str] = set()
    for text in body:
        out.update(m.group(1) for m in _INCLUDE_RE.finditer(text))
        out.update(n for n in _CALL_RE.findall(text) if n not in _NOT_CALLEES and len(n) >= 3)
    return out


def shared_callees(
    bodies: list[tuple[float, str, list[str]]], says: Callable[[str], bool]
) -> dict[str, float]:
    """What the best places have in common: each name that two or more of them call, with the sum
    of their scores. `bodies` are (score, own name, lines) of the places that answer best; `says`
    keeps the names that say some of the question's words.

    A who-calls question describes what the callers do ("checks whether a function carries a
    decorator") more than the helper it asks about: the places that rank best are callers, and
    the helper is what they share."""
    sums: dict[str, float] = {}
    seen: dict[str, int] = {}
    for score, own, body in bodies:
        for name in callees(body) - {own.rsplit(".", 1)[-1], own}:
            sums[name] = sums.get(name, 0.0) + score
            seen[name] = seen.get(name, 0) + 1
    return {n: s for n, s in sums.items() if seen[n] >= MIN_SHARED and says(n)}


def says_words(name: str, stems: list[str]) -> bool:
    """Whether a name says one of the (stemmed) words: `decorated_with` says `decorator`, as one
    stem starts the other (the stemmer leaves `decorated` and `decorator` apart)."""
    for part in split_identifier(name):
        st = stem(part)
        for w in stems:
            short, long = sorted((st, w), key=len)
            if len(short) >= MIN_STEM and long.startswith(short):
                return True
    return False


def best(places: Iterable[P], n: int) -> list[P]:
    """The `n` best places, in a stable order."""
    return sorted(places, key=lambda c: (-c.score(), c.path, c.line))[:n]


def lift_helpers(
    toolbox: Toolbox,
    cands: dict[tuple[str, int], P],
    stems: list[str],
    read: Callable[[str], list[str] | None],
    named: Callable[[list[str]], list[P]],
) -> None:
    """Rank for a who-calls question: what the best places call in common, when its name says some
    of the question's (stemmed) words, gets a share of their scores. `read` gives a file's lines
    (only names are taken from them), `named` the definitions with given names, as new candidates."""
    files: dict[str, list[str] | None] = {}
    bodies = []
    for c in best((c for c in cands.values() if c.kind not in ("file", "line") and c.end > c.line),
                  CALLER_BODIES):  # fmt: skip
        if c.path not in files:
            files[c.path] = read(c.path)
        lines = files[c.path]
        if lines:
            bodies.append((c.score(), c.name, lines[c.line - 1 : min(c.end, c.line + BODY_LINES)]))
    shared = shared_callees(bodies, lambda name: says_words(name, stems))
    defs = named(sorted(shared)) if shared else []
    where: dict[str, set[str]] = {}
    for d in defs:
        where.setdefault(d.name, set()).add(d.path)
    for d in defs:
        if len(where[d.name]) <= DEFINED_FILES:
            c = cands.setdefault((d.path, d.line), d)
            c.body["shared by the best"] = HELPER_SHARE * shared[d.name]
