"""Answers without a model: definitions ranked by what the question means, with ripgrep's evidence, cited with their scope."""

from __future__ import annotations

import bisect
import math
import re
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from codeask.errors import ToolRefused
from codeask.pathdisplay import display_path
from codeask.search import SearchOutcome
from codeask.search import abbreviations as short_forms
from codeask.search.callers import (
    asks_for_callers,
    find_call_sites,
    lift_helpers,
    mentions_callers,
    write_call_sites,
)
from codeask.search.definition_index import WAIT_S, DefinitionIndex, Found, Pending, index_for
from codeask.search.definitions import extract
from codeask.search.filekinds import KIND_WEIGHT, file_kind, language_of, refine_language
from codeask.search.hops import asks_for_hops, cite_hops, start_names, starts
from codeask.search.lines import better_key, pick_line, question_for, yaml_key
from codeask.search.syntax import syntax_for
from codeask.search.vocabulary import compound, split_identifier, stem, stem_as_written, synonyms
from codeask.snapshot import Snapshot
from codeask.tools import Toolbox

__all__ = ["SearchOnlyResult", "Evidence", "Term", "answer", "question_terms", "stem"]

MAX_PHRASES = 3
MAX_WORDS = 10
TOP_FILES = 5
RG_WORDS = 4  # the question's rarest words are also searched in the code's text
RAW_MATCHES_PER_TERM = 3000
HITS_PER_FILE = 60  # a file's hits read per term: near-identical hits say nothing new
SYNONYM_WEIGHT = 0.5  # a synonym of a question's word counts this much of the word
HIT_WEIGHT = 1.0  # a rare question word ripgrep found inside a definition, per unit of rarity
EXACT_WEIGHT = 2.0  # ... when it is a quoted phrase or an identifier from the question
BODY_WEIGHT = 1.0  # the question's words in a candidate's body, as BM25 with this weight
BODY_CANDIDATES = 300
BODY_KINDS = ("function", "method", "class", "template")  # the definitions whose bodies are read
# A Go/Helm template's body is mostly `.Values` paths and other helpers' names, which say the
# question's words as often as it answers them: read at this share, it lifts the helper the
# question describes (charts-how-01: the `small` preset's requests and limits) and leaves the
# values key that answers alone (at 0.4 and more, another chart's JVM helpers outrank the kafka
# value charts-where-01 asks for).
TEMPLATE_BODY_SHARE = 0.25
BODY_LINES = 400
BODY_AVG_WORDS = 120.0
K1, B = 1.2, 0.75
# A file's second-best place adds this much of its score. 0.4 gained a file on pytest and on the
# independent set but lost the one file that defines a Helm helper to the templates that use it
# twice each (the easy set): kept at 0.2.
SECOND_WEIGHT = 0.2
# A file's own entry (its name, its path's words, its opening docstring or comment) adds this much
# of its BM25 to the file's best place: what the module says it is for is context for every place
# in it, even when the entry itself is too weak to be among the index's best results.
ENTRY_WEIGHT = 0.3
# The same definition as the best place of this many files or more, each scoring within
# TWIN_CLOSE of the other, is a copy that singles none of them out (`_damp_twins`).
TWIN_FILES = 3
TWIN_CLOSE = 0.9
DEEP_LINES = 12  # a body line further than this below its definition's line may be cited itself
MIN_RELATIVE_SCORE = 0.12
# A definition whose name is an identifier the question quotes is what "where is X" asks for.
NAMED_WEIGHT = 3.0
NAMED_FILES = 3  # ... unless more files than this define that name
# A file whose name, without its extensions, the question quotes (`ldd --version`: ldd.bash.in).
NAMED_FILE_WEIGHT = 3.0
# A file under a folder the question names as a part of the code (`the postgresql chart`).
FOLDER_WEIGHT = 1.5
# "What is the default X": a constant, a macro or a config key sets it, not a function using it.
DEFAULT_WEIGHT = 2.0
SETTING_KINDS = ("constant", "definition", "key")
# A place whose name is the best place's name less some words, scoring this much of it, is cited
# instead: the entry point, not its helper (`_entry_point`).
ENTRY_SHARE = 0.5
CALLABLE_KINDS = ("function", "method")
PRIVATE_SHARE = 0.85  # a Python helper's share against the other places of its file
PLACE_BODY_SHARE = 0.8  # between a file's places, what a body says against its name and doc
SNIPPET_LINES = 4
RESERVE_S = 10.0  # of the question's time left, kept for the searches and the write-up
UNINDEXED_FILES = 40  # without an index, the files with the most of the question parsed on the spot
# What a file is worth by its kind. Config counts in full here: `values.yaml` holds the defaults
# questions ask about; tests, docs, vendored and generated code as in search results.
FILE_KIND_WEIGHT = {**KIND_WEIGHT, "config": 1.0}
# What a definition is worth by its kind: a file's own entry only when nothing in it says more.
DEF_KIND_WEIGHT = {
    "function": 1.0, "method": 1.0, "class": 1.0, "template": 1.0, "constant": 0.9,
    "definition": 0.9, "key": 0.9, "field": 0.7, "file": 0.5, "line": 1.0,
}  # fmt: skip

