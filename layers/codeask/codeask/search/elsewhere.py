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
USE_CANDIDATES = 8  # read by the parser to find them (a line inside a block comment is no use)
EXAMPLE_FILES = 3
FEW_FILES = 3  # matches in this few files show a line from each ...
FEW_LINES = 6  # ... and this few matches show every one
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
    # each example's best line, or every line of a few matches: (path, line, text)
    firsts: list[tuple[str, int, str]] = field(default_factory=list)

    def each_file(self) -> list[str]:
        """When the matches are in a few files: one line from each (`path:line  text`), every
        line when there are only a few, so a lone call site outside the filter reads without
        another search."""
        if (
            self.capped
            or self.files > FEW_FILES
            or len({p for p, _, _ in self.firsts}) < self.files
        ):
            return []
        return [
            f"  {display_path(p)}:{n}  {' '.join(t.split())[:SAMPLE_CHARS]}"
            for p, n, t in self.firsts
        ]

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
    firsts = []
    for path, _ in best[:EXAMPLE_FILES]:
        mine = sorted((m for m in matches if m.path == path), key=lambda m: m.line)
        if len(matches) > FEW_LINES:
            mine = [
                next((m for m in mine if not _comment(m) and (rx is None or standing(m))), mine[0])
            ]
        firsts += [(m.path, m.line, m.text) for m in mine]
    return Tally(len(matches), len(per_file), capped, best[:EXAMPLE_FILES], word, text, firsts)


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
    guard: str = ""  # the condition a call is under: `if self.config.jobs > 1:`

    @property
    def where(self) -> str:
        where = f"{display_path(self.path)}:{self.line}"
        where += f" in {self.scope}" if self.scope else ""
        return where + (f" under `{self.guard}`" if self.guard else "")


@dataclass
class Uses:
    """The lines of a snapshot that name a definition, its own line apart: code that uses it
    (calls and references, best first), and the lines that only mention it (comments, prose,
    declarations, other definitions of the name)."""

    name: str
    sites: list[Use]
    mentions: list[Use]
    total: int  # lines naming it, the definition's own line not counted
    files: int
    complete: bool  # every line of the snapshot naming it was read and understood
    others: int = 0  # uses in C files that define a function of the same name of their own

    def describe(self, shown: list[Use], *, enclosing: bool = False) -> str | None:
        """The line under the definition, naming the `shown` sites; None when nothing can be
        said for sure. "No other line" is said only when the lookup read every line there is:
        a lookup stopped at its cap or its deadline, or a line it could not read, says less.
        `enclosing`: the line is under a hit inside the definition, which it names first."""
        which = f"`{self.name}`, which this is in, is " if enclosing else ""
        if shown:
            calls = [u.where for u in shown if u.call]
            refs = [u.where for u in shown if not u.call]
            parts = []
            if calls:
                parts.append("called from " + ", ".join(calls))
            if refs:
                parts.append("referenced at " + ", ".join(refs))
            s = "; ".join(parts)
            if self.total > len(shown):
                s += f" ({self._count()} in all)"
            return "↳ " + which + s
        if self.sites or self.others or not self.complete:
            return None  # uses not shown, or not all read: nothing is certain enough to say
        if self.mentions:
            where = ", ".join(u.where for u in self.mentions[:MENTIONS_NAMED])
            said = (
                which + "only mentioned"
                if enclosing
                else (f"no code calls or references `{self.name}`; it is only mentioned")
            )
            return f"↳ {said} (comments, docs, declarations): {where}" + (
                f" ({self._count()} in all)" if self.total > MENTIONS_NAMED else ""
            )
        which = " (which this is in)" if enclosing else ""
        return (
            f"↳ no other line names `{self.name}`{which}: used through a pointer, a macro or a "
            "table?"
        )

    def merge(self, other: Uses) -> None:
        """Another name of the same definition (a C alias): its lines join these."""
        self.name = f"{self.name}` or `{other.name}"
        self.sites = sorted(self.sites + other.sites, key=lambda u: (-u.score, u.path, u.line))
        self.mentions += other.mentions
        self.total += other.total
        self.files += other.files
        self.others += other.others
        self.complete = self.complete and other.complete

    def _count(self) -> str:
        plus = "" if self.complete else "+"
        ls = "" if self.total == 1 else "s"
        fs = "" if self.files == 1 else "s"
        return f"{self.total}{plus} line{ls} name it in {self.files}{plus} file{fs}"


