"""The line inside a long definition or file that answers a question: line windows scored by the question's rare words.

A search-only answer cites a place. When that place is a long C function, a struct initializer
or a values file, its first line is rarely what was asked: the answer is the check, the default
or the message somewhere inside it. Here each line of the place is scored by the question's words
its window holds, each word by its rarity in the index and by how few lines of this place say it
(a word on every line singles none out), a word and its synonyms counting once. In code the window
is the line with its neighbours at half weight (a comment names what the line below it does, and
gives way to it). A quoted phrase of the question decides the line. In YAML the unit is a key: its
line, its comment block, the names of the keys it sits under, and, at half weight, what its
top-level section says, so "the broker's heap options" is `heapOpts` under `broker:` and "the
Prometheus exporter's resources" a key of the section whose comments say Prometheus exporter.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from codeask.search.heuristics import looks_like_comment
from codeask.search.vocabulary import split_identifier, stem

MAX_LINES = 4000  # a place longer than this is read this far
NEIGHBOUR_WEIGHT = 0.5  # in code, a word on the line above or below counts this much
SECTION_WEIGHT = 0.5  # in YAML, a word of the key's top-level section (not of the key) this much
MIN_WORDS = 2  # distinct question words a window needs, unless it holds a phrase
DOC_LINES = 12  # a key's comment lines above it, read this far
SWITCH_MARGIN = 1.1  # a config file's other key must say this much more than the cited one
SNAP_LINES = 4  # a comment's subject: the first code line this close below it
# "How many", "how much": the question asks for a count; the word itself is phrasing, and in prose
# comments ("when there are many services") it would point anywhere. Its synonyms still count.
QUANTITY_WORDS = frozenset({"many", "much"})

_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
# Data read as keys under keys. A chart's templated YAML is not: its directives (`{{- if }}`,
# `{{ include }}`) are lines worth citing, and are read as code.
YAML_LANGUAGES = ("yaml",)
_YAML_KEY = re.compile(r"^( *)(?:- +)?([A-Za-z_][\w.-]*)\s*:(?:\s|$)")


@dataclass(frozen=True)
class Question:
    """What lines are scored against: each stem's worth and the question word it stands for (a
    word and its synonyms are one concept, counted once per window), and the quoted phrases."""

    worth: dict[str, float]
    concept: dict[str, str]
    phrases: tuple[re.Pattern[str], ...] = ()


def question_for(
    groups: Iterable[tuple[tuple[str, ...], float, str]],
    df: Callable[[str], int],
    rows: int,
    phrases: Iterable[re.Pattern[str]] = (),
) -> Question:
    """A question's words as (stems, weight, label) groups, each stem worth its weight times its
    rarity (`df`: how many of `rows` definitions say it)."""
    worth: dict[str, float] = {}
    concept: dict[str, str] = {}
    for words, weight, label in groups:
        for w in words:
            if w == label and w in QUANTITY_WORDS:
                continue
            got = weight * math.log(1 + max(1, rows) / (1 + df(w)))
            if got > worth.get(w, 0.0):
                worth[w], concept[w] = got, label
    return Question(worth, concept, tuple(phrases))


@dataclass(frozen=True)
class Pick:
    """The line chosen (1-based), its score, and the question's words its window holds."""

    line: int
    score: float
    words: tuple[str, ...]


@dataclass(frozen=True)
class Scored:
    """The lines of a place worth citing, each with (holds a quoted phrase, score, words); a
    phrase outranks any score."""

    lines: dict[int, tuple[bool, float, tuple[str, ...]]] = field(default_factory=dict)

    def best(self) -> int | None:
        if not self.lines:
            return None
        return max(self.lines, key=lambda n: (self.lines[n][:2], -n))

    def at(self, lines: Sequence[str], line: int, language: str | None) -> tuple[bool, float]:
        """The score of `line`, or of the best comment line right above it (its doc)."""
        got = [self.lines[line][:2]] if line in self.lines else []
        n = line - 1
        while n >= 1 and line - n <= DOC_LINES and looks_like_comment(lines[n - 1], language):
            if n in self.lines:
                got.append(self.lines[n][:2])
            n -= 1
        return max(got, default=(False, 0.0))