_STOP = set(
    """a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing done down during each else ever
    every few find for from further get gets got had has have having he her here hers him his how
    i if in into is it its itself just know let like live lives located location look looks made
    make makes me might more most much must my need needs no nor not now of off on once only or
    other our ours out over own part place please same see seem she should show so some such
    tell than that the their theirs them then there these they this those through
    to too under until up us use used uses using very via want was way we were what whats when
    where which while who whom why will with within would you your code codebase repo repository
    file files function functions method class implemented implement implementation work works
    working handle handles handled happen happens logic defined define definition called call
    calls decide decides whether somewhere exist exists already helper there's we're it's isn't
    doesn't don't don doesn isn aren wasn won didn shouldn may shall""".split()
)
# `code`, "quoted" or 'quoted' text; an apostrophe inside a word (chart's) opens no quote
_IDENT_RE = re.compile(r"`([^`]+)`|\"([^\"]{3,})\"|(?<!\w)'([^']{3,})'(?!\w)")
_WORD_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*[A-Za-z0-9_]|[A-Za-z]{3,}")


_FOLDER_RE = re.compile(
    r"\b([a-z0-9][\w.-]*?)(?:'s)?\s+(?:chart|package|module|folder|directory|subsystem|plugin|"
    r"library|crate|app|service)s?\b|\bin\s+([a-z0-9][\w.-]*)/"
)


@dataclass
class Term:
    pattern: str  # what rg searches
    label: str  # what the term was in the question
    exact: bool  # came from an identifier or a quoted phrase
    words: tuple[str, ...] = ()  # lower-case pieces that mark a line as on-topic


_PLACEHOLDER_RE = re.compile(r"\.\.\.|…|'[^']*'|\"[^\"]*\"|<[^>]*>|\{[^}]*\}|\b\d+\b")


def _phrase_terms(phrase: str) -> list[Term]:
    """A quoted message as users paste it: its literal runs, since the placeholders differ in code."""
    phrase = phrase.strip()
    runs = [r.strip(" :.,;") for r in _PLACEHOLDER_RE.split(phrase)]
    runs = [r for r in runs if len(r.split()) >= 2 or (r and len(runs) == 1)]
    if not runs:
        return []
    out = []
    for run in sorted(runs, key=lambda r: -len(r))[:2]:
        words = run.split()[:5]  # source strings wrap; a few words survive a line break
        pattern = r"\s+".join(re.escape(w) for w in words)
        out.append(Term(pattern, " ".join(words), True, tuple(w.lower() for w in words)))
    return out


def _is_identifier(w: str) -> bool:
    return "_" in w or "." in w or (any(c.isupper() for c in w[1:]) and not w.isupper())


def question_terms(question: str) -> list[Term]:
    """Searches for a question: quoted text and identifiers as written, then stems of the content
    words, each with its synonyms (codeask.search.vocabulary)."""
    phrases: list[Term] = []
    words: list[Term] = []
    seen: set[str] = set()

    def add(bucket: list[Term], limit: int, t: Term) -> None:
        if t.pattern.lower() not in seen and len(bucket) < limit:
            seen.add(t.pattern.lower())
            bucket.append(t)

    rest = question
    for m in _IDENT_RE.finditer(question):
        phrase = next(g for g in m.groups() if g).strip()
        rest = rest.replace(m.group(0), " ")
        if " " in phrase:
            for t in _phrase_terms(phrase):
                add(phrases, MAX_PHRASES, t)
        else:
            add(phrases, MAX_PHRASES, Term(re.escape(phrase), phrase, True, (phrase.lower(),)))
    for w in _WORD_RE.findall(rest):
        if w.lower() in _STOP or len(w) < 3:
            continue
        if _is_identifier(w):
            add(phrases, MAX_PHRASES, Term(re.escape(w), w, True, (w.lower(),)))
            continue
        st = stem(w)
        alts = synonyms(st)
        written = stem_as_written(w)  # a British spelling greps its own form too
        alts = (*alts, written) if written != st else alts
        pattern = "|".join(re.escape(a) for a in (st, *alts))
        add(words, MAX_WORDS, Term(pattern, st, False, (st, *alts)))
    return phrases + words


def question_groups(question: str) -> list[tuple[tuple[str, ...], float, str]]:
    """The question as groups of index words: (stems, weight, label). Each content word is one
    group; its synonyms another, worth less; identifiers and quoted text count word by word."""
    groups: list[tuple[tuple[str, ...], float, str]] = []
    seen: set[str] = set()
    for raw in _WORD_RE.findall(question.replace("`", " ")):
        if raw.lower() in _STOP:
            continue
        for part in split_identifier(raw) if _is_identifier(raw) else [raw.lower()]:
            if len(part) < 2 or part in _STOP or part.isdigit():
                continue
            st = stem(part)
            if st in seen:
                continue
            seen.add(st)
            groups.append(((st,), 1.0, part))
            alts = tuple(a for a in synonyms(st) if a not in seen)
            if alts:
                groups.append((alts, SYNONYM_WEIGHT, part))
    # the short forms code writes for the question's plain words (`buf`, `fd`)
    prose = re.sub(r"`[^`]*`", " ", question)
    plain = [w for w in _WORD_RE.findall(prose) if not _is_identifier(w)]
    for label, forms, weight in short_forms.abbreviations(plain):
        alts = tuple(a for a in forms if a not in seen)
        if alts and label not in _STOP:
            seen.update(alts)
            groups.append((alts, weight, label))
    return groups


