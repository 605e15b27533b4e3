"""Damaged mirrors, state files, locks and snapshots: found, rebuilt under the lock, and reported."""

from __future__ import annotations

import multiprocessing
import os
import queue
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2
import pytest

from codeask.denylist import DenyList
from codeask.mirror import MirrorStore, Repair, RepoSpec
from conftest import GitDaemon, GitWorkTree
from fakes.damage import MIRROR_DAMAGE, Damage, prepare

FORK = multiprocessing.get_context("fork")
WAIT_S = 90.0


# ---- helpers --------------------------------------------------------------------------------


@dataclass
class Served:
    """A repository served by git daemon, changed with git in its work tree."""

    work: GitWorkTree
    daemon: GitDaemon
    url: str

    def commit(self, files: dict[str, str]) -> str:
        sha = self.work.commit(files)
        self.daemon.publish(self.work, "upstream.git")
        return sha


class Repairs(list[Repair]):
    """What a store told its on_repair, in order."""

    def whats(self) -> list[str]:
        return [r.what for r in self]


@pytest.fixture
def served(git_repo: Callable[..., GitWorkTree], git_daemon: GitDaemon) -> Served:
    work = git_repo("work")
    work.commit(
        {"README.md": "hello\n", "src/app.py": "print('v1')\n", "docs/guide.md": "guide\n"},
        message="first",
    )
    return Served(work, git_daemon, git_daemon.publish(work, "upstream.git"))


def new_store(tmp: Path, repairs: list[Repair], snapshots: str = "snapshots") -> MirrorStore:
    return MirrorStore(
        tmp / "mirrors", tmp / snapshots, DenyList(), lock_timeout_s=WAIT_S,
        on_repair=repairs.append,
    )  # fmt: skip


def leftovers(store: MirrorStore) -> list[str]:
    """Anything a rebuild or a killed fetch may leave beside the mirrors."""
    root = store.mirror_root
    return sorted(p.name for p in root.iterdir() if p.name.startswith((".trash-", ".tmp-")))


def in_child(fn: Callable[[], Any]) -> Any:
    """Run `fn` in a forked process (so nothing of this one's open mirrors is reused) and give
    back what it returned or raised; a child that hangs fails the test instead of wedging it."""
    results: Any = FORK.Queue()

    def run() -> None:
        try:
            results.put(("ok", fn()))
        except BaseException as exc:  # noqa: BLE001 - carried back to the test
            results.put(("raised", f"{type(exc).__name__}: {exc}"))

    child = FORK.Process(target=run)
    child.start()
    try:
        kind, value = results.get(timeout=WAIT_S)
    except queue.Empty:
        os.kill(child.pid or 0, signal.SIGKILL)
        child.join(WAIT_S)
        pytest.fail("the sync hung")
    child.join(WAIT_S)
    if kind == "raised":
        raise AssertionError(value)
    return value


def sync_in_child(tmp: Path, url: str, snapshots: str = "snapshots") -> dict[str, Any]:
    def go() -> dict[str, Any]:
        repairs: list[Repair] = []
        store = new_store(tmp, repairs, snapshots)
        got = store.sync(RepoSpec.parse(url))
        again = store.sync(RepoSpec.parse(url))
        return {
            "sha": got.sha, "stale": got.stale, "repairs": repairs,
            "files": sorted(got.snapshot.files),
            "app": (got.snapshot.root / "src" / "app.py").read_text(),
            "again": (again.sha, again.fetched, again.stale),
        }  # fmt: skip

    result: dict[str, Any] = in_child(go)
    return result


# ---- damaged mirrors ------------------------------------------------------------------------


