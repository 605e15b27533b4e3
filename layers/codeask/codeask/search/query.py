"""One code search over a snapshot: ripgrep for speed, then hits grouped by file and ranked."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from codeask.errors import ToolRefused
from codeask.pathdisplay import display_path
from codeask.pathglob import GlobError, parse_glob, select
from codeask.search import elsewhere
from codeask.search.elsewhere import Lookup, Tally
from codeask.search.filekinds import file_kind, language_of
from codeask.search.patterns import Pattern, is_identifier, word_fit
from codeask.search.ranking import file_score, guess_kind, hit_score
from codeask.search.ripgrep import MAX_FILESIZE, RawMatch, RgRun, run_rg
from codeask.search.unmasked import Hider, show_all
from codeask.snapshot import Snapshot, is_binary

RAW_MATCH_CAP = 2500  # matches read from rg before it is stopped; ranking happens within these
LARGE_PROBED = 8  # files over the size limit searched for their first match, per search
# The extra runs (outside a filter, near misses, a definition's uses) only add notes: each is
# given a short deadline of its own, so a search costs at most its timeout plus this.
EXTRA_TIMEOUT_S = 2.0


@dataclass(eq=False)
class Hit:
    line: int
    text: str
    score: float
    kind: str  # definition, call, reference, import, string, comment (a guess until parsed)
    spans: list[tuple[int, int]] = field(default_factory=list)
    fit: str = "whole"  # whole word, part of an identifier, or inside a longer word

    @property
    def in_longer_word(self) -> bool:
        """The plain word matched only inside a longer one ('redis' in 'redistribute')."""
        return self.fit in ("edge", "inside")

    alternative: int | None = None  # which top-level alternative of the pattern matched
    exact_case: bool = True

    @property
    def definition(self) -> bool:
        return self.kind == "definition"


@dataclass(eq=False)
class FileHits:
    path: str
    kind: str
    language: str | None = None
    hits: list[Hit] = field(default_factory=list)  # best first
    score: float = 0.0
    parsed: bool = False  # hit kinds come from the parser, not from a guess

    def rescore(self) -> None:
        for h in self.hits:
            h.score = hit_score(self.kind, h.line, h.text, h.kind, h.fit, exact_case=h.exact_case)
        self.hits.sort(key=lambda h: (-h.score, h.line))
        self.score = file_score([h.score for h in self.hits])


@dataclass
class LargeFile:
    """A file over the search's size limit, in the search's scope: rg skips it, so it is searched
    apart for its first match only (its lines are never shown in a result)."""

    path: str
    size: int
    first_line: int | None = None  # its first match, if it has one
    searched: bool = False  # False when time ran out before it was searched


@dataclass
class SearchOutcome:
    pattern: str
    glob: str | None
    path: str | None
    files: list[FileHits]  # best first
    total_matches: int
    stopped_early: bool
    timed_out: bool
    elapsed_ms: float
    path_is_file: bool = False
    ignore_case: bool = True
    case_differs: int = 0  # matches found ignoring case that differ from the pattern's case
    alternatives: list[str] = field(default_factory=list)
    alternative_counts: list[int] = field(default_factory=list)
    plain_words: list[str] = field(default_factory=list)
    large: list[LargeFile] = field(default_factory=list)
    size_limit: int = MAX_FILESIZE
    outside: Tally | None = None  # matches the path or glob left out
    near_misses: list[Tally] = field(default_factory=list)  # for no match: each word alone
    lookup: Lookup | None = field(default=None, repr=False, compare=False)  # rg over everything

    @property
    def total_files(self) -> int:
        return len(self.files)

    def describe(self) -> str:
        """How the search reads in a warning or a log line (odd characters shown escaped)."""
        s = f"`{display_path(self.pattern)}`"
        if self.glob:
            s += f" in {display_path(self.glob)}"
        if self.path:
            where = display_path(self.path)
            s += f" in {where}" if self.path_is_file else f" under {where}/"
        return s

    def large_note(self) -> str:
        """What the result must say about files too large to search in full, or ''."""
        limit = _size(self.size_limit)
        matched = [f for f in self.large if f.first_line is not None]
        unsearched = [f for f in self.large if not f.searched]
        notes = []
        if matched:
            names = ", ".join(
                f"{display_path(f.path)} ({_size(f.size)}, first match at line {f.first_line})"
                for f in matched
            )
            notes.append(
                f"Also matching, in files over the {limit} search limit (their hits are not "
                f"listed): {names}. read_file shows such a file a window at a time: start there."
            )
        if unsearched:
            names = ", ".join(f"{display_path(f.path)} ({_size(f.size)})" for f in unsearched)
            notes.append(f"Not searched, over the {limit} search limit and out of time: {names}.")
        return "\n".join(notes)


def _size(n: int) -> str:
    return f"{n / 1024 / 1024:.0f} MB" if n >= 1024 * 1024 else f"{n / 1024:.0f} KB"


def rg_globs(glob: str | None, path: str | None) -> list[str]:
    """The model's glob as rg takes it. A glob with a directory in it is rooted at the repository
    by rg; under `path` the model usually means it from there, so both readings are passed
    (`!tests/**` under `src` then also skips `src/tests/**`)."""
    if not glob:
        return []
    out = [glob]
    negative = glob.startswith("!")
    body = glob[1:] if negative else glob
    if path and "/" in body.rstrip("/") and not body.startswith(("/", "**/")):
        out.append(("!" if negative else "") + f"{path.rstrip('/')}/{body}")
    return out


def search(
    snapshot: Snapshot,
    rg: str,
    pattern: str,
    *,
    glob: str | None = None,
    path: str | None = None,
    timeout_s: float = 10.0,
    max_matches: int = RAW_MATCH_CAP,
    stable: bool = False,
    max_filesize: int = MAX_FILESIZE,
    hide: Hider | None = None,
) -> SearchOutcome:
    """Run one search and rank it. Raises ToolRefused for a refused path, a bad glob or an
    invalid regex. Every rg run of the search shares one deadline, `timeout_s` from now.

    `stable` sorts rg's output by path (single-threaded, ~1.5x slower) so that when the raw cap
    is hit, the same matches fill it every time: evaluations must be repeatable.

    `hide` drops, from every rg run of the search, the matches a redaction hides (unmasked.py):
    nothing after (hits, counts, notes, lookups) can tell a secret matched."""
    deadline = time.monotonic() + timeout_s
    target = "."
    rel_path = None
    if path:
        rel_path, _ = snapshot.resolve(path)
        target = rel_path or "."
        if rel_path and rel_path not in snapshot.file_set and rel_path not in snapshot.dir_set:
            raise ToolRefused(
                f"no file or directory '{display_path(rel_path)}' at {snapshot.short_sha}; "
                "list_files shows what exists"
            )
    pat = Pattern.smart(pattern)
    model_globs = rg_globs(glob, rel_path)
    for g in model_globs:
        try:
            parse_glob(g)
        except GlobError as e:
            raise ToolRefused(f"bad glob {display_path(glob or '')!r}: {e}") from None
    globs = model_globs + snapshot.deny.rg_globs()
    extra = ["--sort", "path"] if stable else None
    hide = hide or show_all

    def rg_run(text: str, ignore_case: bool, cap: int, one_file: str | None = None) -> RgRun:
        left = max(0.05, deadline - time.monotonic())
        if one_file is not None:  # a file over the size limit, named by itself
            return run_rg(rg, snapshot.root, text, target=one_file, ignore_case=ignore_case,
                          max_matches=cap, timeout_s=left, max_filesize=1 << 62,
                          keep=hide(text, ignore_case))  # fmt: skip
        return run_rg(rg, snapshot.root, text, target=target, globs=globs, extra_args=extra,
                      ignore_case=ignore_case, max_matches=cap, timeout_s=left,
                      max_filesize=max_filesize, keep=hide(text, ignore_case))  # fmt: skip

    extra_timeout = min(timeout_s, EXTRA_TIMEOUT_S)

    def rg_all(text: str, ignore_case: bool, cap: int) -> tuple[list[RawMatch], bool]:
        r = run_rg(rg, snapshot.root, text, globs=snapshot.deny.rg_globs(), extra_args=extra,
                   ignore_case=ignore_case, max_matches=cap, timeout_s=extra_timeout,
                   max_filesize=max_filesize, keep=hide(text, ignore_case))  # fmt: skip
        kept = [m for m in r.matches if not snapshot.deny.is_denied(m.path)]
        return kept, r.stopped_early or r.timed_out

    # A capital letter makes rg's smart case sensitive, and code spells one name in several cases
    # (`ClusterNode` and the `clusterNode` struct, `maxTasksPerChild` and `maxtasksperchild`).
    # Measured on three repos, rg costs the same either way, so one case-insensitive run finds
    # both and the exact-case hits are ranked first; only a flood also gets a case-sensitive run
    # so that no exact hit is lost to the cap.
    both_cases = not pat.ignore_case and not pat.has_inline_case_flag and pat.compiled is not None
    pool = ThreadPoolExecutor(max_workers=4)
    try:
        # A filtered search also counts what its filter left out, in parallel with it: the one
        # call site outside `malloc/` is the one a "how does X reach Y" answer misses.
        unfiltered = (
            pool.submit(rg_all, pattern, pat.ignore_case or both_cases, elsewhere.OUTSIDE_CAP)
            if glob or path
            else None
        )
        run = rg_run(pattern, pat.ignore_case or both_cases, max_matches)
        matches = run.matches
        if run.stopped_early and len(pat.alternatives) > 1:
            # A common alternative filled the cap before rg reached the rare one: each gets its own run.
            share = max(200, max_matches // len(pat.alternatives))
            runs = list(
                pool.map(
                    lambda a: rg_run(a, pat.ignore_case or both_cases, share), pat.alternatives
                )
            )
            matches = _merge([m for r in runs for m in r.matches])
            run.timed_out = run.timed_out or any(r.timed_out for r in runs)
            run.stopped_early = any(r.stopped_early for r in runs)
        if both_cases and run.stopped_early:
            exact_run = rg_run(pattern, False, max_matches)
            matches = _merge(exact_run.matches + matches)
        exact = pat.compiled
        differ = (
            0 if not both_cases else sum(1 for m in matches if exact and not exact.search(m.text))
        )
        outcome = SearchOutcome(
            pattern=pattern,
            glob=glob,
            path=rel_path,
            files=[],
            total_matches=0,
            stopped_early=run.stopped_early,
            timed_out=run.timed_out,
            elapsed_ms=run.elapsed_ms,
            path_is_file=bool(rel_path) and rel_path in snapshot.file_set,
            ignore_case=pat.ignore_case,
            case_differs=differ,
            alternatives=pat.alternatives if len(pat.alternatives) > 1 else [],
            plain_words=pat.plain_words,
            size_limit=max_filesize,
        )
        outcome.large = _large_files(snapshot, rel_path, model_globs, max_filesize)
        _probe(outcome.large,
               lambda big: rg_run(pattern, pat.ignore_case or both_cases, 1, big.path),
               deadline)  # fmt: skip
        outcome.files = _rank(snapshot, pat, matches, both_cases)
        outcome.lookup = _with_large_files(rg_all, snapshot, max_filesize)

        def word_run(word: str, cap: int) -> tuple[list[RawMatch], bool]:
            r = run_rg(rg, snapshot.root, word, target=target, globs=globs, ignore_case=True,
                       max_matches=cap, timeout_s=extra_timeout,
                       max_filesize=max_filesize, keep=hide(word, True))  # fmt: skip
            return r.matches, r.stopped_early or r.timed_out

        _note_elsewhere(outcome, matches, unfiltered, word_run if not run.timed_out else None, pool)
        outcome.total_matches = sum(len(f.hits) for f in outcome.files)
        if outcome.alternatives:
            counts = [0] * len(outcome.alternatives)
            for f in outcome.files:
                for h in f.hits:
                    if h.alternative is not None:
                        counts[h.alternative] += 1
            outcome.alternative_counts = counts
        return outcome
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _with_large_files(lookup: Lookup, snapshot: Snapshot, limit: int) -> Lookup:
    """The lookup, its result capped when the snapshot has text files over the size limit: what
    such a file names is not known, so no "no other line" may be said."""

    def run(text: str, ignore_case: bool, cap: int) -> tuple[list[RawMatch], bool]:
        found, capped = lookup(text, ignore_case, cap)
        return found, capped or bool(_large_files(snapshot, None, [], limit))

    return run


def _large_files(
    snapshot: Snapshot, rel_path: str | None, globs: list[str], limit: int
) -> list[LargeFile]:
    """The text files in the search's scope that rg skips for their size."""
    big = snapshot.large_files(limit)
    if not big:
        return []
    prefix = f"{rel_path}/" if rel_path else ""
    paths = [p for p in big if not rel_path or p == rel_path or p.startswith(prefix)]
    if globs:
        paths = select(globs, paths)
    return [LargeFile(p, big[p]) for p in sorted(paths) if not is_binary(snapshot.root / p)]


