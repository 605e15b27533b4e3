"""What a search's own hits leave out: matches outside its path or glob, near misses when it found none, and where the definitions it found are used."""

from __future__ import annotations

import re
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field

from codeask.pathdisplay import display_path
from codeask.search import heuristics
from codeask.search.filekinds import KIND_WEIGHT, file_kind, language_of
from codeask.search.ripgrep import RawMatch

OUTSIDE_CAP = 200  # matches read outside a filter before counting stops ("200+"): a rare
# call site outside is named, a common word is only counted
NEAR_CAP = 200  # per word of a pattern that found nothing
NEAR_WORDS = 4
USES_CAP = 400  # lines read for the uses of up to three definitions
USE_SITES = 3  # uses named per definition
USE_CANDIDATES = 6  # read by the parser to find them (a line inside a block comment is no use)
EXAMPLE_FILES = 3
SAMPLE_CHARS = 120

# rg over the whole snapshot (no path or glob, the deny-list kept): pattern, ignore case, cap.
Lookup = Callable[[str, bool, int], tuple[list[RawMatch], bool]]


@dataclass
class Tally:
    """Matches counted somewhere a search did not show: how many, in how many files, the best files."""

    matches: int
    files: int
    capped: bool
    examples: list[tuple[str, int]] = field(default_factory=list)  # (path, matches), best first
    word: str = ""
    sample: str = ""  # a line of the best file, as it reads

    def describe(self, *, where: bool = True) -> str:
        plus = "+" if self.capped else ""
        s = "" if self.matches == 1 else "es"
        fs = "" if self.files == 1 else "s"
        head = f"{self.matches}{plus} match{s} in {self.files}{plus} file{fs}"
        if not where:
            return head
        files = ", ".join(f"{display_path(p)} ({n})" for p, n in self.examples)
        more = self.files - len(self.examples)
        if more > 0:
            files += f" and {more}{plus} more files"
        return f"{head}: {files}"


def tally(matches: list[RawMatch], capped: bool, word: str = "") -> Tally:
    """Matches per file, the best files first: code in a known language (a data file without an
    extension reads as source), and for a word, files where it stands alone as a name."""
    per_file: dict[str, int] = {}
    alone: dict[str, int] = {}
    rx = re.compile(rf"(?<![\w.\-]){re.escape(word)}(?![\w.\-])", re.I) if word else None

    def standing(m: RawMatch) -> bool:
        return rx is not None and bool(rx.search(m.text)) and not _comment(m)

    for m in matches:
        per_file[m.path] = per_file.get(m.path, 0) + 1
        if standing(m):
            alone[m.path] = alone.get(m.path, 0) + 1
    best = sorted(
        per_file.items(),
        key=lambda pc: (-alone.get(pc[0], 0), -KIND_WEIGHT[file_kind(pc[0])],
                        language_of(pc[0]) is None, -pc[1], pc[0]),
    )  # fmt: skip
    sample = next(
        (m for m in matches if best and m.path == best[0][0] and (rx is None or standing(m))),
        None,
    )
    text = " ".join(sample.text.split())[:SAMPLE_CHARS] if sample is not None else ""
    return Tally(len(matches), len(per_file), capped, best[:EXAMPLE_FILES], word, text)


def outside(
    all_matches: list[RawMatch], capped: bool, inside: set[tuple[str, int]]
) -> Tally | None:
    """The matches of an unfiltered run that the filtered one did not have."""
    rest = [m for m in all_matches if (m.path, m.line) not in inside]
    return tally(rest, capped) if rest else None


def _comment(m: RawMatch) -> bool:
    return heuristics.looks_like_comment(m.text, language_of(m.path))


# -- near misses -----------------------------------------------------------------------------------

_ESCAPED = re.compile(r"\\([^\w\s])")  # `\.` reads as `.`
_CLASSES = re.compile(r"\\[a-zA-Z](\{[^}]*\})?|\[[^\]]*\]|\(\?[^)]*\)|[*+?]|\{\d*,?\d*\}")
_WORD = re.compile(r"[A-Za-z_][\w.\-]*\w|[A-Za-z_]\w+")


def pattern_words(pattern: str) -> list[str]:
    """The literal names a pattern is made of: `include "redis.image"` has `include` and
    `redis.image`; `def\\s+add_msg\\(` has `def` and `add_msg`."""
    text = _CLASSES.sub(" ", _ESCAPED.sub(r"\1", pattern))
    words: list[str] = []
    for w in _WORD.findall(text):
        if len(w) >= 3 and w not in words:
            words.append(w)
    return words[:NEAR_WORDS]


def near_misses(
    run: Callable[[str, int], tuple[list[RawMatch], bool]], pattern: str, pool: Executor
) -> list[Tally]:
    """For a pattern that found nothing: how often each of its words occurs on its own, so the
    model sees which part was wrong (`template "redis.image"` where it searched `include`)."""
    words = pattern_words(pattern)
    if len(words) < 2 and (not words or words[0].lower() == pattern.lower()):
        return []  # a single plain word: its near miss is only other case, searched already
    runs = list(pool.map(lambda w: run(re.escape(w), NEAR_CAP), words))
    return [tally(matches, capped, w) for w, (matches, capped) in zip(words, runs, strict=True)]


# -- uses of a definition --------------------------------------------------------------------------


