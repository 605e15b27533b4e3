"""Benchmark: a snapshot's definitions index against writing the snapshot: a first build, a commit's rebuild, the wait bound, queries.

Every row carries the load average when it was measured: this machine is shared, so the times
are compared as ratios against a baseline measured in the same run, never across runs."""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import pygit2

from codeask.denylist import DenyList
from codeask.mirror.materialise import View, materialise, remove_tree, tree_blobs
from codeask.search import definitions, index_build, languages
from codeask.search.definition_index import WAIT_S, DefinitionIndex
from codeask.search.filekinds import language_of, refine_language
from codeask.search_only import question_groups
from codeask.snapshot import RepoRef, Snapshot

REPEATS = 3
CHANGED = 100  # files a later commit changes (1 % of the corpus)
QUESTIONS = [
    "where do we retry a failed webhook signature check",
    "how is the billing invoice exported",
    "which handler sends the customer email",
    "where is the redis cache session loaded",
    "what limits the rate of the queue worker",
]


def _snapshot(repo: pygit2.Repository, sha: str, where: Path) -> tuple[Snapshot, float, float]:
    """The commit written as a snapshot; wall and CPU seconds of the writing."""
    t, c = time.perf_counter(), time.process_time()
    listing = materialise(repo, sha, where, View(DenyList()))
    write_s, write_cpu = time.perf_counter() - t, time.process_time() - c
    snap = Snapshot(where, sha, RepoRef("corpus", str(where)))
    snap.seed_files(listing)
    return snap, write_s, write_cpu


def _build(
    repo: pygit2.Repository, snap: Snapshot, target: Path
) -> tuple[index_build.BuildStats, float, float]:
    """The index built as a first question builds it, blob ids read from the commit's trees
    included; wall and CPU seconds (its parsing workers' included)."""
    t, c = time.perf_counter(), time.process_time() + _children_cpu()
    snap.blobs = tree_blobs(repo, snap.sha, View(DenyList()))
    _, stats = index_build.build(snap, target)
    return stats, time.perf_counter() - t, time.process_time() + _children_cpu() - c


def _load() -> str:
    """The 1-minute load average and the CPUs, as `load 7.5 on 2 CPUs`."""
    return f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"


def _pct(values: list[float], q: float) -> float:
    """The q-th quantile (0..1) of `values`, the nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _parse_only(snap: Snapshot) -> tuple[float, float]:
    """Reading and parsing every file with tree-sitter and nothing else, the floor of any build:
    wall and CPU seconds in this one process."""
    t, c = time.perf_counter(), time.process_time()
    for rel in snap.files:
        data = (snap.root / rel).read_bytes()
        lines = data.decode("utf-8", "replace").split("\n")
        language = refine_language(language_of(rel), lines)
        if language and languages.has_grammar(language):
            definitions._parser(language).parse(data)
    return time.perf_counter() - t, time.process_time() - c


def _commit_changes(tree: Path, work: Path) -> tuple[pygit2.Repository, str, str]:
    """A clone sharing the corpus's objects, with one more commit that edits CHANGED files."""
    subprocess.run(["git", "clone", "-q", "--shared", str(tree), str(work)], check=True)
    repo = pygit2.Repository(str(work))
    first = str(repo.head.target)
    files = sorted(p for p in work.rglob("m*.py") if ".git" not in p.parts)[:CHANGED]
    for p in files:
        p.write_text(p.read_text() + "\n\ndef rotate_expiring_token(token):\n    return token\n")
    env = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@example.invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@example.invalid",
           "PATH": "/usr/bin:/bin:/usr/local/bin", "HOME": str(work)}  # fmt: skip
    subprocess.run(["git", "commit", "-q", "-a", "-m", "edit"], cwd=work, check=True, env=env)
    repo = pygit2.Repository(str(work))
    return repo, first, str(repo.head.target)


