"""Where a repository's commits come from: one interface over a repository read in place and a mirror."""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

import pygit2
from pygit2.enums import RepositoryOpenFlag

from codeask.mirror.result import StaleNote, UncommittedNote
from codeask.mirror.spec import RepoSpec, redact_url

# libgit2 repository handles must not be shared between threads; warm invocations reuse them.
_local = threading.local()
# Bumped when this process rebuilds a repository, so other threads' handles on it are dropped too.
_generation: dict[Path, int] = {}
_generation_guard = threading.Lock()


@dataclass(frozen=True)
class Head:
    """The commit a question reads, and what the asker should be told about it."""

    sha: str
    branch: str  # the resolved branch, TAG_PREFIX + a tag, or a label such as "detached HEAD"
    fetched: bool = False
    stale: StaleNote | None = None
    uncommitted: UncommittedNote | None = None


class Source(Protocol):
    """One repository's commits: where its branch is now, a commit by SHA, the objects to write."""

    spec: RepoSpec
    key: str  # names this repository's snapshots (and mirror); the same in every process

    def head(self, timings: dict[str, float], *, strict: bool) -> Head:
        """The commit the spec's branch, tag or default is at now.

        Raises BadInput for a ref that does not exist, RepoUnavailable when there is nothing to
        read; with `strict`, RepoUnavailable rather than an older commit marked stale.
        """
        ...

    def repair(self, reason: str) -> Head:
        """Objects a snapshot needed could not be read: rebuild what is a cache, and say where
        the branch is now; RepoUnavailable for what must not be repaired or cannot be."""
        ...

    def commit(self, sha: str, *, fetch: bool = False) -> str:
        """The full SHA of a commit held here, given in full or abbreviated; BadInput if absent.

        With `fetch`, a full SHA not held yet is fetched first where the source can.
        """
        ...

    def objects(self) -> pygit2.Repository:
        """This thread's handle on the object database that snapshots are written from."""
        ...

    def default_branch(self) -> str | None:
        """The branch a commit read by SHA is shown under when the spec names none."""
        ...

    def last_synced_at(self) -> datetime | None:
        """When this source last agreed with the repository it stands for."""
        ...


def source_key(spec: RepoSpec) -> str:
    """A directory name for `spec`; the URL hash keeps same-named repositories apart."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", spec.name).strip(".-")[:40] or "repo"
    digest = hashlib.sha256(redact_url(spec.url).encode()).hexdigest()[:10]
    return f"{safe}-{digest}"


def open_repo(path: Path) -> pygit2.Repository:
    """This thread's handle on the repository at `path`; raises pygit2.GitError if it is not one.

    A handle is kept only while `path` is the same directory: one that another process rebuilt,
    or that was deleted and made again, is opened afresh (a stale handle reads deleted packs and
    writes into directories that no longer exist). That costs one stat per call.
    """
    repos: dict[Path, tuple[tuple[int, int, int], pygit2.Repository]] | None = getattr(
        _local, "repos", None
    )
    if repos is None:
        repos = _local.repos = {}
    try:
        st = os.stat(path)
    except OSError as exc:
        repos.pop(path, None)
        raise pygit2.GitError(f"{path}: {exc.strerror}") from None
    identity = (st.st_dev, st.st_ino, _generation.get(path, 0))
    held = repos.pop(path, None)
    if held is not None:
        if held[0] == identity:
            repos[path] = held
            return held[1]
        # libgit2 shares open packs between handles by path: a rebuilt mirror's pack of the same
        # name would be read from the old, deleted file while the old handle holds it.
        held[1].free()
    repo = pygit2.Repository(str(path), flags=RepositoryOpenFlag.NO_SEARCH)
    repos[path] = (identity, repo)
    return repo


def forget_repo(path: Path) -> None:
    """Make every thread open `path` afresh, e.g. before this process rebuilds the directory."""
    with _generation_guard:
        _generation[path] = _generation.get(path, 0) + 1
    held = getattr(_local, "repos", {}).pop(path, None)
    if held is not None:
        held[1].free()


def find_commit(repo: pygit2.Repository, sha: str) -> str | None:
    """The full SHA of the commit `sha` (full or abbreviated) names in `repo`, if it holds one."""
    try:
        obj = repo.get(sha)
    except (ValueError, pygit2.GitError):  # an ambiguous short SHA
        return None
    if obj is None:
        return None
    try:
        return str(obj.peel(pygit2.Commit).id)
    except (pygit2.GitError, ValueError):
        return None


def elapsed_ms(since: float) -> float:
    """Milliseconds since the time.perf_counter() reading `since`, for the timings of a sync."""
    return round((time.perf_counter() - since) * 1000.0, 3)