def words_of(text: str) -> set[str]:
    """The stems of a line's words, identifiers split into theirs (`tcache_count` -> tcache, count)."""
    out: set[str] = set()
    for ident in _TOKEN.findall(text):
        got = _ident_words.get(ident)
        if got is None:
            got = _ident_words[ident] = _stems_of(ident)
        out.update(got)
    return out


# An identifier's stems, remembered: a file says the same names on line after line (speed only).
_IDENTS_KEPT = 100_000
_ident_words: dict[str, tuple[str, ...]] = {}


def _stems_of(ident: str) -> tuple[str, ...]:
    if len(_ident_words) >= _IDENTS_KEPT:
        _ident_words.clear()
    return tuple(stem(part) for part in split_identifier(ident) if len(part) > 1)


def yaml_key(text: str) -> str:
    """The key a YAML line sets, or ""."""
    m = _YAML_KEY.match(text)
    return m.group(2) if m is not None else ""


def yaml_parents(lines: Sequence[str], first: int, last: int) -> dict[int, tuple[str, ...]]:
    """For each key line of a YAML span (1-based, inclusive), the keys it sits under, read from
    indentation (starting at `first`; keys above it are not known and not needed)."""
    out: dict[int, tuple[str, ...]] = {}
    stack: list[tuple[int, str]] = []
    for n in range(first, last + 1):
        m = _YAML_KEY.match(lines[n - 1])
        if m is None:
            continue
        indent = len(m.group(1))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        out[n] = tuple(k for _, k in stack)
        stack.append((indent, m.group(2)))
    return out


def score_lines(
    lines: Sequence[str], first: int, last: int, q: Question, language: str | None = None
) -> Scored:
    """The lines of `lines[first-1 : last]` (1-based, inclusive) worth citing, scored by the
    question's words in their window (see the module's doc). A window needs two of the words, or
    a quoted phrase."""
    first = max(1, first)
    last = min(len(lines), last, first + MAX_LINES - 1)
    if last < first or not q.worth:
        return Scored()
    span = range(first, last + 1)
    found = {n: ws for n in span if (ws := words_of(lines[n - 1]).intersection(q.worth))}
    phrased = {n for n in span if any(p.search(lines[n - 1]) for p in q.phrases)}
    local = _line_rarity(found, q.worth, len(span))
    if language in YAML_LANGUAGES:
        windows = _key_windows(lines, first, last, found, phrased, q, local)
    else:
        windows = _code_windows(found, phrased, local)
    out: dict[int, tuple[bool, float, tuple[str, ...]]] = {}
    for n, (weighted, phrase) in windows.items():
        got: dict[str, tuple[float, str]] = {}
        for w, v in weighted.items():
            c = q.concept[w]
            if (v, w) > got.get(c, (0.0, "")):  # a tie goes to one word, whatever the order
                got[c] = (v, w)
        if len(got) >= MIN_WORDS or phrase:
            words = tuple(sorted(w for _, w in got.values()))
            out[n] = (phrase, math.fsum(v for v, _ in got.values()), words)
    return Scored(out)


def _code_windows(
    found: dict[int, set[str]], phrased: set[int], local: dict[str, float]
) -> dict[int, tuple[dict[str, float], bool]]:
    """Each line with its words' worth in full and its neighbours' at half."""
    out: dict[int, tuple[dict[str, float], bool]] = {}
    for n in sorted(set(found) | phrased):
        weighted = {w: local[w] for w in found.get(n, ())}
        for m in (n - 1, n + 1):
            for w in found.get(m, ()):
                weighted.setdefault(w, NEIGHBOUR_WEIGHT * local[w])
        out[n] = (weighted, n in phrased)
    return out