@pytest.mark.parametrize("damage", MIRROR_DAMAGE, ids=str)
def test_a_damaged_mirror_is_rebuilt_when_the_remote_has_not_moved(
    damage: Damage, served: Served, tmp_path: Path
) -> None:
    # Given a synced mirror, damaged while no process holds it open, and a snapshot root that
    # does not have the commit yet (a new Lambda sandbox: every blob must be read again)
    first = sync_in_child(tmp_path, served.url)
    mdir = new_store(tmp_path, []).mirror_dir(RepoSpec.parse(served.url))
    prepare(mdir, damage.prepare)
    damage.apply(mdir)

    # When a process syncs, with the remote's head where it was
    got = sync_in_child(tmp_path, served.url, snapshots="fresh-snapshots")

    # Then the answer is the remote's head, complete and not stale, the damage was reported as
    # repaired, and the next sync trusts the rebuilt mirror without fetching
    assert (got["sha"], got["stale"], got["files"]) == (first["sha"], None, first["files"])
    assert got["app"] == "print('v1')\n"
    whats = [r.what for r in got["repairs"]]
    assert whats == (["mirror"] if damage.rebuilt else []), got["repairs"]
    assert got["again"] == (first["sha"], False, None)
    assert pygit2.Repository(str(mdir)).is_bare
    assert leftovers(new_store(tmp_path, [])) == []


@pytest.mark.parametrize("damage", MIRROR_DAMAGE, ids=str)
def test_a_damaged_mirror_is_rebuilt_and_follows_the_remote_that_moved_on(
    damage: Damage, served: Served, tmp_path: Path
) -> None:
    # Given a process that synced the mirror and holds it open (a warm Lambda), whose mirror is
    # then damaged while the remote moves on
    def between() -> str:
        mdir = new_store(tmp_path, []).mirror_dir(RepoSpec.parse(served.url))
        prepare(mdir, damage.prepare)
        damage.apply(mdir)
        return served.commit({"src/app.py": "print('v2')\n", "NEWS.md": "v2\n"})

    # When that process syncs again, and then a new process on a new sandbox's empty snapshot
    # root (which must read every object of the commit from the mirror)
    warm, new = warm_sync(tmp_path, served.url, between)
    fresh = sync_in_child(tmp_path, served.url, snapshots="fresh-snapshots")

    # Then both answer from the new head with its content, never stale; the mirror was rebuilt
    # at most once, by whichever process first needed what the damage broke (a process that
    # holds a deleted pack open still reads it; whether the new commit still needs an old object
    # depends on which of them it shares), and nothing is left behind
    assert (warm["sha"], warm["stale"], warm["fetched"]) == (new, None, True)
    assert "NEWS.md" in warm["files"] and warm["app"] == "print('v2')\n"
    assert (fresh["sha"], fresh["stale"], fresh["files"]) == (new, None, warm["files"])
    assert fresh["app"] == "print('v2')\n"
    whats = [r.what for r in warm["repairs"] + fresh["repairs"]]
    assert whats in ([], ["mirror"]), (warm["repairs"], fresh["repairs"])
    assert fresh["again"] == (new, False, None)
    assert leftovers(new_store(tmp_path, [])) == []


def _summary(result: Any) -> dict[str, Any]:
    return {
        "sha": result.sha, "stale": result.stale, "fetched": result.fetched,
        "files": sorted(result.snapshot.files),
        "app": (result.snapshot.root / "src" / "app.py").read_text(),
    }  # fmt: skip


def warm_sync(tmp: Path, url: str, between: Callable[[], str]) -> tuple[dict[str, Any], str]:
    """Sync in a child process, run `between` here while the child keeps the mirror open, then
    sync again in the child; gives back the second sync and what `between` returned."""
    go, results = FORK.Event(), FORK.Queue()

    def run() -> None:
        repairs: list[Repair] = []
        store = new_store(tmp, repairs)
        spec = RepoSpec.parse(url)
        try:
            store.sync(spec)
            results.put(("ready", None))
            go.wait(WAIT_S)
            results.put(("ok", {**_summary(store.sync(spec)), "repairs": repairs}))
        except BaseException as exc:  # noqa: BLE001 - carried back to the test
            results.put(("raised", f"{type(exc).__name__}: {exc}"))

    child = FORK.Process(target=run)
    child.start()
    try:
        kind, value = results.get(timeout=WAIT_S)
        assert kind == "ready", value
        made = between()
        go.set()
        kind, value = results.get(timeout=WAIT_S)
    except queue.Empty:
        pytest.fail("the sync hung")
    finally:
        if child.is_alive():
            os.kill(child.pid or 0, signal.SIGKILL)
        child.join(WAIT_S)
    if kind == "raised":
        raise AssertionError(value)
    return value, made
