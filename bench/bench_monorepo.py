"""Benchmark: a 100k-file monorepo. Its first snapshot against `git archive | tar -x`, a one-file
commit's snapshot (built from the last snapshot, or from a spare) and copying a prepared one onto
local disk against writing it whole, the disk two snapshots take, and `search_code` against bare
rg over it.

`python bench/bench_monorepo.py [--files N]` runs this case alone; `make bench` runs it with the
rest. The repository is built once under bench/out/ (bare, by `git fast-import`) and reused.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "layers" / "codeask"))
sys.path.insert(0, str(HERE))

from bench_local import GIT_ENV, git  # noqa: E402
from codeask.denylist import DenyList  # noqa: E402
from codeask.mirror import MirrorStore, RepoSpec  # noqa: E402
from codeask.mirror.diskuse import disk_usage  # noqa: E402
from codeask.mirror.materialise import remove_tree  # noqa: E402
from corpus import _module  # noqa: E402

FILES = 100_000
REPS = 3
CHANGED = "pkg5/mod3/m5301.py"


def make_monorepo(root: Path, files: int = FILES) -> Path:
    """A bare repository: `main` holds `files` modules (100 per directory), `next` is main plus
    a one-file commit. Deterministic, so a rebuild gives the same SHAs; built once."""
    marker = root / "codeask-bench-files"
    if marker.exists() and marker.read_text() == str(files):
        return root
    remove_tree(root)
    git("init", "-q", "--bare", "-b", "main", root)
    rng = random.Random(7)
    stream = [b"commit refs/heads/main\n", b"mark :1\n",
              b"committer bench <b@example.invalid> 1700000000 +0000\n", b"data 6\nmodule\n"]  # fmt: skip
    for i in range(files):
        path = f"pkg{i // 1000}/mod{(i // 100) % 10}/" + (
            f"test_{i}.py" if i % 10 == 0 else f"m{i}.py"
        )
        body = _module(rng, i).encode()
        stream.append(f"M 100644 inline {path}\ndata {len(body)}\n".encode() + body + b"\n")
    readme = b"# monorepo\nA synthetic tree for benchmarks.\n"
    stream.append(b"M 100644 inline README.md\ndata %d\n%s\n" % (len(readme), readme))
    body = b"VALUE = 'one file changed'\n"
    stream += [b"commit refs/heads/next\n", b"committer bench <b@example.invalid> 1700000060 +0000\n",
               b"data 4\nnext\n", b"from :1\n",
               f"M 100644 inline {CHANGED}\ndata {len(body)}\n".encode() + body + b"\n"]  # fmt: skip
    git("fast-import", "--quiet", cwd=root, stdin=b"".join(stream))
    git("repack", "-adq", cwd=root)  # as a fetched mirror would be: one pack, deltas
    marker.write_text(str(files))
    return root


def _ms(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def _archive(repo: Path, ref: str, dest: Path) -> None:
    dest.mkdir(parents=True)
    subprocess.run(f"git -C '{repo}' archive {ref} | tar -x -C '{dest}'", shell=True, check=True,
                   env=GIT_ENV)  # fmt: skip


def _copy(src: Path, dest: Path) -> None:
    subprocess.run(["cp", "-a", str(src), str(dest)], check=True)


def _row(name: str, a: list[float], b: list[float], aim: str | None = None, **extra: Any) -> dict[str, Any]:  # fmt: skip
    ratios = sorted(x / y for x, y in zip(a, b, strict=True))
    row = {"name": name, "ratio": round(statistics.median(ratios), 3),
           "range": f"{ratios[0]:.3f}-{ratios[-1]:.3f}", "a_ms": round(statistics.median(a), 1),
           "b_ms": round(statistics.median(b), 1), **extra}  # fmt: skip
    if aim:
        row["aim"] = aim
    return row


def run(
    out: Path,
    search: Callable[[Path], list[dict[str, Any]]] | None = None,
    files: int = FILES,
    reps: int = REPS,
) -> list[dict[str, Any]]:
    repo = make_monorepo(out / f"monorepo{files // 1000}k.git", files)
    work = out / f"monorepo{files // 1000}k-snapshots"  # runs of two sizes never share one
    remove_tree(work)
    main = RepoSpec.parse(str(repo), branch="main", name="mono")
    nxt = RepoSpec.parse(str(repo), branch="next", name="mono")
    first, archive, linked, spared, rewrite, prepared, copied = [], [], [], [], [], [], []
    one_disk: list[int] = []
    two_disk: list[int] = []
    naive: list[int] = []
    tree_files = 0
    for i in range(reps):
        # Each question runs in a store of its own, as a fresh worker would
        store = MirrorStore(work / "m", work / f"s{i}", DenyList())
        snap = None

        def sync_main(store: MirrorStore = store) -> None:
            nonlocal snap
            snap = store.sync(main).snapshot

        first.append(_ms(sync_main))
        archive.append(_ms(lambda i=i: _archive(repo, "main", work / f"archive-{i}")))
        remove_tree(work / f"archive-{i}")
        assert snap is not None
        tree_files = len(snap.files)
        one_disk.append(disk_usage(store.snapshot_root).bytes)
        # The next commit: from the last snapshot, then (built again) from a spare
        linked.append(_ms(lambda store=store: store.sync(nxt)))
        usage = disk_usage(store.snapshot_root)
        two_disk.append(usage.bytes)
        naive.append(usage.naive_bytes)
        again = store.sync(nxt).snapshot
        remove_tree(again.root)
        prepared.append(_ms(lambda store=store, snap=snap: store.prepare_next(main, snap)))
        spared.append(_ms(lambda store=store: store.sync(nxt)))
        fresh = MirrorStore(work / "m", work / f"rewrite-{i}", DenyList())
        rewrite.append(_ms(lambda fresh=fresh: fresh.sync(nxt)))
        # What a snapshot prepared elsewhere (the warmer's EFS) would cost to bring onto /tmp:
        # a copy of every file. Here from the same local disk, so a lower bound.
        copy = work / f"copy-{i}"
        src = fresh.sync(nxt).snapshot.root
        copied.append(_ms(lambda src=src, copy=copy: _copy(src, copy)))
        remove_tree(copy)
        remove_tree(work / f"rewrite-{i}")
        remove_tree(work / f"s{i}")
    label = f"monorepo ({tree_files:,} files)"
    rows = [
        _row(f"{label}: first snapshot vs git archive | tar -x", first, archive, "<= 2x"),
        _row(f"{label}: one-file commit's snapshot from the last snapshot vs writing it whole",
             linked, rewrite, "< 0.1"),  # fmt: skip
        _row(f"{label}: one-file commit's snapshot from a spare vs writing it whole",
             spared, rewrite, "< 0.1"),  # fmt: skip
        _row(f"{label}: making the spare (after an answer, off the question's path) vs writing whole",
             prepared, rewrite),  # fmt: skip
        _row(f"{label}: copying a prepared snapshot onto local disk (cp -a) vs writing it whole",
             copied, rewrite),  # fmt: skip
        {"name": f"{label}: disk for two snapshots (unique inodes) vs one",
         "ratio": round(statistics.median(t / o for t, o in zip(two_disk, one_disk, strict=True)), 4),
         "a_mb": round(statistics.median(two_disk) / 1e6, 1),
         "b_mb": round(statistics.median(one_disk) / 1e6, 1),
         "naive_mb": round(statistics.median(naive) / 1e6, 1), "aim": "< 1.05"},
    ]  # fmt: skip
    if search is not None:
        store = MirrorStore(work / "m", work / "search", DenyList())
        tree = store.sync(main).snapshot.root
        for row in search(tree):
            row["name"] = f"{label}: {row['name']}"
            rows.append(row)
    remove_tree(work)
    return rows


def main(argv: list[str]) -> int:
    files = int(argv[argv.index("--files") + 1]) if "--files" in argv else FILES
    out = HERE / "out"
    out.mkdir(exist_ok=True)
    from run import bench_search

    rows = run(out, lambda tree: bench_search(tree, repeats=3), files=files)
    print(json.dumps(rows, indent=2))
    (out / "monorepo.json").write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("GIT_CONFIG_NOSYSTEM", "1")
    raise SystemExit(main(sys.argv[1:]))