MENTIONS_NAMED = 2


def uses_pattern(name: str) -> str:
    """How rg finds a name: as a word (`\\b` only beside word characters, so `$http` is found
    too), or quoted for a template's dotted name (`include "redis.image"`)."""
    if re.fullmatch(r"[\w$]+", name):
        head = r"\b" if re.match(r"\w", name) else ""
        tail = r"\b" if re.search(r"\w$", name) else ""
        return head + re.escape(name) + tail
    return re.escape(f'"{name}"')


def find_uses(
    lookup: Lookup, definitions: list[tuple[str, str, int]]
) -> dict[tuple[str, str, int], Uses]:
    """For (name, path, line) definitions, the lines of the snapshot naming each, split into
    uses and mentions: one rg for all the names together (capped), then, if the cap was hit,
    one more for the names it found no use of (a common name may have filled the cap)."""
    names = list(dict.fromkeys(name for name, _, _ in definitions))
    if not names:
        return {}
    patterns = {n: re.compile(uses_pattern(n)) for n in names}
    per_name, complete = _lines_naming(lookup, names, patterns)
    if not all(complete.values()):
        again = [n for n in names if not any(_is_site(m, n) for m in per_name[n])]
        if 0 < len(again) < len(names):
            more, more_complete = _lines_naming(lookup, again, patterns)
            per_name.update(more)
            complete.update(more_complete)
    out: dict[tuple[str, str, int], Uses] = {}
    for name, path, line in definitions:
        sites: list[Use] = []
        mentions: list[Use] = []
        files: set[str] = set()
        # C files with a function of their own by this name (glibc's 170 `static int do_test`):
        # their uses are of that one, not of this
        own = {m.path for m in per_name[name] if _c_definition(m, name)} - {path}
        # files with a method of the same name (ssh's `_run` beside a worker's `_run`): their
        # `self._run(` is their own method, never this one's caller
        methods = {m.path for m in per_name[name] if _method_definition(m, name)} - {path}
        others = 0
        for m in per_name[name]:
            if (m.path, m.line) == (path, line):
                continue
            files.add(m.path)
            use = _use(m, name)
            if use.score > 0 and (
                (m.path in own and language_of(path) in ("c", "cpp"))
                or (m.path in methods and _self_call(m.text, name))
            ):
                others += 1  # a use of that file's own function, never named as this one's
                continue
            use.score *= _nearness(path, m.path)
            (sites if use.score > 0 else mentions).append(use)
        sites.sort(key=lambda u: (-u.score, u.path, u.line))
        mentions.sort(key=lambda u: (language_of(u.path) is None, u.path, u.line))
        total = len(sites) + len(mentions)
        total += others
        uses = Uses(name, sites, mentions, total, len(files), complete[name], others)
        out[(name, path, line)] = uses
    return out


def _lines_naming(
    lookup: Lookup, names: list[str], patterns: dict[str, re.Pattern[str]]
) -> tuple[dict[str, list[RawMatch]], dict[str, bool]]:
    """Each name's lines from one rg run, and whether that run read them all. A line rg cut
    short (a minified bundle) that none of the names is seen on could be any name's."""
    try:
        matches, capped = lookup("|".join(uses_pattern(n) for n in names), False, USES_CAP)
    except Exception:  # noqa: BLE001 - a lookup that fails says nothing, never "no other line"
        return {n: [] for n in names}, dict.fromkeys(names, False)
    per_name: dict[str, list[RawMatch]] = {n: [] for n in names}
    unread = False
    for m in matches:
        named = [n for n in names if patterns[n].search(m.text)]
        unread = unread or not named
        for n in named:
            per_name[n].append(m)
    return per_name, dict.fromkeys(names, not capped and not unread)


_DEFINES = r"def|class|function|func|fn|struct|enum|union|interface|type|#\s*define|define|block"


def _method_definition(m: RawMatch, name: str) -> bool:
    """A line defining a function or method called `name` (`def _run(self):`, `fn run(`)."""
    return (
        re.search(rf"(^|\s)(def|function|func|fn|sub)\s+{re.escape(name)}\s*\(", m.text) is not None
    )