def _key_windows(
    lines: Sequence[str],
    first: int,
    last: int,
    found: dict[int, set[str]],
    phrased: set[int],
    q: Question,
    local: dict[str, float],
) -> dict[int, tuple[dict[str, float], bool]]:
    """Each key line with the words of its line, its comment block and its parents' names in
    full, and, at SECTION_WEIGHT, the words its top-level section says and few other sections do."""
    parents = yaml_parents(lines, first, last)
    top_of: dict[int, int] = {}  # key line -> the line of its top-level section's key
    top = 0
    for n in sorted(parents):
        if not parents[n] or not top:
            top = n
        top_of[n] = top
    tops = sorted(set(top_of.values()))
    section: dict[int, set[str]] = {t: set() for t in tops}
    for n, ws in found.items():
        t = _last_at_or_below(tops, n)
        if t is not None:
            section[t] |= ws
    sdf: dict[str, int] = {}
    for ws in section.values():
        for w in ws:
            sdf[w] = sdf.get(w, 0) + 1
    norm = math.log(1 + len(tops)) or 1.0
    rare = {w: q.worth[w] * math.log(1 + len(tops) / k) / norm for w, k in sdf.items()}
    out: dict[int, tuple[dict[str, float], bool]] = {}
    for n, keys in parents.items():
        own: set[str] = set(found.get(n, ()))
        phrase = n in phrased
        m = n - 1
        while m >= first and n - m <= DOC_LINES and looks_like_comment(lines[m - 1], "yaml"):
            own |= found.get(m, set())
            phrase = phrase or m in phrased
            m -= 1
        for k in keys:
            own |= words_of(k).intersection(q.worth)
        if not own and not phrase:
            continue
        weighted = {w: local.get(w, q.worth[w]) for w in own}
        for w in section.get(top_of[n], ()):
            weighted.setdefault(w, SECTION_WEIGHT * rare[w])
        out[n] = (weighted, phrase)
    return out


def _last_at_or_below(starts: list[int], n: int) -> int | None:
    """The last of the sorted `starts` at or above line `n`."""
    lo, hi = 0, len(starts)
    while lo < hi:
        mid = (lo + hi) // 2
        if starts[mid] <= n:
            lo = mid + 1
        else:
            hi = mid
    return starts[lo - 1] if lo else None


def _line_rarity(
    found: dict[int, set[str]], worth: dict[str, float], size: int
) -> dict[str, float]:
    """Each word's worth times its rarity among the span's lines (1 on one line, less on many):
    a word on most lines of a place says little about which line answers."""
    df: dict[str, int] = {}
    for ws in found.values():
        for w in ws:
            df[w] = df.get(w, 0) + 1
    norm = math.log(1 + size)
    return {w: worth[w] * math.log(1 + size / n) / norm for w, n in df.items()}


def pick_line(
    lines: Sequence[str], first: int, last: int, q: Question, language: str | None = None
) -> Pick | None:
    """The line of a place that best answers (see score_lines): a line holding a quoted phrase
    wins outright; a comment line gives way to the code line it describes. None when no window
    holds two of the words or a phrase."""
    scored = score_lines(lines, first, last, q, language)
    n = scored.best()
    if n is None:
        return None
    _, score, words = scored.lines[n]
    return Pick(subject(lines, n, min(len(lines), last), language), score, words)


def better_key(
    lines: Sequence[str], cited: int, q: Question, language: str | None = "yaml"
) -> int | None:
    """In a values file whose cited key may be one of several of that name (`replicaCount` under
    `controller:` and under `broker:`), the key whose window says clearly more of the question
    than the cited key does; None when the cited key is as good."""
    scored = score_lines(lines, 1, len(lines), q, language)
    n = scored.best()
    if n is None or n == cited:
        return None
    phrase, score, _ = scored.lines[n]
    here_phrase, here = scored.at(lines, cited, language)
    if (phrase, score) <= (here_phrase, here * SWITCH_MARGIN):
        return None
    return subject(lines, n, len(lines), language)


def subject(lines: Sequence[str], n: int, last: int, language: str | None) -> int:
    """A comment line's subject: the first code line below it, when close; else the line itself."""
    if not looks_like_comment(lines[n - 1], language):
        return n
    for m in range(n + 1, min(last, n + SNAP_LINES) + 1):
        text = lines[m - 1]
        code = text.strip() and not text.strip().startswith("*/")
        if code and not looks_like_comment(text, language):
            return m
    return n