def _probe(large: list[LargeFile], run: Callable[[LargeFile], RgRun], deadline: float) -> None:
    """Each large file searched apart, for its first match only: a line to start reading at
    (its text is never shown, as the file is never masked whole)."""
    for big in large[:LARGE_PROBED]:
        if time.monotonic() >= deadline:
            return
        probe = run(big)
        big.searched = not probe.timed_out
        big.first_line = probe.matches[0].line if probe.matches else None


def _note_elsewhere(
    outcome: SearchOutcome,
    matches: list[RawMatch],
    unfiltered: Future[tuple[list[RawMatch], bool]] | None,
    word_run: Callable[[str, int], tuple[list[RawMatch], bool]] | None,
    pool: ThreadPoolExecutor,
) -> None:
    """What the matches leave out: those outside the filter, and for none, each word alone."""
    if unfiltered is not None:
        everywhere, capped = unfiltered.result()
        outcome.outside = elsewhere.outside(everywhere, capped, {(m.path, m.line) for m in matches})
    if not matches and word_run is not None:
        outcome.near_misses = elsewhere.near_misses(word_run, outcome.pattern, pool)


def _merge(matches: list[RawMatch]) -> list[RawMatch]:
    seen: set[tuple[str, int]] = set()
    out = []
    for m in matches:
        if (m.path, m.line) not in seen:
            seen.add((m.path, m.line))
            out.append(m)
    return out


