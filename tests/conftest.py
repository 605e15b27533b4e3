"""Shared fixtures: throwaway git repositories, served on 127.0.0.1, and the `codeask` command."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from codeask.redact import mask_file, scan
from codeask.redact.assignments import judge_name

# Isolated from the developer's and the CI machine's git configuration, hooks and signing.
GIT_ENV = {
    **os.environ,
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.invalid",
    "GIT_COMMITTER_NAME": "Test Author",
    "GIT_COMMITTER_EMAIL": "author@example.invalid",
    "GIT_TERMINAL_PROMPT": "0",
}


def examples(n: int) -> int:
    """Hypothesis examples for a property: all `n`, or a few under `make mutate`, where every
    mutant runs the property again (scripts/mutate.py sets CODEASK_MUTATE)."""
    return max(10, n // 20) if os.environ.get("CODEASK_MUTATE") else n


@pytest.fixture(autouse=True)
def _names_judged_afresh() -> None:
    """Redaction caches its verdicts on key names; each test judges them with the code as it is
    (under `make mutate`, a mutant's, not verdicts cached by the run that forked it)."""
    judge_name.cache_clear()


def run_git(*args: str | os.PathLike[str], cwd: Path | None = None) -> str:
    done = subprocess.run(
        ["git", *map(str, args)],
        cwd=cwd,
        env=GIT_ENV,
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.stdout.strip()


class GitWorkTree:
    """A work tree whose commits tests make with plain git."""

    def __init__(self, path: Path, branch: str = "main") -> None:
        self.path = path
        path.mkdir(parents=True)
        run_git("init", "-q", f"--initial-branch={branch}", path)

    def git(self, *args: str) -> str:
        return run_git(*args, cwd=self.path)

    def commit(
        self,
        files: Mapping[str, str | bytes] | None = None,
        *,
        delete: tuple[str, ...] = (),
        symlinks: dict[str, str] | None = None,
        message: str = "change",
    ) -> str:
        """Write, delete and link the given paths, commit everything, return the new SHA."""
        for rel, content in (files or {}).items():
            target = self.path / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content)
        for rel, dest in (symlinks or {}).items():
            link = self.path / rel
            link.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(dest, link)
        for rel in delete:
            self.git("rm", "-q", "-r", "--", rel)
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.head()

    def rewrite(self, files: Mapping[str, str | bytes], message: str = "rewritten") -> str:
        """Replace the current branch with a new one-commit history, as before a force-push."""
        branch = self.git("symbolic-ref", "--short", "HEAD")
        self.git("checkout", "-q", "--orphan", "codeask-rewrite")
        self.git("rm", "-q", "-r", "-f", "--ignore-unmatch", ".")
        self.git("clean", "-q", "-f", "-d", "-x")
        sha = self.commit(files, message=message)
        self.git("branch", "-q", "-M", branch)
        return sha

    def head(self) -> str:
        return self.git("rev-parse", "HEAD")


@pytest.fixture
def git_repo(tmp_path: Path) -> Callable[..., GitWorkTree]:
    """Factory: `git_repo("name", branch="main")` makes an empty work tree under tmp_path."""

    def make(name: str = "work", branch: str = "main") -> GitWorkTree:
        return GitWorkTree(tmp_path / name, branch)

    return make


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class GitDaemon:
    """`git daemon` on 127.0.0.1 serving bare repositories under `base`."""

    def __init__(self, base: Path, log: Path) -> None:
        self.base = base
        self.log = log
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 30.0) -> None:
        # The free port can be taken between probing and binding, so a failed start retries.
        for _ in range(5):
            self.port = free_port()
            with self.log.open("ab") as log:
                self.proc = subprocess.Popen(
                    [
                        "git",
                        "daemon",
                        "--reuseaddr",
                        f"--base-path={self.base}",
                        "--export-all",
                        "--listen=127.0.0.1",
                        f"--port={self.port}",
                        str(self.base),
                    ],
                    env=GIT_ENV,
                    stdout=log,
                    stderr=log,
                )
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline and self.proc.poll() is None:
                with contextlib.suppress(OSError):
                    socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                    return
                time.sleep(0.05)
            self.stop()
        raise RuntimeError(f"git daemon did not start; see {self.log}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
        self.proc = None

    def url(self, name: str) -> str:
        return f"git://127.0.0.1:{self.port}/{name}"

    def publish(self, work: GitWorkTree, name: str) -> str:
        """Serve (or update, force-pushing every branch) a bare copy of `work`; returns its URL."""
        bare = self.base / name
        if not bare.exists():
            run_git("clone", "-q", "--bare", work.path, bare)
        else:
            run_git("push", "-q", "--force", "--all", bare, cwd=work.path)
        return self.url(name)


@pytest.fixture
def git_daemon(tmp_path: Path) -> Iterator[GitDaemon]:
    base = tmp_path / "served"
    base.mkdir()
    daemon = GitDaemon(base, tmp_path / "git-daemon.log")
    daemon.start()
    try:
        yield daemon
    finally:
        daemon.stop()


def cli_env(tmp: Path) -> dict[str, str]:
    """An environment for the CLI: its own home, mirrors and snapshots; no model key, no AWS."""
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "SYSTEMROOT")}
    return {
        **keep,
        "HOME": str(tmp / "home"),
        "MIRROR_ROOT": str(tmp / "mirrors"),
        "SNAPSHOT_ROOT": str(tmp / "snapshots"),
    }


