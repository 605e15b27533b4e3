"""The bare shallow repository of one mirror: opening it, creating or rebuilding it, fetching into it."""

from __future__ import annotations

import contextlib
import errno
import os
import time
import uuid
from pathlib import Path

import pygit2

from codeask.errors import RepoUnavailable, first_line
from codeask.mirror.lock import locked
from codeask.mirror.materialise import TEMP_IDLE_S, remove_tree
from codeask.mirror.source import open_repo

_TRACKING = "refs/remotes/origin/"
# Lock files libgit2 leaves when killed mid-write; while we hold the mirror lock they are stale.
_GIT_LOCKS = ("packed-refs.lock", "shallow.lock", "FETCH_HEAD.lock", "config.lock")


def open_or_create(mdir: Path, lock_timeout_s: float) -> pygit2.Repository:
    """The mirror at `mdir`, made empty if missing and rebuilt if it cannot be opened."""
    try:
        return open_repo(mdir)
    except pygit2.GitError as exc:
        if not os.path.lexists(mdir):
            _create(mdir)
            return open_repo(mdir)
        broken = exc
    # Mirrors are caches: one that cannot be opened is rebuilt, under the lock so that two
    # processes never rebuild it at once or throw away each other's fresh copy.
    with locked(mdir, lock_timeout_s) as held:
        if not held:
            raise RepoUnavailable(
                f"the mirror of {mdir.name} cannot be opened ({first_line(broken)}) "
                "and another sync held its lock"
            )
        with contextlib.suppress(pygit2.GitError):
            return open_repo(mdir)
        trash = mdir.with_name(f".trash-{mdir.name}-{uuid.uuid4().hex[:8]}")
        with contextlib.suppress(FileNotFoundError):
            os.rename(mdir, trash)
            remove_tree(trash)
        _create(mdir)
    return open_repo(mdir)


def _create(mdir: Path) -> None:
    """Make an empty bare mirror beside `mdir` and rename it into place in one step."""
    mdir.parent.mkdir(parents=True, exist_ok=True)
    for old in mdir.parent.glob(f".tmp-{mdir.name}-*"):
        # Left by a process killed while creating; nobody takes an hour to init a repo.
        with contextlib.suppress(OSError):
            if time.time() - old.stat().st_mtime > TEMP_IDLE_S:
                remove_tree(old)
    tmp = mdir.with_name(f".tmp-{mdir.name}-{uuid.uuid4().hex[:8]}")
    pygit2.init_repository(str(tmp), bare=True)
    try:
        os.rename(tmp, mdir)
    except OSError as exc:
        # Another process created it first; theirs is as good as ours.
        remove_tree(tmp)
        if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
            raise


def fetch_ref(
    repo: pygit2.Repository,
    mdir: Path,
    url: str,
    branch: str,
    remote_ref: str,
    callbacks: pygit2.RemoteCallbacks | None,
) -> pygit2.Oid:
    """Fetch `remote_ref` at depth 1 and point local `branch` at its commit; hold the lock."""
    for name in (*_GIT_LOCKS, f"refs/heads/{branch}.lock", f"{_TRACKING}{branch}.lock"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(mdir / name)
    tracking = f"{_TRACKING}{branch}"
    remote = repo.remotes.create_anonymous(url)
    remote.fetch([f"+{remote_ref}:{tracking}"], callbacks=callbacks, depth=1)
    fetched = repo.references[tracking].target
    assert isinstance(fetched, pygit2.Oid)
    oid = repo[fetched].peel(pygit2.Commit).id  # an annotated tag points at a tag object
    # Never merge: a depth-1 history cannot be fast-forwarded, and a force-push must win.
    repo.references.create(f"refs/heads/{branch}", oid, force=True)
    return oid


def fetch_commit(
    repo: pygit2.Repository, url: str, sha: str, callbacks: pygit2.RemoteCallbacks | None
) -> None:
    """Fetch one commit by its full SHA (if the server allows it); hold the lock."""
    remote = repo.remotes.create_anonymous(url)
    remote.fetch([sha], callbacks=callbacks, depth=1)