@dataclass
class Use:
    path: str
    line: int
    text: str
    call: bool
    score: float
    scope: str = ""

    @property
    def where(self) -> str:
        where = f"{display_path(self.path)}:{self.line}"
        return where + (f" in {self.scope}" if self.scope else "")


@dataclass
class Uses:
    name: str
    sites: list[Use]
    total: int
    files: int
    capped: bool

    def describe(self) -> str:
        if not self.sites:
            return (
                f"↳ no other line names `{self.name}` (used through a pointer, a macro or a table?)"
            )
        calls = [u.where for u in self.sites if u.call]
        refs = [u.where for u in self.sites if not u.call]
        parts = []
        if calls:
            parts.append("called from " + ", ".join(calls))
        if refs:
            parts.append("referenced at " + ", ".join(refs))
        s = "; ".join(parts)
        if self.total > len(self.sites):
            plus = "+" if self.capped else ""
            fs = "" if self.files == 1 else "s"
            s += f" ({self.total}{plus} uses in {self.files}{plus} file{fs} in all)"
        return "↳ " + s


def uses_pattern(name: str) -> str:
    if re.fullmatch(r"\w+", name):
        return rf"\b{re.escape(name)}\b"
    return re.escape(f'"{name}"')  # a template's name is used quoted: include "x.y"


def find_uses(
    lookup: Lookup, definitions: list[tuple[str, str, int]]
) -> dict[tuple[str, int], Uses]:
    """For (name, path, line) definitions, the best few places that use each name, with one rg
    over the snapshot for all the names together (capped)."""
    names = list(dict.fromkeys(name for name, _, _ in definitions))
    if not names:
        return {}
    patterns = {n: re.compile(uses_pattern(n)) for n in names}
    matches, capped = lookup("|".join(uses_pattern(n) for n in names), False, USES_CAP)
    out: dict[tuple[str, int], Uses] = {}
    for name, path, line in definitions:
        rx = patterns[name]
        found = [
            u
            for m in matches
            if rx.search(m.text) and (m.path, m.line) != (path, line)
            for u in [_use(m, name)]
            if u is not None
        ]
        found.sort(key=lambda u: (-u.score, u.path, u.line))
        files = len({u.path for u in found})
        out[(path, line)] = Uses(name, found[:USE_CANDIDATES], len(found), files, capped)
    return out


_DEFINES = r"def|class|function|func|fn|struct|enum|union|interface|type|#\s*define|define|block"


def _use(m: RawMatch, name: str) -> Use | None:
    """One line naming a definition, as a use worth showing (None for comments and other definitions)."""
    text = m.text
    language = language_of(m.path)
    weight = KIND_WEIGHT[file_kind(m.path)]
    if weight < KIND_WEIGHT["test"] or _comment(m):
        return None  # docs, change logs, generated lists: counted, not named
    escaped = re.escape(name)
    if re.search(rf"(^|\s|\{{\{{-?\s*)({_DEFINES})\s+\"?{escaped}\b", text):
        return None  # another definition of the same name
    if language in ("c", "cpp") and re.match(
        rf"(extern\s+)?(\w[\w\s*]*[\s*])?{escaped}\s*\(", text
    ):
        return None  # at column 0 in C: a definition (GNU style) or a prototype, not a call
    call = re.search(rf"{escaped}\"?\s*\(", text) is not None or bool(
        re.search(rf"\b(include|template)\s+\"{escaped}\"", text)
    )
    score = weight * (2.0 if call else 1.0)
    if m.path.endswith((".h", ".hpp", ".pyi", ".d.ts")):
        score *= 0.5  # a declaration says less than a use
    return Use(m.path, m.line, text.strip(), call, score)


# -- several repositories searched together --------------------------------------------------------


def merged(tallies: list[tuple[str, Tally | None]]) -> Tally | None:
    """One tally for several repos (`billing/src/x.c`): counts added, the best files kept."""
    found = [(repo, t) for repo, t in tallies if t is not None]
    if not found:
        return None
    examples = [(f"{repo}/{p}", n) for repo, t in found for p, n in t.examples]
    examples.sort(key=lambda pn: -KIND_WEIGHT[file_kind(pn[0])])
    best = next((t for _, t in found if t.matches), found[0][1])
    return Tally(
        sum(t.matches for _, t in found),
        sum(t.files for _, t in found),
        any(t.capped for _, t in found),
        examples[:EXAMPLE_FILES],
        found[0][1].word,
        best.sample,
    )


def merged_words(repos: list[str], per_repo: list[list[Tally]]) -> list[Tally]:
    """Near misses of several repos, word by word."""
    words = list(dict.fromkeys(t.word for tallies in per_repo for t in tallies))
    out = []
    for w in words:
        one = merged(
            [
                (r, next((t for t in ts if t.word == w), None))
                for r, ts in zip(repos, per_repo, strict=True)
            ]
        )
        if one is not None:
            out.append(one)
    return out


def joined(lookups: list[tuple[str, Lookup | None]]) -> Lookup | None:
    """A lookup over several repos, paths named with their repo."""
    parts = [(repo, lookup) for repo, lookup in lookups if lookup is not None]
    if not parts:
        return None

    def lookup(pattern: str, ignore_case: bool, cap: int) -> tuple[list[RawMatch], bool]:
        out: list[RawMatch] = []
        capped = False
        for repo, one in parts:
            matches, more = one(pattern, ignore_case, cap)
            out += [RawMatch(f"{repo}/{m.path}", m.line, m.text) for m in matches]
            capped = capped or more
        return out, capped

    return lookup
