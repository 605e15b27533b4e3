"""Answers without a model: the question becomes searches, the evidence is ranked, the best places are cited."""

from __future__ import annotations

import math
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from codeask.errors import ToolRefused
from codeask.pathdisplay import display_path
from codeask.search import SearchOutcome
from codeask.search.filekinds import KIND_WEIGHT, file_kind
from codeask.tools import Toolbox

MAX_PHRASES = 3
MAX_WORDS = 10
TOP_FILES = 5
RAW_MATCHES_PER_TERM = 3000
MIN_RELATIVE_SCORE = 0.12

_STOP = set(
    """a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing done down during each else ever
    every few find for from further get gets got had has have having he her here hers him his how
    i if in into is it its itself just know let like live lives located location look looks made
    make makes me might more most much must my need needs no nor not now of off on once only or
    other our ours out over own part place please same see seem she should show so some such
    tell than that the their theirs them then there these they thing things this those through
    to too under until up us use used uses using very via want was way we were what whats when
    where which while who whom why will with within would you your code codebase repo repository
    file files function functions method class implemented implement implementation work works
    working handle handles handled happen happens logic defined define definition called call
    calls decide decides whether somewhere exist exists already helper there's we're it's isn't
    doesn't don't""".split()
)
_IDENT_RE = re.compile(r"`([^`]+)`|\"([^\"]{3,})\"|'([^']{3,})'")
_WORD_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*[A-Za-z0-9_]|[A-Za-z]{3,}")
# Programmers name the same idea with different words; a question's word also finds its usual aliases.
_ALIASES = {
    "delet": ("remov", "rm_", "cleanup", "unlink", "prun", "purg"),
    "remov": ("delet", "rm_", "cleanup", "unlink"),
    "creat": ("make", "build", "new_", "init"),
    "check": ("verif", "validat", "ensur"),
    "validat": ("verif", "check"),
    "verif": ("validat", "check"),
    "config": ("setting", "option", "ini"),
    "setting": ("config", "option"),
    "retr": ("backoff", "attempt"),
    "temp": ("tmp",),
    "tmp": ("temp",),
    "folder": ("dir",),
    "director": ("dir",),
    "error": ("exception", "rais", "fail"),
    "messag": ("msg",),
    "authent": ("auth", "login", "credential"),
    "login": ("auth",),
    "permission": ("auth", "acl", "access"),
    "databas": ("db", "sql"),
    "connect": ("conn", "client", "session"),
    "stop": ("abort", "exit", "halt", "shutdown"),
    "start": ("init", "begin", "launch"),
    "cut": ("truncat", "trim"),
    "shorten": ("truncat", "trim"),
    "parameter": ("param", "arg"),
    "argument": ("arg", "param"),
    "environment": ("env",),
    "print": ("write", "report", "echo"),
    "slow": ("duration", "elapsed", "timing"),
    "debugg": ("pdb", "breakpoint"),
    "ignor": ("skip", "exclud"),
    "download": ("fetch",),
    "cach": ("memo",),
}
_SUFFIXES = ("ations", "ation", "ings", "ing", "ions", "ion", "ers", "ies", "es", "ed", "er", "s")


def stem(word: str) -> str:
    """A light stem, kept as a regex prefix: 'signatures' -> 'signatur', 'skipped' -> 'skip'."""
    w = word.lower()
    if len(w) > 4 and w.endswith(("ied", "ies")):
        return w[:-3] + "y"  # retried -> retry, copies -> copy
    for suf in _SUFFIXES:
        if suf == "s" and w[-2:-1] in ("s", "i", "u"):
            continue  # redis, status, class: not plurals
        if w.endswith(suf) and len(w) - len(suf) >= (3 if suf == "s" else 4):
            w = w[: -len(suf)]
            break
    if w.endswith("e") and len(w) > 4:
        w = w[:-1]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] in "bdgmnprt":
        w = w[:-1]  # skipp -> skip, runn -> run
    return w


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


def question_terms(question: str) -> list[Term]:
    """Searches for a question: quoted text and identifiers as written, then stems of the content words."""
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
        is_ident = "_" in w or "." in w or (any(c.isupper() for c in w[1:]) and not w.isupper())
        if is_ident:
            add(phrases, MAX_PHRASES, Term(re.escape(w), w, True, (w.lower(),)))
            continue
        st = stem(w)
        alts = _ALIASES.get(st, ())
        pattern = "|".join(re.escape(a) for a in (st, *alts))
        add(words, MAX_WORDS, Term(pattern, st, False, (st, *alts)))
    return phrases + words


