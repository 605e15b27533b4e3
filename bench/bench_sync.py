"""Benchmark: a remote's mirror on loopback (git daemon): the first clone against `git clone
--depth 1`, writing a snapshot against `git archive | tar -x`, and an unchanged sync against
`git fetch` + `git merge --ff-only`."""

from __future__ import annotations

import functools
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "layers" / "codeask"))

from codeask.denylist import DenyList  # noqa: E402
from codeask.mirror import MirrorStore, RepoSpec  # noqa: E402

REPS = 7
COLD_REPS = 3
GIT_ENV = {
    **os.environ,
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "GIT_TERMINAL_PROMPT": "0",
}


def _git(*args: str | Path, cwd: Path | None = None) -> None:
    subprocess.run(
        ["git", *map(str, args)], cwd=cwd, env=GIT_ENV, check=True, capture_output=True, timeout=600
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start_daemon(base: Path, log: Path) -> tuple[subprocess.Popen[bytes], int]:
    for _ in range(5):
        port = _free_port()
        with log.open("ab") as out:
            proc = subprocess.Popen(
                [
                    "git",
                    "daemon",
                    "--reuseaddr",
                    f"--base-path={base}",
                    "--export-all",
                    "--listen=127.0.0.1",
                    f"--port={port}",
                    str(base),
                ],
                env=GIT_ENV,
                stdout=out,
                stderr=out,
            )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return proc, port
            except OSError:
                time.sleep(0.05)
        _stop(proc)
    raise RuntimeError(f"git daemon did not start; see {log}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


def _rmtree(path: Path) -> None:
    """Remove a tree that may hold read-only snapshot directories."""
    if not path.exists():
        return
    for dirpath, _dirs, _files in os.walk(path):
        os.chmod(dirpath, 0o700)
    shutil.rmtree(path)


def _ms(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return (time.perf_counter() - start) * 1000.0, value


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 2)


def _first_sync_in_new_process(mirrors: Path, snapshots: Path, url: str) -> float:
    """An unchanged sync in a fresh interpreter: snapshot on disk, but no in-process caches."""
    code = textwrap.dedent(
        f"""
        import sys, time
        sys.path.insert(0, {str(Path(__file__).resolve().parents[1] / "layers" / "codeask")!r})
        from codeask.denylist import DenyList
        from codeask.mirror import MirrorStore, RepoSpec
        store = MirrorStore({str(mirrors)!r}, {str(snapshots)!r}, DenyList())
        spec = RepoSpec.parse({url!r}, name="bench")
        t = time.perf_counter()
        r = store.sync(spec)
        assert not r.fetched, r
        print((time.perf_counter() - t) * 1000.0)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=600
    )
    return float(out.stdout.strip())


def run(tree: Path, workdir: Path) -> list[dict[str, Any]]:
    """Measure against `tree` (a git work tree of >= 10,000 files), using `workdir` for scratch."""
    tree = Path(tree).resolve()
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    for name in ("served", "mirrors", "snapshots", "clone", "cold", "first"):
        _rmtree(workdir / name)
    (workdir / "served").mkdir()
    _git("clone", "-q", "--bare", tree, workdir / "served" / "repo.git")

    daemon, port = _start_daemon(workdir / "served", workdir / "git-daemon.log")
    try:
        url = f"git://127.0.0.1:{port}/repo.git"
        spec = RepoSpec.parse(url, name="bench")
        clones = _first_clones(url, spec, workdir / "first")
        store = MirrorStore(workdir / "mirrors", workdir / "snapshots", DenyList())
        first = store.sync(spec)
        n_files = len(first.snapshot.files)

        cold: list[float] = []
        archived: list[float] = []
        mirror = store.mirror_dir(spec)
        for i in range(COLD_REPS):
            # A new snapshot root each time, as on a fresh Lambda sandbox's /tmp.
            other = MirrorStore(workdir / "mirrors", workdir / "cold" / str(i), DenyList())
            cold.append(_ms(functools.partial(other.snapshot_at, spec, first.sha))[0])
            dest = workdir / "cold" / f"archive-{i}"
            dest.mkdir(parents=True)
            archived.append(_ms(lambda d=dest: _archive(mirror, first.sha, d))[0])

        _git("clone", "-q", url, workdir / "clone")
        clone = workdir / "clone"

        def git_fetch_ff() -> None:
            _git("fetch", "-q", "origin", cwd=clone)
            _git("merge", "-q", "--ff-only", "@{upstream}", cwd=clone)

        # One untimed round each, so both sides start with warm OS caches.
        store.sync(spec)
        git_fetch_ff()
        a: list[float] = []
        b: list[float] = []
        heads: list[float] = []
        for _ in range(REPS):
            took, result = _ms(lambda: store.sync(spec))
            assert not result.fetched and result.stale is None, result
            a.append(took)
            heads.append(result.timings_ms["remote_head"])
            b.append(_ms(git_fetch_ff)[0])
        fresh = [
            _first_sync_in_new_process(workdir / "mirrors", workdir / "snapshots", url)
            for _ in range(3)
        ]
    finally:
        _stop(daemon)
        _rmtree(workdir / "cold")

    a_ms, b_ms = _median(a), _median(b)
    return clones + [
        {
            "name": "snapshot writing vs git archive | tar -x (same commit)",
            "ratio": round(_median(cold) / _median(archived), 2),
            "a_ms": _median(cold),
            "b_ms": _median(archived),
            "files": n_files,
            "reps": COLD_REPS,
            "aim": "<= 2x",
        },
        {
            "name": "sync_unchanged_vs_git_fetch_ff",
            "ratio": round(b_ms / a_ms, 2),
            "a_ms": a_ms,
            "b_ms": b_ms,
            "a_remote_head_ms": _median(heads),
            "files": n_files,
            "reps": REPS,
            "aim": ">= 5x",
        },
        {
            "name": "sync_unchanged_first_call_in_new_process",
            "ms": _median(fresh),
            "files": n_files,
            "aim": "info: warm snapshot on disk, cold in-process caches",
        },
    ]


def _archive(git_dir: Path, sha: str, dest: Path) -> None:
    archive = subprocess.Popen(["git", "--git-dir", str(git_dir), "archive", sha],
                               stdout=subprocess.PIPE, env=GIT_ENV)  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(dest)], stdin=archive.stdout, check=True)
    assert archive.stdout is not None
    archive.stdout.close()
    if archive.wait() != 0:
        raise RuntimeError("git archive failed")


def _first_clones(url: str, spec: RepoSpec, workdir: Path) -> list[dict[str, Any]]:
    """A first-ever sync (shallow fetch, then the snapshot) against `git clone --depth 1`, and
    its fetch alone against a bare one; interleaved, each into empty directories."""
    ours: list[float] = []
    fetch: list[float] = []
    full: list[float] = []
    bare: list[float] = []
    for i in range(COLD_REPS):
        base = workdir / str(i)
        store = MirrorStore(base / "mirrors", base / "snapshots", DenyList())
        took, result = _ms(lambda s=store: s.sync(spec))  # type: ignore[misc]
        ours.append(took)
        fetch.append(sum(result.timings_ms.get(k, 0.0) for k in ("open", "remote_head", "fetch")))
        full.append(_ms(lambda b=base: _git("clone", "-q", "--depth", "1", url, b / "clone"))[0])
        bare.append(_ms(lambda b=base: _git("clone", "-q", "--depth", "1", "--bare", url,
                                            b / "bare.git"))[0])  # fmt: skip
        _rmtree(base)
    return [
        {
            "name": "first sync (shallow fetch + snapshot) vs git clone --depth 1",
            "ratio": round(_median(ours) / _median(full), 2),
            "a_ms": _median(ours),
            "b_ms": _median(full),
            "reps": COLD_REPS,
            "aim": "<= 2x",
        },
        {
            "name": "first sync's fetch alone vs git clone --depth 1 --bare",
            "ratio": round(_median(fetch) / _median(bare), 2),
            "a_ms": _median(fetch),
            "b_ms": _median(bare),
            "reps": COLD_REPS,
            "aim": "<= 2x",
        },
    ]


def make_synthetic_repo(path: Path, n_files: int = 10_000) -> Path:
    """A work tree of `n_files` small source files in 100 packages, committed once."""
    path.mkdir(parents=True)
    per_dir = 100
    for i in range(n_files):
        pkg = path / "src" / f"pkg{i // per_dir:03d}"
        if i % per_dir == 0:
            pkg.mkdir(parents=True)
        (pkg / f"module_{i:05d}.py").write_text(
            f'"""Module {i}."""\n\n\ndef handler_{i}(event):\n'
            f"    total = 0\n    for item in event.get('items', []):\n"
            f"        total += item * {i % 97 + 1}\n    return total\n" * 3
        )
    (path / "README.md").write_text("Synthetic benchmark repository.\n")
    _git("init", "-q", "--initial-branch=main", path)
    _git("add", "-A", cwd=path)
    _git("commit", "-q", "-m", "synthetic tree", cwd=path)
    return path


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="codeask-bench-sync-") as tmp:
        tree = Path(argv[0]) if argv else make_synthetic_repo(Path(tmp) / "tree")
        rows = run(tree, Path(tmp) / "work")
        _rmtree(Path(tmp) / "work")
    print(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
