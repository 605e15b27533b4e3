"""One code search over a snapshot: ripgrep for speed, then hits grouped by file and ranked."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from codeask.search import elsewhere
from codeask.search.elsewhere import Lookup, Tally
from codeask.search.filekinds import file_kind, language_of
from codeask.search.patterns import Pattern, is_identifier, word_fit
from codeask.search.ranking import file_score, guess_kind, hit_score
from codeask.search.ripgrep import RawMatch, RgRun, run_rg
from codeask.snapshot import Snapshot

RAW_MATCH_CAP = 2500  # matches read from rg before it is stopped; ranking happens within these
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
    outside: Tally | None = None  # matches the path or glob left out
    near_misses: list[Tally] = field(default_factory=list)  # for no match: each word alone
    lookup: Lookup | None = field(default=None, repr=False, compare=False)  # rg over everything

    @property
    def total_files(self) -> int:
        return len(self.files)

    def describe(self) -> str:
        """How the search reads in a warning or a log line."""
        s = f"`{self.pattern}`"
        if self.glob:
            s += f" in {self.glob}"
        if self.path:
            s += f" in {self.path}" if self.path_is_file else f" under {self.path}/"
        return s


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
) -> SearchOutcome:
    """Run one search and rank it. Raises ToolRefused for a refused path or an invalid regex.

    `stable` sorts rg's output by path (single-threaded, ~1.5x slower) so that when the raw cap
    is hit, the same matches fill it every time: evaluations must be repeatable."""
    target = "."
    rel_path = None
    if path:
        rel_path, _ = snapshot.resolve(path)
        target = rel_path or "."
    pat = Pattern.smart(pattern)
    globs = rg_globs(glob, rel_path) + snapshot.deny.rg_globs()
    extra = ["--sort", "path"] if stable else None

    def rg_run(text: str, ignore_case: bool, cap: int) -> RgRun:
        return run_rg(rg, snapshot.root, text, target=target, globs=globs, extra_args=extra,
                      ignore_case=ignore_case, max_matches=cap, timeout_s=timeout_s)  # fmt: skip

    extra_timeout = min(timeout_s, EXTRA_TIMEOUT_S)

    def rg_all(text: str, ignore_case: bool, cap: int) -> tuple[list[RawMatch], bool]:
        r = run_rg(rg, snapshot.root, text, globs=snapshot.deny.rg_globs(), extra_args=extra,
                   ignore_case=ignore_case, max_matches=cap, timeout_s=extra_timeout)  # fmt: skip
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
        )
        outcome.files = _rank(snapshot, pat, matches, both_cases)
        outcome.lookup = rg_all
        if unfiltered is not None:
            everywhere, capped = unfiltered.result()
            outcome.outside = elsewhere.outside(
                everywhere, capped, {(m.path, m.line) for m in matches}
            )
        if not matches and not run.timed_out:

            def word_run(word: str, cap: int) -> tuple[list[RawMatch], bool]:
                r = run_rg(rg, snapshot.root, word, target=target, globs=globs, ignore_case=True,
                           max_matches=cap, timeout_s=extra_timeout)  # fmt: skip
                return r.matches, r.stopped_early or r.timed_out

            outcome.near_misses = elsewhere.near_misses(word_run, pattern, pool)
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
