"""The mirror's sync decisions at their edges, in the test's own process: what is fetched again,
what a fallback serves, what reclaiming keeps, and what the errors name."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType

import pygit2
import pytest

from codeask.denylist import DenyList
from codeask.errors import RepoUnavailable
from codeask.mirror import MirrorStore, RepoSpec, bare
from codeask.mirror.lock import locked
from codeask.mirror.remote import RemoteMirror
from codeask.mirror.snapshots import INDEX_SUFFIX
from codeask.mirror.source import Head, open_repo
from codeask.mirror.space import Free
from conftest import GitDaemon, GitWorkTree, run_git
from fakes.damage import git, loose, prepare

WAIT_S = 90.0


def new_store(tmp: Path) -> MirrorStore:
    return MirrorStore(tmp / "mirrors", tmp / "snapshots", DenyList(), lock_timeout_s=WAIT_S)


def published(work: GitWorkTree, daemon: GitDaemon, tmp: Path) -> tuple[MirrorStore, RepoSpec]:
    """A store under `tmp`, and the spec of `work` as the git daemon serves it (upstream.git)."""
    return new_store(tmp), RepoSpec.parse(daemon.publish(work, "upstream.git"))


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


def age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def leave_beside(repo_dir: Path, hours: float) -> dict[str, Path]:
    """What killed writes and removals leave in a repo's snapshot folder, `hours` old: a
    half-written snapshot, a spare of a snapshot that is gone, and a gone one's index."""
    gone = "0" * 40 + "-" + "f" * 12
    made = {
        "tmp": repo_dir / f".tmp-{hours}",
        "spare": repo_dir / f".spare-{gone}-{int(hours):08}",
        "index": repo_dir / f"{'1' * 40}-{'e' * 11}{int(hours)}{INDEX_SUFFIX}",
    }
    for kind, path in made.items():
        if kind == "index":
            path.write_text("rows\n")
        else:
            (path / "src").mkdir(parents=True, exist_ok=True)
        age(path, hours * 3600)
    return made


def test_what_killed_writes_left_goes_once_an_hour_idle_and_a_spare_with_its_snapshot(
    git_repo: Callable[..., GitWorkTree], tmp_path: Path
) -> None:
    # Given a synced repository whose snapshot folder holds leftovers two hours old and ones
    # made a moment ago (which may be another process's write under way)
    work = git_repo("work")
    work.commit({"README.md": "v1\n"})
    store, spec = new_store(tmp_path), RepoSpec.parse(str(work.path))
    repo_dir = store.sync(spec).snapshot.root.parent
    old, fresh = leave_beside(repo_dir, 2), leave_beside(repo_dir, 0)

    # When room is reclaimed (nothing needed beyond the leftovers)
    store.snapshots.reclaim(Free(0, 0))

    # Then the old half-written snapshot and index went, every spare of a gone snapshot too;
    # the fresh half-written snapshot and index stay
    def left(made: dict[str, Path]) -> list[str]:
        return sorted(kind for kind, path in made.items() if os.path.lexists(path))

    assert (left(old), left(fresh)) == ([], ["index", "tmp"])

    # And when a new commit's snapshot is written (which prunes the folder), the same holds
    old, fresh = leave_beside(repo_dir, 2), leave_beside(repo_dir, 0)
    work.commit({"README.md": "v2\n"})
    store.sync(spec)
    assert (left(old), left(fresh)) == ([], ["index", "tmp"])


def test_a_commit_that_cannot_be_read_is_named_with_the_object_it_lacks(
    git_repo: Callable[..., GitWorkTree], git_daemon: GitDaemon, tmp_path: Path
) -> None:
    # Given a mirror whose commit's root tree is gone
    work = git_repo("work")
    work.commit({"README.md": "v1\n"})
    store, spec = published(work, git_daemon, tmp_path)
    head = store.sync(spec).sha
    mdir = store.mirror_dir(spec)
    prepare(mdir, "loose")
    tree = git(mdir, "rev-parse", "main^{tree}")
    loose(mdir, "main^{tree}").unlink()

    # When its commit is checked, the fault names the commit and the missing tree
    with pytest.raises(bare.Damaged) as caught:
        bare.check_commit(pygit2.Repository(str(mdir)), pygit2.Oid(hex=head))
    reason = caught.value.reason
    assert reason.startswith(f"commit {head[:12]} cannot be read: ") and tree in reason, reason


def test_a_sync_times_each_of_its_steps(
    git_repo: Callable[..., GitWorkTree], git_daemon: GitDaemon, tmp_path: Path
) -> None:
    work = git_repo("work")
    work.commit({"README.md": "v1\n"})
    store, spec = published(work, git_daemon, tmp_path)
    first = store.sync(spec)
    again = store.sync(spec)
    # The first sync fetched under the lock; the next one found the mirror current and checked
    # its commit
    assert set(first.timings_ms) == {"open", "remote_head", "lock", "fetch", "snapshot", "total"}
    assert set(again.timings_ms) == {"open", "remote_head", "verify", "snapshot", "total"}
    assert all(v >= 0 for v in [*first.timings_ms.values(), *again.timings_ms.values()])


def test_a_fallback_serves_only_the_branch_the_remote_now_names(
    git_repo: Callable[..., GitWorkTree], git_daemon: GitDaemon, tmp_path: Path
) -> None:
    # Given a mirror of the remote's default branch `main`
    work = git_repo("work")
    work.commit({"README.md": "main\n"})
    url = git_daemon.publish(work, "upstream.git")
    store, spec = new_store(tmp_path), RepoSpec.parse(url)
    store.sync(spec)
    # and a remote whose default is now `dev`, a branch the mirror never had and whose commit
    # the server cannot send (its object is gone there)
    work.git("checkout", "-q", "-b", "dev")
    dev = work.commit({"README.md": "dev\n"})
    git_daemon.publish(work, "upstream.git")
    served = git_daemon.base / "upstream.git"
    run_git("symbolic-ref", "HEAD", "refs/heads/dev", cwd=served)
    (served / "objects" / dev[:2] / dev[2:]).unlink()

    # When a question syncs, the fetch and the fetch into a fresh mirror fail; and what the
    # mirror has of `main` is not served in `dev`'s place: there is nothing to fall back on
    with pytest.raises(RepoUnavailable, match="no earlier mirror of branch 'dev'"):
        store.sync(spec)


def test_the_room_a_fetch_asks_for_is_what_the_mirrors_packs_take(
    git_repo: Callable[..., GitWorkTree], git_daemon: GitDaemon, tmp_path: Path
) -> None:
    # Given a mirror that fetched twice (two packs), and one with no pack at all
    work = git_repo("work")
    work.commit({"README.md": "v1\n", "data.bin": os.urandom(20_000).hex()})
    store, spec = published(work, git_daemon, tmp_path)
    store.sync(spec)
    work.commit({"README.md": "v2\n"})
    git_daemon.publish(work, "upstream.git")
    store.sync(spec)
    mdir = store.mirror_dir(spec)
    packs = list((mdir / "objects" / "pack").iterdir())
    # Then what a fetch into it is expected to take is the bytes of every file of its packs
    assert bare.pack_bytes(mdir) == sum(p.stat().st_size for p in packs) > 20_000
    assert bare.pack_bytes(tmp_path / "no-mirror") == 0