def run_codeask(
    *args: str, env: Mapping[str, str], stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`codeask ARGS…` as a user runs it, in a fresh interpreter."""
    return subprocess.run(
        [sys.executable, "-m", "codeask.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=dict(env),
        timeout=120,
    )


def python313() -> str | None:
    """A working python3.13 (Lambda's runtime version): on PATH, or pyenv's 3.13.0."""
    candidates = [shutil.which("python3.13")]
    if shutil.which("pyenv"):
        prefix = subprocess.run(["pyenv", "prefix", "3.13.0"], capture_output=True, text=True)
        if prefix.returncode == 0:
            candidates.append(prefix.stdout.strip() + "/bin/python3.13")
    for exe in candidates:
        if exe and subprocess.run([exe, "-V"], capture_output=True).returncode == 0:
            return exe
    return None


def tree_state(root: Path) -> dict[str, tuple[int, int, int]]:
    """Every path under root (a .git directory included) with its mtime, size and mode."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            out[os.path.relpath(path, root)] = (st.st_mtime_ns, st.st_size, st.st_mode)
    return out


def record_calls(monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> list[Any]:
    """`owner.name` replaced by itself plus a record of each call's first argument, for tests
    that count how often a function runs (each word judged once, no slice stemmed)."""
    real = getattr(owner, name)
    calls: list[Any] = []

    def recorded(first: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(first)
        return real(first, *args, **kwargs)

    monkeypatch.setattr(owner, name, recorded)
    return calls


def write(root: Path, rel: str, text: str | bytes) -> Path:
    """Write one file of a test tree, its folders made as needed."""
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text)
    return p


def write_tree(root: Path, files: Mapping[str, str]) -> Path:
    """Write every file of `files` (path -> text) under root; returns root."""
    for rel, text in files.items():
        write(root, rel, text)
    return root


# The loopback AWS/Slack/model stack for integration tests lives with the other fakes.
pytest_plugins = ("fakes.stack",)


def shown_by_tools(path: str, text: str) -> list[str]:
    """What a tool shows of a file: masked as a whole by its path, then through the gate (the
    line count kept)."""
    lines = text.split("\n")
    out, _ = mask_file(lines, path)
    gated = scan("\n".join(out))[0].split("\n")
    assert len(gated) == len(lines)
    return gated
