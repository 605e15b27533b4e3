"""Code search over a snapshot: ripgrep for speed, then ranking so the useful hits survive the caps."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from codeask.relevance import file_score, hit_score, is_definition, path_kind
from codeask.ripgrep import RgRun, run_rg
from codeask.snapshot import Snapshot

RAW_MATCH_CAP = 2500  # matches read from rg before it is stopped; ranking happens within these


@dataclass
class Hit:
    line: int
    text: str
    score: float
    definition: bool


@dataclass
class FileHits:
    path: str
    kind: str
    hits: list[Hit] = field(default_factory=list)  # best first
    score: float = 0.0


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

    @property
    def total_files(self) -> int:
        return len(self.files)

    def describe(self) -> str:
        """How the search reads in a warning or a log line."""
        s = f"`{self.pattern}`"
        if self.glob:
            s += f" in {self.glob}"
        if self.path:
            s += f" under {self.path}/"
        return s


def python_pattern(pattern: str) -> re.Pattern[str] | None:
    """The pattern as Python sees it, to find where on a line it matched (None if it will not compile)."""
    flags = 0 if any(c.isupper() for c in pattern) else re.IGNORECASE  # rg's --smart-case
    try:
        return re.compile(pattern, flags)
    except (re.error, RecursionError, OverflowError):
        return None


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
    globs = [glob] if glob else []
    run: RgRun = run_rg(
        rg,
        snapshot.root,
        pattern,
        target=target,
        globs=globs + snapshot.deny.rg_globs(),
        max_matches=max_matches,
        timeout_s=timeout_s,
        extra_args=["--sort", "path"] if stable else None,
    )
    compiled = python_pattern(pattern)
    by_file: dict[str, FileHits | None] = {}
    for m in run.matches:
        if m.path not in by_file:
            # rg already skipped denied globs; this is the second lock on the same door.
            by_file[m.path] = (
                None if snapshot.deny.is_denied(m.path) else FileHits(m.path, path_kind(m.path))
            )
        fh = by_file[m.path]
        if fh is None:
            continue
        span = None
        if compiled is not None:
            found = compiled.search(m.text)
            if found:
                span = found.span()
        definition = is_definition(m.text)
        fh.hits.append(
            Hit(m.line, m.text, hit_score(m.path, m.line, m.text, span, definition), definition)
        )
    kept = [fh for fh in by_file.values() if fh is not None]
    for fh in kept:
        fh.score = file_score([h.score for h in fh.hits])
        fh.hits.sort(key=lambda h: (-h.score, h.line))
    files = sorted(kept, key=lambda f: (-f.score, f.path))
    return SearchOutcome(
        pattern=pattern,
        glob=glob,
        path=rel_path,
        files=files,
        total_matches=sum(len(f.hits) for f in files),
        stopped_early=run.stopped_early,
        timed_out=run.timed_out,
        elapsed_ms=run.elapsed_ms,
    )