def run(tree: Path) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory(dir=tree.parent) as tmp:
        work = Path(tmp)
        repo, first, second = _commit_changes(tree, work / "clone")
        writes, builds, floors, cpu_ratios, cpu_s = [], [], [], [], []
        write_cpus, floor_cpus = [], []
        snaps = work / "snaps"
        load_build = _load()
        for i in range(REPEATS):  # interleaved, so that load on the machine hits both alike
            snap, write_s, write_cpu = _snapshot(repo, first, snaps / f"{first}-{i}")
            target = snaps / f"{first}-{i}.defs"
            stats, build_s, build_cpu = _build(repo, snap, target)
            builds.append(build_s)
            writes.append(write_s)
            cpu_ratios.append(build_cpu / max(write_cpu, 1e-6))
            cpu_s.append(build_cpu)
            write_cpus.append(write_cpu)
            floor_s, floor_cpu = _parse_only(snap)
            floors.append(floor_s)
            floor_cpus.append(floor_cpu)
            if i < REPEATS - 1:
                remove_tree(snap.root)
                target.unlink()
        size = target.stat().st_size
        snap_bytes = sum(p.stat().st_size for p in snap.root.rglob("*") if p.is_file())
        b, w, f = statistics.median(builds), statistics.median(writes), statistics.median(floors)
        wc, fc = statistics.median(write_cpus), statistics.median(floor_cpus)
        rows.append({"name": "definitions index, first build vs writing the snapshot (10k files)",
                     "ratio": round(b / w, 2), "a_s": round(b, 2), "b_s": round(w, 2),
                     "aim": "< 2x", "cpu_ratio": round(statistics.median(cpu_ratios), 2),
                     "cpu_s": round(statistics.median(cpu_s), 2),
                     "runs": ", ".join(f"{x / y:.2f}x ({x:.1f}/{y:.1f} s, {c:.1f} s CPU)"
                                       for x, y, c in zip(builds, writes, cpu_s, strict=True)),
                     "note": f"{stats.workers} parsing process(es); parsing alone {f:.2f} s "
                     f"({f / w:.2f}x the write, one process), {fc:.2f} s CPU ({fc / wc:.2f}x the "
                     f"write's {wc:.2f} s CPU); "
                     f"{stats.definitions} definitions, engine {stats.engine}",
                     "load": load_build})  # fmt: skip
        rows.append({"name": "definitions index size vs the snapshot's bytes",
                     "ratio": round(size / snap_bytes, 2), "a_mb": round(size / 1e6, 1),
                     "b_mb": round(snap_bytes / 1e6, 1)})  # fmt: skip

        # A commit that changes 1 % of the files: rows of the other 99 % are copied by blob id.
        snap2, write2, write2_cpu = _snapshot(repo, second, snaps / f"{second}-0")
        stats2, again, again_cpu = _build(repo, snap2, snaps / f"{second}-0.defs")
        rows.append({"name": f"definitions index of the next commit ({CHANGED} files changed) vs "
                     "writing its snapshot", "ratio": round(again / write2, 2),
                     "cpu_ratio": round(again_cpu / max(write2_cpu, 1e-6), 2),
                     "a_s": round(again, 2), "b_s": round(write2, 2),
                     "note": f"{stats2.parsed} parsed, {stats2.reused} reused; the word tables "
                     f"{stats2.tables_s:.2f} s of it", "load": _load()})  # fmt: skip

        # Where the first question's wait bound falls: files this build reads per second of WAIT_S.
        per_s = stats.files / max(stats.parse_s, 1e-6)
        mb_s = snap_bytes / 1e6 / max(b, 1e-6)
        rows.append({"name": f"first question's wait for an index: bound {WAIT_S:.0f} s",
                     "a_files": int(per_s * WAIT_S), "a_mb": round(mb_s * WAIT_S, 1),
                     "note": "repositories bigger than this (of files like these) answer their "
                     "first questions from ripgrep's hits while the build goes on a slice per "
                     "question"})  # fmt: skip

        # Each question asked first of a freshly opened index, then twice more of the same one
        # (the words' counts are remembered then): the first asks are what a new question costs.
        first, again_ms = [], []
        load_q = _load()
        for q in QUESTIONS:
            fresh = DefinitionIndex.open(snaps / f"{second}-0.defs")
            assert fresh is not None
            # the groups a search-only answer sends: the question's content words and synonyms
            groups = [(words, weight) for words, weight, _ in question_groups(q)]
            for n in range(3):
                t = time.perf_counter()
                fresh.search(groups)
                (again_ms if n else first).append((time.perf_counter() - t) * 1000)
        lat = first + again_ms
        rows.append({"name": "definitions index query, first asks: p50 / p95 of 5",
                     "a_ms": round(statistics.median(first), 1), "b_ms": round(_pct(first, 0.95), 1),
                     "aim": "< 50 ms", "load": load_q})  # fmt: skip
        rows.append({"name": "definitions index query, all 15: p50 / p95",
                     "a_ms": round(statistics.median(lat), 1), "b_ms": round(_pct(lat, 0.95), 1),
                     "aim": "< 50 ms", "load": _load()})  # fmt: skip
    return rows


if __name__ == "__main__":
    import json
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from corpus import make_corpus

    out = Path(__file__).resolve().parent / "out"
    for row in run(make_corpus(out / "corpus10k")):
        print(json.dumps(row))
