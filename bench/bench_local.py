"""Benchmark: a local repository with a long history, read in place, against `git archive | tar -x`.

`python bench/bench_local.py [--workdir DIR] PATH...` measures repositories of your own (e.g. a
clone of a big project), writing snapshots under DIR (default bench/out: put it where
SNAPSHOT_ROOT would be); `make bench` measures a synthetic one it builds once under bench/out/.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "layers" / "codeask"))

from codeask.denylist import DenyList  # noqa: E402
from codeask.mirror import MirrorStore, RepoSpec  # noqa: E402
from codeask.mirror.materialise import remove_tree  # noqa: E402

GIT_ENV = {
    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    "HOME": str(HERE),
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "b@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "b@example.invalid",
}


def git(*args: str | Path, cwd: Path | None = None, stdin: bytes | None = None) -> str:
    done = subprocess.run(["git", *map(str, args)], cwd=cwd, env=GIT_ENV, input=stdin,
                          capture_output=True, check=True, timeout=1800)  # fmt: skip
    return done.stdout.decode().strip()


def make_history_repo(corpus: Path, root: Path, commits: int = 5000) -> Path:
    """A clone of the corpus with `commits` more commits on top, each changing two files; kept."""
    marker = root / ".git" / "codeask-bench-history"
    if marker.exists() and marker.read_text() == str(commits):
        return root
    if root.exists():
        shutil.rmtree(root)
    git("clone", "-q", corpus, root)
    files = git("ls-files", "pkg0", cwd=root).splitlines()[:400]
    rng = random.Random(11)
    stream = []
    for i in range(commits):
        msg = f"change {i}".encode()
        stream.append(b"commit refs/heads/main\n")
        stream.append(
            f"committer bench <b@example.invalid> {1_700_000_000 + i * 60} +0000\n".encode()
        )
        stream.append(b"data %d\n%s\n" % (len(msg), msg))
        if i == 0:
            stream.append(b"from refs/heads/main^0\n")
        for path in rng.sample(files, 2):
            body = f"# revision {i} of {path}\nVALUE = {rng.randint(0, 10**6)}\n".encode()
            stream.append(f"M 100644 inline {path}\n".encode())
            stream.append(b"data %d\n%s\n" % (len(body), body))
    git("fast-import", "--quiet", cwd=root, stdin=b"".join(stream))
    git("reset", "-q", "--hard", "main", cwd=root)
    marker.write_text(str(commits))
    return root


def _archive(repo: Path, sha: str, dest: Path) -> None:
    dest.mkdir(parents=True)
    subprocess.run(f"git -C '{repo}' archive {sha} | tar -x -C '{dest}'", shell=True, check=True,
                   env=GIT_ENV)  # fmt: skip


def _cli(repo: Path, snapshots: Path, mirrors: Path) -> float:
    """Wall ms of `codeask tool list_files` in a new process, as a user's first or next call."""
    env = {**GIT_ENV, "MIRROR_ROOT": str(mirrors), "SNAPSHOT_ROOT": str(snapshots)}
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "codeask.cli", "tool", "list_files", "--repo", str(repo),
                    '{"path": "."}'], env=env, check=True, capture_output=True, timeout=1800)  # fmt: skip
    return (time.perf_counter() - start) * 1000


def _sync_in_new_process(repo: Path, snapshots: Path, mirrors: Path) -> float:
    code = textwrap.dedent(
        f"""
        import sys, time
        sys.path.insert(0, {str(ROOT / "layers" / "codeask")!r})
        from codeask.denylist import DenyList
        from codeask.mirror import MirrorStore, RepoSpec
        store = MirrorStore({str(mirrors)!r}, {str(snapshots)!r}, DenyList())
        spec = RepoSpec.parse({str(repo)!r})
        t = time.perf_counter()
        store.sync(spec)
        print((time.perf_counter() - t) * 1000.0)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                         timeout=1800)  # fmt: skip
    return float(out.stdout.strip())


def run(repo: Path, workdir: Path, reps: int = 3, label: str | None = None) -> list[dict[str, Any]]:
    """First and second questions about `repo`, read in place, against git archive | tar -x."""
    repo = repo.resolve()
    name = label or repo.name
    workdir.mkdir(parents=True, exist_ok=True)
    sha = git("rev-parse", "HEAD", cwd=repo)
    commits = int(git("rev-list", "--count", "HEAD", cwd=repo))
    spec = RepoSpec.parse(str(repo))
    ours: list[float] = []
    theirs: list[float] = []
    files = 0
    for i in range(reps):
        for which in ("ours", "theirs"):
            dest = workdir / f"{which}-{i}"
            remove_tree(dest)
            start = time.perf_counter()
            if which == "ours":
                result = MirrorStore(workdir / "mirrors", dest, DenyList()).sync(spec)
                files = len(result.snapshot.files)
                ours.append((time.perf_counter() - start) * 1000)
            else:
                _archive(repo, sha, dest)
                theirs.append((time.perf_counter() - start) * 1000)
            remove_tree(dest)
    snapshots = workdir / "cli-snapshots"
    remove_tree(snapshots)
    cli_first = _cli(repo, snapshots, workdir / "mirrors")
    cli_second = _cli(repo, snapshots, workdir / "mirrors")
    second = statistics.median(
        _sync_in_new_process(repo, snapshots, workdir / "mirrors") for _ in range(reps)
    )
    remove_tree(snapshots)
    a, b = statistics.median(ours), statistics.median(theirs)
    return [
        {"name": f"local repo {name}: first question's sync vs git archive | tar -x",
         "ratio": round(a / b, 2), "a_ms": round(a, 1), "b_ms": round(b, 1), "files": files,
         "commits": commits, "aim": "<= 2x"},
        {"name": f"local repo {name}: second question's sync (new process)", "ms": round(second, 1),
         "aim": "< 1000 ms"},
        {"name": f"local repo {name}: codeask tool, first and second call (whole process)",
         "a_ms": round(cli_first, 1), "b_ms": round(cli_second, 1), "aim": "info: seconds, then sub-second"},
    ]  # fmt: skip


def main(argv: list[str]) -> int:
    rows = []
    where = HERE / "out"
    if argv[:1] == ["--workdir"]:
        where, argv = Path(argv[1]), argv[2:]
    where.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="codeask-bench-local-", dir=where) as tmp:
        for path in argv:
            rows += run(Path(path), Path(tmp) / Path(path).name)
    print(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
