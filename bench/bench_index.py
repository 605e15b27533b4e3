"""Benchmark: building a snapshot's definitions index against writing the snapshot itself, and query latency."""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import pygit2

from codeask.denylist import DenyList
from codeask.mirror.materialise import materialise, remove_tree
from codeask.search.definition_index import DefinitionIndex, fts5_available
from codeask.search.vocabulary import synonyms, tokens
from codeask.snapshot import RepoRef, Snapshot

QUESTIONS = [
    "where do we retry a failed webhook signature check",
    "how is the billing invoice exported",
    "which handler sends the customer email",
    "where is the redis cache session loaded",
    "what limits the rate of the queue worker",
]


def run(tree: Path) -> list[dict]:
    repo = pygit2.Repository(str(tree / ".git"))
    sha = str(repo.head.target)
    rows = []
    with tempfile.TemporaryDirectory(dir=tree.parent) as work:
        snap_dir = Path(work) / f"{sha}-bench"
        t = time.perf_counter()
        materialise(repo, sha, snap_dir, DenyList())
        write_s = time.perf_counter() - t
        snap = Snapshot(snap_dir, sha, RepoRef("corpus", str(tree)))
        target = Path(work) / f"{sha}-bench.defs"
        t = time.perf_counter()
        index = DefinitionIndex.build(snap, target)
        build_s = time.perf_counter() - t
        size = target.stat().st_size
        snap_bytes = sum(p.stat().st_size for p in snap_dir.rglob("*") if p.is_file())
        lat = []
        for q in QUESTIONS * 3:
            groups = [((w,), 1.0) for w in tokens(q)]
            groups += [(synonyms(w), 0.5) for w in tokens(q) if synonyms(w)]
            t = time.perf_counter()
            index.search(groups)
            lat.append((time.perf_counter() - t) * 1000)
        remove_tree(snap_dir)
    rows.append({"name": "definitions index build vs writing the snapshot (10k files)",
                 "ratio": round(build_s / write_s, 2), "a_s": round(build_s, 2),
                 "b_s": round(write_s, 2), "aim": "< 2x",
                 "note": f"{index.rows} definitions, engine {index.engine}, "
                         f"FTS5 here: {fts5_available()}"})  # fmt: skip
    rows.append({"name": "definitions index size vs the snapshot's bytes",
                 "ratio": round(size / snap_bytes, 2), "a_mb": round(size / 1e6, 1),
                 "b_mb": round(snap_bytes / 1e6, 1)})  # fmt: skip
    rows.append({"name": "definitions index query, p50 / max of 15", "a_ms": round(statistics.median(lat), 1),
                 "b_ms": round(max(lat), 1), "aim": "< 50 ms"})  # fmt: skip
    return rows