@dataclass
class Evidence:
    path: str
    score: float
    line: int
    text: str
    terms: list[str] = field(default_factory=list)
    name: str = ""  # the definition cited, if any
    kind: str = ""
    end_line: int | None = None  # a range: the definition down to the line that matched


@dataclass
class _Candidate:
    """A place that may answer: a definition (from the index or around a hit) or a bare hit line."""

    path: str
    line: int
    end: int
    kind: str
    name: str
    bm25: float = 0.0
    labels: set[str] = field(default_factory=set)
    body: dict[str, float] = field(default_factory=dict)  # term label -> its weight, once each
    hit_line: int | None = None  # where an exact phrase or identifier of the question is
    named: bool = False  # its name is an identifier the question quotes
    boost: float = 1.0  # what the question's intent makes of its kind
    own: float = 0.0  # a class's own lines (not its methods'): which place of its file to cite

    def score(self, own: bool = False) -> float:
        s = self.bm25 * DEF_KIND_WEIGHT.get(self.kind, 0.8) + BODY_WEIGHT * math.fsum(
            self.body.values()
        )
        if own:
            s += self.own
        return s * self.boost * (NAMED_WEIGHT if self.named else 1.0)


@dataclass
class SearchOnlyResult:
    text: str
    evidence: list[Evidence]
    searches: list[str]


def answer(
    question: str,
    toolbox: Toolbox,
    *,
    reason: str = "no model key is configured",
    deadline: float | None = None,
) -> SearchOnlyResult:
    """Rank the evidence for `question` and write it up, clearly labelled as not a model's answer.

    `deadline` (time.monotonic()) bounds how long a first question waits for the definitions
    index of a big repository; past that it is ranked by ripgrep's hits alone, and says so."""
    terms = question_terms(question)
    groups = question_groups(question)
    sha = toolbox.snapshot.short_sha
    label = f"**Search-only answer** ({reason}; nothing below was written by a model) at {sha}."
    if not terms and not groups:
        return SearchOnlyResult(
            label + "\nI could not find anything to search for in the question; name a function, "
            "file, message or concept.",
            [],
            [],
        )
    indexes, pending = _indexes(toolbox, _wait_s(deadline))
    asked = asked_kinds(question)
    found = _search_indexes(indexes, groups, asked)
    chosen = _rg_terms(terms, indexes)
    pairs = _run_searches(toolbox, chosen)
    callers = asks_for_callers(question)
    evidence = rank(toolbox, indexes, found, groups, pairs, named_folders(question),
                    asked, _DEFAULT_RE.search(question) is not None,
                    callers, asks_for_hops(question), start_names(question))[:TOP_FILES]  # fmt: skip
    searches = [o.describe() for _, o in pairs]
    if not evidence:
        large = "".join("\n" + note for _, o in pairs if (note := o.large_note()))
        return SearchOnlyResult(
            label
            + "\nNo matches for "
            + (", ".join(searches) or "the question's words")
            + "."
            + large,
            [],
            searches,
        )
    rows = [label]
    for name, p in pending.items():
        rows.append(
            f"_The definitions index of {name} at this commit is still being built ({p.todo} of "
            f"{p.files} files to go), so this is ranked by ripgrep's hits alone; later questions "
            "rank definitions by what they mean._"
        )
    rows.append("The most likely places, best first:")
    for i, ev in enumerate(evidence, 1):
        rows += _cited(toolbox, i, ev)
    if mentions_callers(question) and evidence[0].name:
        rows += _call_sites(toolbox, evidence[0])
    rows.append("Read these to confirm; a model-backed answer would follow the trail further.")
    # Snippets and names are repository text: the same gate as any tool result.
    safe = toolbox.gate.apply("\n".join(rows))
    return SearchOnlyResult(safe.text, evidence, searches)


# -- the index -----------------------------------------------------------------------------------------


def _wait_s(deadline: float | None) -> float:
    if deadline is None:
        return WAIT_S
    return max(0.0, min(WAIT_S, (deadline - time.monotonic() - RESERVE_S) / 2))


def _indexes(
    toolbox: Toolbox, wait_s: float
) -> tuple[list[tuple[str, DefinitionIndex]], dict[str, Pending]]:
    """Each repository's definitions index with the prefix its paths carry in this tree, and the
    repositories whose index is not ready within `wait_s` (shared by them, one after another)."""
    snap = toolbox.snapshot
    parts = snap.parts
    out = []
    pending: dict[str, Pending] = {}
    until = time.monotonic() + wait_s
    for name, part in parts.items():
        prefix = f"{name}/" if len(parts) > 1 else ""
        try:
            if not part.files:
                continue
            toolbox.notify("reading the definitions index" if _built(part) else
                           "indexing definitions (once per commit)")  # fmt: skip
            got = index_for(part, wait_s=max(0.0, until - time.monotonic()))
        except (OSError, sqlite3.Error) as e:
            toolbox.notify(f"no definitions index for {name}: {e}")
            continue
        if isinstance(got, Pending):
            toolbox.notify(f"definitions index of {name}: {got.todo} of {got.files} files to go")
            pending[name] = got
        else:
            out.append((prefix, got))
    return out, pending