@dataclass
class Evidence:
    path: str
    score: float
    line: int
    text: str
    terms: list[str] = field(default_factory=list)


def rank_evidence(
    toolbox: Toolbox, terms: list[Term], outcomes: list[SearchOutcome]
) -> list[Evidence]:
    n_files = max(1, len(toolbox.snapshot.files))
    scores: dict[str, float] = {}
    best_line: dict[str, tuple[float, int, str]] = {}
    matched_terms: dict[str, list[str]] = {}
    all_words = [w for t in terms for w in t.words]
    for term, outcome in zip(terms, outcomes, strict=True):
        df = max(1, outcome.total_files)
        idf = math.log(1 + n_files / df)
        weight = idf * (1.6 if term.exact else 1.0)
        for fh in outcome.files:
            top = fh.hits[0]
            contribution = (
                weight * (0.5 + min(top.score, 2.5)) * (1 + 0.3 * math.log1p(len(fh.hits)))
            )
            scores[fh.path] = scores.get(fh.path, 0.0) + contribution
            matched_terms.setdefault(fh.path, []).append(term.label)
            for h in fh.hits[:20]:
                low = h.text.lower()
                line_score = h.score * (1 + sum(1 for w in all_words if w in low))
                if line_score > best_line.get(fh.path, (-1.0, 0, ""))[0]:
                    best_line[fh.path] = (line_score, h.line, h.text)
    # A file whose path names the terms is often the answer even when its text says little.
    for path in list(scores):
        low = path.lower()
        hits = sum(1 for t in terms for w in t.words if w in low.rsplit("/", 1)[-1])
        if hits:
            scores[path] *= 1 + 0.35 * hits
    out = []
    for path, s in scores.items():
        s *= KIND_WEIGHT[file_kind(path)]
        _, line, text = best_line[path]
        out.append(Evidence(path, s, line, text, matched_terms[path]))
    out.sort(key=lambda e: (-e.score, e.path))
    if out:
        # Weak evidence (a licence header, a passing mention) is noise beside a strong hit.
        floor = out[0].score * MIN_RELATIVE_SCORE
        out = [e for e in out if e.score >= floor]
    return out


@dataclass
class SearchOnlyResult:
    text: str
    evidence: list[Evidence]
    searches: list[str]


def answer(
    question: str, toolbox: Toolbox, *, reason: str = "no model key is configured"
) -> SearchOnlyResult:
    """Rank the evidence for `question` and write it up, clearly labelled as not a model's answer."""
    terms = question_terms(question)
    sha = toolbox.snapshot.short_sha
    label = f"**Search-only answer** ({reason}; nothing below was written by a model) at {sha}."
    if not terms:
        return SearchOnlyResult(
            label + "\nI could not find anything to search for in the question; name a function, "
            "file, message or concept.",
            [],
            [],
        )

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
    evidence = rank_evidence(toolbox, [t for t, _ in pairs], [o for _, o in pairs])[:TOP_FILES]
    if not evidence:
        large = [note for _, o in pairs if (note := o.large_note())]
        return SearchOnlyResult(
            label
            + "\nNo matches for "
            + ", ".join(o.describe() for _, o in pairs)
            + "."
            + "".join("\n" + note for note in large),
            [],
            [o.describe() for _, o in pairs],
        )
    rows = [label, "The most likely places, best first:"]
    for i, ev in enumerate(evidence, 1):
        snippet = _snippet(toolbox, ev)
        where = f"{display_path(ev.path)}:{ev.line}"
        rows.append(f"{i}. `{where}` (matches {', '.join(dict.fromkeys(ev.terms))})")
        rows.append("```\n" + snippet + "\n```")
    rows.append("Read these to confirm; a model-backed answer would follow the trail further.")
    safe = toolbox.gate.apply(
        "\n".join(rows)
    )  # snippets are repository text: same gate as any tool
    return SearchOnlyResult(safe.text, evidence, [o.describe() for _, o in pairs])


def _snippet(toolbox: Toolbox, ev: Evidence) -> str:
    try:
        lines = toolbox.lines(ev.path)
    except (OSError, ToolRefused):
        lines = None
    if not lines:
        return ev.text.strip()[:200]
    lo, hi = max(1, ev.line - 1), min(len(lines), ev.line + 2)
    width = len(str(hi))
    return "\n".join(f"{n:>{width}}  {lines[n - 1][:160]}" for n in range(lo, hi + 1))