def _self_call(text: str, name: str) -> bool:
    """`self.name(`, `this.name(`, `cls.name(`: a call of the file's own class's method."""
    return re.search(rf"\b(self|this|cls)\.{re.escape(name)}\b", text) is not None


def _nearness(defined: str, used: str) -> float:
    """How much a use is likely this definition's by where it is: the same file, the same
    directory, then the same top-level package; a twin package beside it (a legacy `slack/`
    mirroring `slack_sdk/`) comes after the definition's own."""
    if used == defined:
        return 1.6
    d_parts, u_parts = defined.split("/"), used.split("/")
    if d_parts[:-1] == u_parts[:-1]:
        return 1.3
    if len(d_parts) > 1 and len(u_parts) > 1 and d_parts[0] == u_parts[0]:
        return 1.15
    return 1.0


def _is_site(m: RawMatch, name: str) -> bool:
    return _use(m, name).score > 0


def _c_definition(m: RawMatch, name: str) -> bool:
    """A C line at column 0 that defines `name`, its parameters on the line (`do_test (void)`,
    `static int f (int x) {`, a first line of several); a prototype (`;`, `extern`) declares
    the same function."""
    if language_of(m.path) not in ("c", "cpp") or m.text.startswith("extern"):
        return False
    text = re.sub(r"/\*.*?\*/|//.*$", "", m.text).rstrip()
    head = re.match(rf"(\w[\w\s*]*[\s*])?{re.escape(name)}\s*\(", text)
    return head is not None and text.endswith((")", "{", ","))


def _use(m: RawMatch, name: str) -> Use:
    """One line naming a definition: a use in code (score > 0, calls first) or a mention (score
    0: a comment, prose, a generated list, a declaration or another definition of the name)."""
    text = m.text
    language = language_of(m.path)
    use = Use(m.path, m.line, text.strip(), False, 0.0)
    if (language is None and file_kind(m.path) != "source") or _comment(m):
        return use  # change logs, manuals, ABI lists, comments: they name it, they do not use it
    escaped = re.escape(name)
    if re.search(rf"(^|\s|\{{\{{-?\s*)({_DEFINES})\s+\"?{escaped}\b", text):
        return use  # another definition of the same name
    if language in ("c", "cpp") and re.match(
        rf"(extern\s+)?(\w[\w\s*]*[\s*])?{escaped}\s*\(", text
    ):
        return use  # at column 0 in C: a definition (GNU style) or a prototype, not a call
    use.call = re.search(rf"{escaped}\"?\s*\(", text) is not None or bool(
        re.search(rf"\b(include|template)\s+\"{escaped}\"", text)
    )
    # a use in a docs, vendored or generated file still counts (pylint builds its docs with
    # code under doc/exts/), ranked after the code's own
    score = KIND_WEIGHT[file_kind(m.path)] * (2.0 if use.call else 1.0)
    if m.path.endswith((".h", ".hpp", ".pyi", ".d.ts")) or language is None:
        score *= 0.5  # a declaration says less than a use; a data file less than code
    use.score = score
    return use


# -- several repositories searched together --------------------------------------------------------


def merged(tallies: list[tuple[str, Tally | None]]) -> Tally | None:
    """One tally for several repos (`billing/src/x.c`): counts added, the best files kept."""
    found = [(repo, t) for repo, t in tallies if t is not None]
    if not found:
        return None
    examples = [(f"{repo}/{p}", n) for repo, t in found for p, n in t.examples]
    examples.sort(key=lambda pn: -KIND_WEIGHT[file_kind(pn[0])])
    best = next((t for _, t in found if t.matches), found[0][1])
    firsts = [(f"{repo}/{p}", n, text) for repo, t in found for p, n, text in t.firsts]
    firsts.sort(key=lambda pnt: -KIND_WEIGHT[file_kind(pnt[0])])
    total = sum(t.matches for _, t in found)
    paths = list(dict.fromkeys(p for p, _, _ in firsts))[:EXAMPLE_FILES]
    if total > FEW_LINES:  # one line a file, as tally() keeps when the matches are many
        firsts = [next(pnt for pnt in firsts if pnt[0] == p) for p in paths]
    firsts = [pnt for pnt in firsts if pnt[0] in paths]
    return Tally(
        total,
        sum(t.files for _, t in found),
        any(t.capped for _, t in found),
        examples[:EXAMPLE_FILES],
        found[0][1].word,
        best.sample,
        firsts,
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