def _built(part: Snapshot) -> bool:
    return part.index_path is not None and part.index_path.is_file()


def _search_indexes(
    indexes: list[tuple[str, DefinitionIndex]],
    groups: list[tuple[tuple[str, ...], float, str]],
    asked: frozenset[str] = frozenset(),
) -> list[tuple[Found, str]]:
    """Definitions that match the question's words, best first, with the words they matched;
    those of tests, docs and the like kept as the ranking will weigh them (`_file_weight`)."""
    out: list[tuple[Found, str]] = []
    if not groups:
        return out
    kinds = {k: 1.0 if k in asked else w for k, w in FILE_KIND_WEIGHT.items()}
    for prefix, index in indexes:
        for f in index.search([(g, w) for g, w, _ in groups], kinds=kinds):
            labels = ", ".join(dict.fromkeys(groups[i][2] for i in sorted(f.groups)))
            out.append((Found(prefix + f.path, f.line, f.end, f.kind, f.name, f.scope, f.score,
                              f.groups), labels))  # fmt: skip
    return out


def _rg_terms(terms: list[Term], indexes: list[tuple[str, DefinitionIndex]]) -> list[Term]:
    """Quoted text and identifiers, and the rarest plain words (fewest definitions name them)."""
    exact = [t for t in terms if t.exact]
    plain = [t for t in terms if not t.exact]
    if indexes:
        plain.sort(key=lambda t: sum(ix.count(t.label) for _, ix in indexes))
    return exact + plain[:RG_WORDS]


def _run_searches(toolbox: Toolbox, terms: list[Term]) -> list[tuple[Term, SearchOutcome]]:
    def run(term: Term) -> SearchOutcome | None:
        try:
            # Stable order: the same question over the same commit ranks the same way.
            return toolbox.search_outcome(
                term.pattern, max_matches=RAW_MATCHES_PER_TERM, stable=True
            )
        except ToolRefused:
            return None

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(run, terms))
    pairs = [(t, o) for t, o in zip(terms, results, strict=True) if o is not None]
    for _, o in pairs:
        toolbox.searches.append(o.describe())
        toolbox.notify(
            f"searched {o.describe()}: {o.total_matches} matches in {o.total_files} files"
        )
    return pairs


# -- ranking ---------------------------------------------------------------------------------------------


def rank(
    toolbox: Toolbox,
    indexes: list[tuple[str, DefinitionIndex]],
    found: list[tuple[Found, str]],
    groups: list[tuple[tuple[str, ...], float, str]],
    pairs: list[tuple[Term, SearchOutcome]],
    folders: frozenset[str] = frozenset(),
    asked: frozenset[str] = frozenset(),
    defaults: bool = False,
    callers: bool = False,
    hops: bool = False,
    called: list[str] | None = None,
) -> list[Evidence]:
    """Files ranked by their best place: a definition whose name, scope, path or doc says what the
    question says (BM25 over the index), plus what its body says (the question's words in it, and
    ripgrep's hits for the rarest words, quoted text and identifiers, each counted once)."""
    cands: dict[tuple[str, int], _Candidate] = {}
    for f, labels in found:
        c = cands.setdefault((f.path, f.line), _Candidate(f.path, f.line, f.end, f.kind, f.name))
        c.bm25 = max(c.bm25, f.score)
        c.labels.update(x for x in labels.split(", ") if x)
    _add_hits(toolbox, indexes, pairs, cands, asked)
    _add_bodies(toolbox, indexes, groups, cands)
    _mark_named(cands, {t.label for t, _ in pairs if t.exact and " " not in t.label})
    if defaults:
        for c in cands.values():
            if c.kind in SETTING_KINDS:
                c.boost = DEFAULT_WEIGHT
    if callers:  # search/callers.py, search/hops.py
        stems = [w for words, _, _ in groups for w in words]
        lift_helpers(toolbox, cands, stems, lambda p: _raw_lines(toolbox, p),
                     lambda names: _named(indexes, names))  # fmt: skip
    first: dict[tuple[str, int], bool] = {}  # where a hops question's path starts: cited to a call
    if hops:  # `called`: the functions the question writes as calls, `exit()`
        first = starts(cands, called or [], lambda names: _named(indexes, names),
                       lambda p: _raw_lines(toolbox, p))  # fmt: skip
        cite_hops(cands, lambda p: _raw_lines(toolbox, p), first)
    by_file: dict[str, list[_Candidate]] = {}
    for c in cands.values():
        by_file.setdefault(c.path, []).append(c)
    named_files = _named_files(toolbox, pairs)
    entries = _entry_scores(indexes, groups, list(by_file))
    out = []
    places: dict[str, _Candidate] = {}
    for path, cs in by_file.items():
        cs.sort(key=lambda c: (-c.score(), c.line))
        top = _first_place(cs, False)
        second = cs[1].score() if len(cs) > 1 else 0.0
        weight = _file_weight(_file_kind(indexes, path), path, asked, folders, named_files)
        entry = (
            0.0 if top.kind == "file" else ENTRY_WEIGHT * min(entries.get(path, 0.0), top.score())
        )
        s = (top.score() + SECOND_WEIGHT * min(second, top.score()) + entry) * weight
        # What a class's own lines say picks the place cited, never the file.
        best = _first_place(sorted(cs, key=lambda c: (-_place_score(c), c.line)), True)
        best = _entry_point(best, cs)
        line, end = best.line, None
        start = (path, best.line) in first
        if best.hit_line is not None and best.hit_line != best.line and (start or not best.named):
            if best.line < best.hit_line <= best.end and best.kind != "line":
                end = best.hit_line  # the definition down to the line inside it that answers
            else:
                line = best.hit_line
        out.append(Evidence(path, s, line, "", sorted(best.labels), best.name, best.kind, end))
        if not start:  # a start keeps the call it is cited down to
            places[path] = best
    _damp_twins(out, folders)
    out.sort(key=lambda e: (-e.score, e.path))
    _start_first(out, first)
    if out:
        floor = out[0].score * MIN_RELATIVE_SCORE
        out = [e for e in out if e.score >= floor]
    _inner_lines(toolbox, indexes, groups, pairs, out[:TOP_FILES], places)
    return out


