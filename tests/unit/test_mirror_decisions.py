"""The mirror's sync decisions at their edges, in the test's own process: what is fetched again,
what a fallback serves, what reclaiming keeps, and what the errors name."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType

from codeask.denylist import DenyList
from codeask.mirror import MirrorStore, RepoSpec, bare
from codeask.mirror.lock import locked
from codeask.mirror.remote import RemoteMirror
from codeask.mirror.source import Head, open_repo
from conftest import GitDaemon, GitWorkTree

WAIT_S = 90.0


def new_store(tmp: Path) -> MirrorStore:
    return MirrorStore(tmp / "mirrors", tmp / "snapshots", DenyList(), lock_timeout_s=WAIT_S)


def waiting_in(thread: threading.Thread, filename: str) -> bool:
    """Whether `thread` is now running code of the file `filename` (e.g. blocked on a lock)."""
    frame: FrameType | None = sys._current_frames().get(thread.ident or 0)
    while frame is not None:
        if frame.f_code.co_filename.endswith(filename):
            return True
        frame = frame.f_back
    return False


def test_a_sync_that_waited_for_the_lock_does_not_fetch_what_the_holder_fetched(
    git_repo: Callable[..., GitWorkTree], git_daemon: GitDaemon, tmp_path: Path
) -> None:
    # Given a synced mirror, a remote that moved on, and another sync holding the mirror's lock
    work = git_repo("work")
    work.commit({"README.md": "v1\n"})
    url = git_daemon.publish(work, "upstream.git")
    store = new_store(tmp_path)
    spec = RepoSpec.parse(url)
    store.sync(spec)
    new = work.commit({"README.md": "v2\n"})
    git_daemon.publish(work, "upstream.git")
    mdir = store.mirror_dir(spec)
    mirror = store.source(spec)
    assert isinstance(mirror, RemoteMirror)
    got: list[Head | BaseException] = []

    def sync() -> None:
        try:
            got.append(mirror.head({}, strict=True))
        except BaseException as exc:  # noqa: BLE001 - carried back to the test
            got.append(exc)

    with locked(mdir, WAIT_S) as held:
        assert held
        # When a sync finds the mirror behind and waits for the lock, and meanwhile the holder
        # fetches the new head (as a sync in another process does)
        waiter = threading.Thread(target=sync, daemon=True)
        waiter.start()
        while not waiting_in(waiter, "mirror/lock.py") and waiter.is_alive():
            waiter.join(0.01)
        bare.fetch_ref(open_repo(mdir), mdir, url, "main", "refs/heads/main", None)
    waiter.join(WAIT_S)

    # Then, once it has the lock, it reads the branch again and finds nothing left to fetch
    assert len(got) == 1 and isinstance(got[0], Head), got
    assert (got[0].sha, got[0].fetched, got[0].stale) == (new, False, None)