def _rank(
    snapshot: Snapshot, pat: Pattern, matches: list[RawMatch], both_cases: bool
) -> list[FileHits]:
    by_file: dict[str, FileHits | None] = {}
    insensitive = Pattern(pat.text, True)
    for m in matches:
        exact = not both_cases or pat.spans(m.text, 1) != []
        if m.path not in by_file:
            # rg already skipped denied globs; this is the second lock on the same door.
            by_file[m.path] = (
                None
                if snapshot.deny.is_denied(m.path)
                else FileHits(m.path, file_kind(m.path), language_of(m.path))
            )
        fh = by_file[m.path]
        if fh is None:
            continue
        spans = (pat if exact else insensitive).spans(m.text)
        alternative = pat.alternative_of(m.text)
        word = pat.plain_word_of(alternative)
        fit = _best_fit(m.text, spans, word) if word else "whole"
        kind = guess_kind(m.text, fh.language, spans)
        if kind == "definition" and fh.kind == "docs":
            kind = "reference"  # `PGPASSWORD=…` in a README is an example, not a definition
        fh.hits.append(
            Hit(m.line, m.text, 0.0, kind, spans, fit, alternative, exact)
        )  # fmt: skip
    kept = [fh for fh in by_file.values() if fh is not None]
    for fh in kept:
        fh.rescore()
    return sorted(kept, key=lambda f: (-f.score, f.path))


def _best_fit(text: str, spans: list[tuple[int, int]], word: str) -> str:
    identifier = is_identifier(word)
    mine = [(a, b) for a, b in spans if text[a:b].lower() == word.lower()] or spans
    fits = {word_fit(text, a, b, identifier=identifier) for a, b in mine}
    for fit in ("whole", "part", "edge", "inside"):
        if fit in fits:
            return fit
    return "whole"