def _start_first(out: list[Evidence], first: dict[tuple[str, int], bool]) -> None:
    """A how-does-X-reach-Y answer is told from where it starts: the best-ranked start (the
    function the question writes as a call, `exit()`) is cited first, at the score of the first."""
    starts = {path for path, _ in first}
    for i, e in enumerate(out):
        if e.path in starts:
            if i:
                e.score = out[0].score
                out.insert(0, out.pop(i))
            return


def _first_place(cs: list[_Candidate], own: bool) -> _Candidate:
    """The best of a file's places, in order: what the file defines rather than its first line."""
    best = cs[0]
    if best.kind == "file" and len(cs) > 1 and cs[1].score(own) >= 0.5 * best.score(own):
        best = cs[1]
    return best


def _place_score(c: _Candidate) -> float:
    """What a place is worth against the other places of its file: what its body says counts
    PLACE_BODY_SHARE of itself against its name and doc, and a Python name with one leading
    underscore is the module's internal helper, which counts PRIVATE_SHARE of itself."""
    s = c.bm25 * DEF_KIND_WEIGHT.get(c.kind, 0.8) + PLACE_BODY_SHARE * (
        BODY_WEIGHT * math.fsum(c.body.values()) + c.own
    )
    s *= c.boost * (NAMED_WEIGHT if c.named else 1.0)
    if c.name.startswith("_") and not c.name.startswith("__") and c.path.endswith(".py"):
        s *= PRIVATE_SHARE
    return s


def _entry_point(best: _Candidate, cs: list[_Candidate]) -> _Candidate:
    """The place of a file whose name is the best place's name less some words (`reorder_items`
    for `reorder_items_atscope`, `add_message` for `_add_one_message`) and that scores at least
    ENTRY_SHARE of it: the entry point, of which the best is a helper."""
    if best.kind not in CALLABLE_KINDS:
        return best
    words = set(split_identifier(best.name))
    floor = ENTRY_SHARE * best.score(True)
    for c in cs:
        if c is best or c.kind not in CALLABLE_KINDS or c.score(True) < floor:
            continue
        mine = set(split_identifier(c.name))
        if len(mine) >= 2 and mine < words:
            return c
    return best


def _entry_scores(
    indexes: list[tuple[str, DefinitionIndex]],
    groups: list[tuple[tuple[str, ...], float, str]],
    paths: list[str],
) -> dict[str, float]:
    """Each file's own entry scored against the question (DefinitionIndex.file_scores)."""
    out: dict[str, float] = {}
    query = [(g, w) for g, w, _ in groups]
    for prefix, index in indexes:
        mine = [p[len(prefix) :] for p in paths if p.startswith(prefix)]
        for rel, score in index.file_scores(mine, query).items():
            out[prefix + rel] = score
    return out


def _file_weight(
    kind: str, path: str, asked: frozenset[str], folders: frozenset[str], named: set[str]
) -> float:
    """What a file's best places are worth for being in it: by its kind (in full when the question
    asks for that kind), more under a folder the question names or when the question quotes its
    name."""
    weight = 1.0 if kind in asked else FILE_KIND_WEIGHT[kind]
    if folders.intersection(path.lower().split("/")[:-1]):
        weight *= FOLDER_WEIGHT
    if path in named:
        weight *= NAMED_FILE_WEIGHT
    return weight


def _named_files(toolbox: Toolbox, pairs: list[tuple[Term, SearchOutcome]]) -> set[str]:
    """The files a question names by quoting their name without its extensions: `ldd --version`
    names `ldd.bash.in`, `git log` names `log.c`; a name that more than NAMED_FILES files share
    (`__init__`, `Makefile`) singles none of them out."""
    words = {w.lower() for t, _ in pairs if t.exact for w in t.label.split()
             if len(w) >= 2 and w[0].isalnum()}  # fmt: skip
    if not words:
        return set()
    by_stem: dict[str, list[str]] = {}
    for rel in toolbox.snapshot.files:
        stem_ = rel.rsplit("/", 1)[-1].split(".", 1)[0].lower()
        if stem_ in words:
            by_stem.setdefault(stem_, []).append(rel)
    return {rel for paths in by_stem.values() if len(paths) <= NAMED_FILES for rel in paths}


def _damp_twins(out: list[Evidence], folders: frozenset[str]) -> None:
    """Files whose best place is the same definition (kind and name) scoring alike: a `resources`
    key in every chart's values file, a `print_version` in every program. That copy does not single
    out any one of them, so each counts 1/sqrt(n) of itself among n such files (TWIN_FILES or
    more); a file in a folder the question names is singled out by that, and keeps its score."""
    groups: dict[tuple[str, str], list[Evidence]] = {}
    for e in out:
        if e.name and e.kind not in ("line", "file"):
            groups.setdefault((e.kind, e.name), []).append(e)
    for twins in groups.values():
        if len(twins) < TWIN_FILES:
            continue
        scores = [e.score for e in twins]
        for e in twins:
            if folders.intersection(e.path.lower().split("/")[:-1]):
                continue
            n = sum(1 for x in scores if TWIN_CLOSE * e.score <= x <= e.score / TWIN_CLOSE)
            if n >= TWIN_FILES:
                e.score /= math.sqrt(n)


def _inner_lines(
    toolbox: Toolbox,
    indexes: list[tuple[str, DefinitionIndex]],
    groups: list[tuple[tuple[str, ...], float, str]],
    pairs: list[tuple[Term, SearchOutcome]],
    evidence: list[Evidence],
    places: dict[str, _Candidate],
) -> None:
    """Within each cited place that is long (a C function, a struct initializer, a values file's
    top-level key), cite the line that best answers (codeask.search.lines), below the place's own
    first line; in a values file, first the key the question means when the cited one is a twin
    of it under another parent."""
    q = question_for(
        groups,
        lambda w: sum(ix.count(w) for _, ix in indexes),
        sum(ix.rows for _, ix in indexes),
        [re.compile(t.pattern, re.IGNORECASE) for t, _ in pairs if t.exact],
    )
    for ev in evidence:
        c = places.get(ev.path)  # none for a hops question's start, cited down to its call
        if c is None or c.named or c.kind == "line":
            continue
        got = _lines(toolbox, ev.path)
        if not got:
            continue
        language = refine_language(language_of(ev.path), got, ev.path)
        if language == "yaml":  # a values file: the same key under several parents
            better = better_key(got, c.line, q, language)
            if better is not None:
                ev.line, ev.end_line, ev.name = better, None, yaml_key(got[better - 1])
                continue
        if c.end - c.line <= DEEP_LINES:
            continue
        pick = pick_line(got, c.line, c.end, q, language)
        if pick is None or pick.line - c.line <= DEEP_LINES:
            continue
        if c.kind == "file":
            ev.line, ev.end_line = pick.line, None
        else:
            ev.line, ev.end_line = c.line, pick.line


def _named(indexes: list[tuple[str, DefinitionIndex]], names: list[str]) -> list[_Candidate]:
    """Every definition with one of these exact names, as candidates."""
    return [_Candidate(prefix + path, line, end, kind, name)
            for prefix, index in indexes for path, line, end, kind, name in index.named(names)]  # fmt: skip


def _mark_named(cands: dict[tuple[str, int], _Candidate], identifiers: set[str]) -> None:
    """Mark the definitions named as the question names them, when there are few: a name defined
    in many files (a Makefile variable, a method every class has) singles none of them out."""
    wanted = {i.rsplit(".", 1)[-1] for i in identifiers}
    named = [c for c in cands.values()
             if c.kind != "line" and c.name and c.name.rsplit(".", 1)[-1] in wanted]  # fmt: skip
    if len({c.path for c in named}) <= NAMED_FILES:
        for c in named:
            c.named = True


_ASKED_KINDS = {"test": "test", "tests": "test", "testing": "test", "doc": "docs", "docs": "docs",
                "documentation": "docs", "vendored": "vendored", "generated": "generated"}  # fmt: skip


_DEFAULT_RE = re.compile(r"\bdefaults?\b", re.IGNORECASE)


def asked_kinds(question: str) -> frozenset[str]:
    """The kinds of file a question asks about by name (tests, docs), which then count in full."""
    return frozenset(_ASKED_KINDS[w] for w in re.findall(r"[a-z]+", question.lower())
                     if w in _ASKED_KINDS)  # fmt: skip


def named_folders(question: str) -> frozenset[str]:
    """The folders a question names as a part of the code: `the postgresql chart`, `in malloc/`."""
    return frozenset(m.group(1) or m.group(2) for m in _FOLDER_RE.finditer(question.lower()))


def _add_hits(
    toolbox: Toolbox,
    indexes: list[tuple[str, DefinitionIndex]],
    pairs: list[tuple[Term, SearchOutcome]],
    cands: dict[tuple[str, int], _Candidate],
    asked: frozenset[str] = frozenset(),
) -> None:
    """ripgrep's hits as evidence for the definition around each (or the bare line): each term once
    per definition, however many near-identical lines say it; in a kind of file the question asks
    about (tests, docs), as much as in source."""
    n_files = max(1, len(toolbox.snapshot.files))
    spans = _Spans(toolbox, indexes, pairs)
    for term, outcome in pairs:
        rarity = math.log(1 + n_files / max(1, outcome.total_files))
        weight = rarity * (EXACT_WEIGHT if term.exact else HIT_WEIGHT)
        for fh in outcome.files:
            defs = spans.of(fh.path)
            kind = _file_kind(indexes, fh.path) if asked else ""
            full = 1.0 / KIND_WEIGHT[kind] if kind in asked else 1.0
            for h in fh.hits[:HITS_PER_FILE]:
                where = _innermost(defs, h.line)
                if where is None:
                    key = (fh.path, h.line)
                    c = cands.setdefault(key, _Candidate(fh.path, h.line, h.line, "line", ""))
                else:
                    start, end, kind, name = where
                    key = (fh.path, start)
                    c = cands.setdefault(key, _Candidate(fh.path, start, end, kind, name))
                if term.label not in c.body:
                    c.body[term.label] = weight * min(1.0, h.score * full)
                    c.labels.add(term.label)
                    if term.exact and c.hit_line is None:
                        c.hit_line = h.line


_TOKEN_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


def _add_bodies(
    toolbox: Toolbox,
    indexes: list[tuple[str, DefinitionIndex]],
    groups: list[tuple[tuple[str, ...], float, str]],
    cands: dict[tuple[str, int], _Candidate],
) -> None:
    """What the best candidates' bodies say: the question's words in each body, by rarity, with
    BM25's saturation and length normalisation (a long function says everything once)."""
    want: dict[str, tuple[float, str]] = {}
    for words, weight, label in groups:
        for w in words:
            if w not in want or want[w][0] < weight:
                want[w] = (weight, label)
    if not want or not indexes:
        return
    rows = max(1, sum(ix.rows for _, ix in indexes))
    df = {w: sum(ix.count(w) for _, ix in indexes) for w in want}
    idf = {w: math.log(1 + rows / (1 + df[w])) for w in want}
    top = sorted(
        (c for c in cands.values() if c.kind in BODY_KINDS and c.end > c.line),
        key=lambda c: -c.score(),
    )[:BODY_CANDIDATES]
    files: dict[str, list[str] | None] = {}
    for c in top:
        if c.path not in files:
            # masked: a word inside a secret must not rank a body (a search never matches it)
            files[c.path] = _lines(toolbox, c.path)
        lines = files[c.path]
        if not lines:
            continue
        body = lines[c.line : min(c.end, c.line + BODY_LINES)]
        if c.kind == "class":  # its own lines: each method is a candidate of its own
            body = _own_lines(body, c, _file_spans(indexes, c.path))
        tf, n, best_line = _read_body(body, c.line + 1, {w: idf[w] * want[w][0] for w in want})
        if not tf:
            continue
        if c.hit_line is None and best_line - c.line > DEEP_LINES:
            c.hit_line = best_line  # deep in a long body: cite the line, under its function
        # A long body says everything once; a short one is not worth more than an average one.
        norm = K1 * (1 - B + B * max(n, BODY_AVG_WORDS) / BODY_AVG_WORDS)
        for w, f in tf.items():
            weight, label = want[w]
            got = BODY_WEIGHT * weight * idf[w] * f * (K1 + 1) / (f + norm)
            if c.kind == "template":
                got *= TEMPLATE_BODY_SHARE
            if c.kind == "class":
                c.own += got
            else:
                c.body["body:" + w] = got
                c.labels.add(label)


def _file_spans(
    indexes: list[tuple[str, DefinitionIndex]], path: str
) -> list[tuple[int, int, str, str]]:
    """(line, end, kind, name) of the definitions in a file, from its repository's index."""
    got = _indexed(indexes, path)
    return got[0].definitions_in(got[1]) if got is not None else []


def _indexed(
    indexes: list[tuple[str, DefinitionIndex]], path: str
) -> tuple[DefinitionIndex, str] | None:
    """The index of the repository a path is in, and the path inside it; None for none."""
    for prefix, index in indexes:
        if path.startswith(prefix):
            return index, path[len(prefix) :]
    return None


def _own_lines(body: list[str], c: _Candidate, spans: list[tuple[int, int, str, str]]) -> list[str]:
    """A class's body (from the line after its own) with the lines of the functions and classes
    nested in it blanked out, numbering kept."""
    out = list(body)
    for line, end, kind, _ in spans:
        if c.line < line and end <= c.end and kind in BODY_KINDS:
            for n in range(line, end + 1):
                if 0 <= n - c.line - 1 < len(out):
                    out[n - c.line - 1] = ""
    return out


def _read_body(
    body: list[str], first: int, worth: dict[str, float]
) -> tuple[dict[str, int], int, int]:
    """How often each wanted word is in a body, how many words it has, and the line (numbered
    from `first`) with the most worth of two or more of them (0: none)."""
    tf: dict[str, int] = {}
    n = 0
    best_line, best = 0, 0.0
    pieces: dict[str, tuple[str, ...]] = {}  # a part -> the wanted words it says (speed only)
    for row, text in enumerate(body, first):
        on_line: set[str] = set()
        for ident in _TOKEN_RE.findall(text):
            for part in split_identifier(ident):
                n += 1
                got = pieces.get(part)
                if got is None:
                    st = stem(part)
                    got = pieces[part] = (st,) if st in worth else compound(part, worth)
                for st in got:
                    tf[st] = tf.get(st, 0) + 1
                    on_line.add(st)
        if len(on_line) >= 2:
            score = math.fsum(worth[w] for w in on_line)
            if score > best:
                best_line, best = row, score
    return tf, n, best_line


def _raw_lines(toolbox: Toolbox, rel: str) -> list[str] | None:
    """A file's lines for counting words only (never shown, so not masked)."""
    try:
        _, real = toolbox.snapshot.resolve(rel)
        return real.read_text(errors="replace").split("\n")
    except (OSError, ToolRefused, ValueError):
        return None


class _Spans:
    """The definitions in a file with hits, as (line, end, kind, name) in line order: from its
    repository's index, or, with none yet, parsed now for the files with the most of the question."""

    def __init__(
        self,
        toolbox: Toolbox,
        indexes: list[tuple[str, DefinitionIndex]],
        pairs: list[tuple[Term, SearchOutcome]],
    ) -> None:
        self.toolbox = toolbox
        self.indexes = indexes
        self.cache: dict[str, list[tuple[int, int, str, str]]] = {}
        terms: dict[str, int] = {}
        for _, outcome in pairs:
            for fh in outcome.files:
                terms[fh.path] = terms.get(fh.path, 0) + 1
        best = sorted(terms, key=lambda p: (-terms[p], p))[:UNINDEXED_FILES]
        self.parse_now = set(best)

    def of(self, path: str) -> list[tuple[int, int, str, str]]:
        got = self.cache.get(path)
        if got is None:
            got = self.cache[path] = self._find(path)
        return got

    def _find(self, path: str) -> list[tuple[int, int, str, str]]:
        got = _indexed(self.indexes, path)
        if got is not None:
            return got[0].definitions_in(got[1])
        if path not in self.parse_now:
            return []
        lines = _raw_lines(self.toolbox, path)
        if not lines:
            return []
        try:
            found = extract(path, lines)
        except (RecursionError, ValueError):
            return []
        return sorted((d.line, d.end, d.kind, d.name) for d in found if d.kind != "file")


def _file_kind(indexes: list[tuple[str, DefinitionIndex]], path: str) -> str:
    got = _indexed(indexes, path)
    return got[0].file_kind(got[1]) if got is not None else file_kind(path)


def _innermost(
    defs: list[tuple[int, int, str, str]], line: int
) -> tuple[int, int, str, str] | None:
    """The definition that most closely encloses `line`; `defs` are in line order and nest, so it is
    the last one starting at or above the line that still reaches it."""
    i = bisect.bisect_right(defs, (line, math.inf))
    while i > 0:
        i -= 1
        if defs[i][1] >= line:
            return defs[i]
    return None


# -- writing it up -----------------------------------------------------------------------------------------


def _cited(toolbox: Toolbox, i: int, ev: Evidence) -> list[str]:
    """`path:line`, what is defined there and what encloses it, and a few lines."""
    lines = _lines(toolbox, ev.path)
    span = f"{ev.line}-{ev.end_line}" if ev.end_line else f"{ev.line}"
    where = f"{i}. `{display_path(ev.path)}:{span}`"
    scope = _scope(toolbox, ev, lines)
    if scope:
        where += f" in `{scope}`"
    words = [w for w in ev.terms if "." not in w and "/" not in w]  # never a path-like word
    if words:
        where += f" (matches {', '.join(words[:8])})"
    if not lines:
        return [where]
    rows = list(range(ev.line, ev.line + SNIPPET_LINES))
    if ev.end_line:  # the definition's first lines, then the line that matched
        rows = [ev.line, ev.line + 1, ev.end_line - 1, ev.end_line]
    elif ev.kind in ("line", ""):
        rows = list(range(ev.line - 1, ev.line + SNIPPET_LINES - 1))
    rows = sorted({n for n in rows if 1 <= n <= len(lines)})
    width = len(str(rows[-1])) if rows else 1
    body: list[str] = []
    for k, n in enumerate(rows):
        if k and n > rows[k - 1] + 1:
            body.append(" " * width + "  ⋮")
        body.append(f"{n:>{width}}  {lines[n - 1][:160]}")
    return [where, "```\n" + "\n".join(body) + "\n```"]


def _lines(toolbox: Toolbox, rel: str) -> list[str] | None:
    try:
        return toolbox.lines(rel)
    except (OSError, ToolRefused):
        return None


def _scope(toolbox: Toolbox, ev: Evidence, lines: list[str] | None) -> str:
    """The definitions around the cited line, as the parser labels them (`class A › def b(x)`)."""
    if not lines or not 1 <= ev.line <= len(lines):
        return ""
    try:
        part, inner = toolbox.snapshot.locate(ev.path)
        language = refine_language(language_of(ev.path), lines)
        syntax = syntax_for((str(part.root), inner), language, lines)
        text = lines[ev.line - 1]
        col = text.find(ev.name) if ev.name else -1
        spans = [(col, col + len(ev.name))] if col >= 0 else []
        info = syntax.info(ev.line, spans)
    except (OSError, ToolRefused, ValueError):
        return ""
    return " › ".join(info.scope)


def _call_sites(toolbox: Toolbox, ev: Evidence) -> list[str]:
    """Where the top definition is called, each call with the definition it sits in."""
    sites, more = find_call_sites(toolbox, ev.name, ev.kind, ev.path, ev.line)

    def scope_of(path: str, line: int) -> str:
        return _scope(toolbox, Evidence(path, 0.0, line, ""), _lines(toolbox, path))

    verb = "called" if ev.kind in ("function", "method", "template") else "used"
    return write_call_sites(ev.name, sites, more, scope_of, verb)
