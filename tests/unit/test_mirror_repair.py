"""Damaged mirrors, state files, locks and snapshots: found, rebuilt under the lock, and reported."""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import queue
import signal
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2
import pytest

from codeask.denylist import DenyList
from codeask.errors import RepoUnavailable
from codeask.mirror import MirrorStore, Repair, RepoSpec, bare
from codeask.mirror.manifest import MANIFEST_NAME, Manifest
from codeask.mirror.space import Free
from conftest import GitDaemon, GitWorkTree, run_git, tree_state
from fakes.damage import MIRROR_DAMAGE, Damage, flip, loose, prepare, replace, truncate

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


def calls_seen() -> set[str]:
    """Under `make mutate`, the functions mutmut saw this process call since the test began.

    mutmut maps a test to the functions the test's own process ran; a forked child's calls die
    with it, so each child hands its list back (`heard_from`), else what only children run would
    count as untested and its mutants be judged by no test. Empty outside mutmut's first pass."""
    if os.environ.get("MUTANT_UNDER_TEST") != "stats" or "mutmut.state" not in sys.modules:
        return set()
    return set(sys.modules["mutmut.state"].state()._stats)


def heard_from(calls: set[str]) -> None:
    """Count a child's calls (from its `calls_seen`) as this test's own."""
    if calls:
        sys.modules["mutmut.state"].state()._stats.update(calls)


def in_child(fn: Callable[[], Any]) -> Any:
    """Run `fn` in a forked process (so nothing of this one's open mirrors is reused) and give
    back what it returned or raised; a child that hangs fails the test instead of wedging it."""
    results: Any = FORK.Queue()

    def run() -> None:
        try:
            value = fn()
        except BaseException as exc:  # noqa: BLE001 - carried back to the test
            results.put(("raised", f"{type(exc).__name__}: {exc}", calls_seen()))
        else:
            results.put(("ok", value, calls_seen()))

    child = FORK.Process(target=run)
    child.start()
    try:
        kind, value, calls = results.get(timeout=WAIT_S)
    except queue.Empty:
        os.kill(child.pid or 0, signal.SIGKILL)
        child.join(WAIT_S)
        pytest.fail("the sync hung")
    child.join(WAIT_S)
    heard_from(calls)
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
            "root": str(got.snapshot.root),
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
            results.put(("ready", None, set()))
            go.wait(WAIT_S)
            summary = {**_summary(store.sync(spec)), "repairs": repairs}
            results.put(("ok", summary, calls_seen()))
        except BaseException as exc:  # noqa: BLE001 - carried back to the test
            results.put(("raised", f"{type(exc).__name__}: {exc}", calls_seen()))

    child = FORK.Process(target=run)
    child.start()
    try:
        kind, value, calls = results.get(timeout=WAIT_S)
        assert kind == "ready", value
        made = between()
        go.set()
        kind, value, calls = results.get(timeout=WAIT_S)
    except queue.Empty:
        pytest.fail("the sync hung")
    finally:
        if child.is_alive():
            os.kill(child.pid or 0, signal.SIGKILL)
        child.join(WAIT_S)
    heard_from(calls)
    if kind == "raised":
        raise AssertionError(value)
    return value, made


# ---- the state file and the lock beside the mirror ------------------------------------------

STATE_DAMAGE: dict[str, Callable[[Path], object]] = {
    "a JSON list": lambda p: p.write_text("[1, 2, 3]\n"),
    "a JSON string": lambda p: p.write_text('"branches"\n'),
    "branches of the wrong type": lambda p: p.write_text('{"branches": "main", "url": 7}\n'),
    "a branch entry of the wrong shape": lambda p: p.write_text(
        '{"branches": {"main": {"sha": 1, "synced_at": []}}, "last_error": "boom"}\n'
    ),
    "not JSON": lambda p: p.write_text("{garbage\n"),
    "arrays nested too deep to parse": lambda p: p.write_text("[" * 100_000),
    "empty": lambda p: p.write_text(""),
    "binary": lambda p: p.write_bytes(b"\xff\xfe\x00" * 100),
    "larger than any state": lambda p: p.write_text('{"pad": "' + "x" * (2 << 20) + '"}'),
    "a directory": lambda p: replace(p, "dir"),
    "a FIFO": lambda p: replace(p, "fifo"),
    "a symlink to a file elsewhere": lambda p: replace(p, f"link:{p.parent.parent / 'elsewhere'}"),
}


@pytest.mark.parametrize("damage", STATE_DAMAGE.values(), ids=STATE_DAMAGE.keys())
def test_a_state_file_of_any_other_shape_is_replaced(
    damage: Callable[[Path], object], served: Served, tmp_path: Path
) -> None:
    # Given a synced mirror whose state file (which dates stale notes) is something else now
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("not codeask's\n")
    first = sync_in_child(tmp_path, served.url)
    state = new_store(tmp_path, []).mirror_dir(RepoSpec.parse(served.url)).with_suffix(".json")
    damage(state)

    # When a new process syncs, first with the remote unchanged, then after it moved on
    got = sync_in_child(tmp_path, served.url)
    new = served.commit({"src/app.py": "print('v2')\n"})
    moved = sync_in_child(tmp_path, served.url)

    # Then both answers are right and never stale, the state file was replaced by one of the
    # right shape that dates the new head (reported once), and nothing it pointed at was touched
    assert (got["sha"], got["stale"], got["app"]) == (first["sha"], None, "print('v1')\n")
    assert (moved["sha"], moved["stale"], moved["app"]) == (new, None, "print('v2')\n")
    assert [r.what for r in got["repairs"] + moved["repairs"]] == ["state file"]
    written = json.loads(state.read_text())
    assert written["branches"]["main"]["sha"] == new and written["last_error"] is None
    assert stat.S_ISREG(os.lstat(state).st_mode)
    assert elsewhere.read_text() == "not codeask's\n"


def test_a_bad_state_file_does_not_hide_that_the_answer_is_stale(
    served: Served, tmp_path: Path
) -> None:
    # Given a synced mirror with a state file of the wrong shape, and a remote that went away
    first = sync_in_child(tmp_path, served.url)
    state = new_store(tmp_path, []).mirror_dir(RepoSpec.parse(served.url)).with_suffix(".json")
    state.write_text('{"branches": [], "default_branch": 3}')
    served.daemon.stop()

    # When a new process syncs, it answers from the mirror, marked stale with a date
    got = sync_in_child(tmp_path, served.url)
    assert got["sha"] == first["sha"] and got["stale"] is not None
    assert got["stale"].as_of is not None


LOCK_DAMAGE: dict[str, str] = {
    "a directory": "dir",
    "a FIFO": "fifo",
    "a socket": "socket",
    "a dangling symlink": "link:/nonexistent/lock",
    "a symlink to a file elsewhere": "link:{elsewhere}",
}


@pytest.mark.parametrize("by", LOCK_DAMAGE.values(), ids=LOCK_DAMAGE.keys())
def test_a_lock_path_that_is_no_lock_file_is_replaced(
    by: str, served: Served, tmp_path: Path
) -> None:
    # Given a synced mirror whose lock path is something else than a file, and a remote that
    # moved on (so the next sync must take the lock to fetch)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("not codeask's\n")
    sync_in_child(tmp_path, served.url)
    mdir = new_store(tmp_path, []).mirror_dir(RepoSpec.parse(served.url))
    lock = mdir.with_name(mdir.name + ".lock")
    replace(lock, by.format(elsewhere=elsewhere))
    new = served.commit({"src/app.py": "print('v2')\n"})

    # When a new process syncs
    got = sync_in_child(tmp_path, served.url)

    # Then it fetched the new head, the lock path is a plain file again (reported once), and a
    # symlink's target was neither followed nor changed
    assert (got["sha"], got["stale"], got["app"]) == (new, None, "print('v2')\n")
    assert [r.what for r in got["repairs"]] == ["lock file"]
    assert stat.S_ISREG(os.lstat(lock).st_mode)
    assert elsewhere.read_text() == "not codeask's\n"
    assert got["again"] == (new, False, None)


# ---- what a killed fetch leaves -------------------------------------------------------------

LEFTOVERS: dict[str, Callable[[Path], list[str]]] = {
    # a fetch killed while writing its pack: the pack's final name with nothing in it
    "a zero-byte pack": lambda d: _touch(d, "pack-" + "a" * 40 + ".pack"),
    "a zero-byte pack and index": lambda d: _touch(
        d, "pack-" + "b" * 40 + ".pack", "pack-" + "b" * 40 + ".idx"
    ),
    "an index without its pack": lambda d: _touch(d, "pack-" + "c" * 40 + ".idx", size=1100),
    "libgit2's temporary pack": lambda d: _touch(d, "pack_git2_0123456789abcdef", size=4096),
    "git's temporary pack and index": lambda d: _touch(d, "tmp_pack_Ab12Cd", "tmp_idx_Ef34Gh"),
    "stale lock files": lambda d: [
        *_touch(d.parent.parent, "shallow.lock", "packed-refs.lock", "config.lock"),
    ],
}


def _touch(where: Path, *names: str, size: int = 0) -> list[str]:
    for name in names:
        (where / name).write_bytes(b"\0" * size)
    return [str(where / name) for name in names]


@pytest.mark.parametrize("leave", LEFTOVERS.values(), ids=LEFTOVERS.keys())
def test_what_a_killed_fetch_left_is_cleaned_by_the_next_fetch(
    leave: Callable[[Path], list[str]], served: Served, tmp_path: Path
) -> None:
    # Given a mirror a fetch was killed in, with what it left, while the remote moved on
    sync_in_child(tmp_path, served.url)
    mdir = new_store(tmp_path, []).mirror_dir(RepoSpec.parse(served.url))
    left = leave(mdir / "objects" / "pack")
    new = served.commit({"src/app.py": "print('v2')\n", "NEWS.md": "v2\n"})

    # When a new process syncs (on an empty snapshot root: every object is read)
    got = sync_in_child(tmp_path, served.url, snapshots="fresh-snapshots")

    # Then the new head is served whole, and what was left is gone
    assert (got["sha"], got["stale"], got["app"]) == (new, None, "print('v2')\n")
    assert "NEWS.md" in got["files"]
    assert [p for p in left if os.path.lexists(p)] == []
    packs = list((mdir / "objects" / "pack").iterdir())
    assert all(p.stat().st_size > 0 for p in packs), packs


# ---- damaged snapshots ----------------------------------------------------------------------

SNAPSHOT_DAMAGE: dict[str, Callable[[Path], object]] = {
    "a file deleted": lambda s: _writable(s, lambda: os.unlink(s / "src" / "app.py")),
    "a file truncated": lambda s: _writable(s, lambda: truncate(s / "src" / "app.py", 3)),
    "a file cut in place": lambda s: _writable(s, lambda: _cut(s / "src" / "app.py", 3)),
    "a file added": lambda s: _writable(s, lambda: (s / "planted.py").write_text("x = 1\n")),
    "a file added below": lambda s: _writable(s, lambda: (s / "src" / "x.py").write_text("x\n")),
    "a file made a symlink": lambda s: _writable(
        s, lambda: replace(s / "src" / "app.py", "link:../README.md")
    ),
    "a folder deleted": lambda s: _writable(s, lambda: remove(s / "docs")),
    "the manifest deleted": lambda s: _writable(s, lambda: os.unlink(s / MANIFEST_NAME)),
    "the manifest garbage": lambda s: _manifest(s, b"{garbage"),
    "the manifest a FIFO": lambda s: _writable(s, lambda: replace(s / MANIFEST_NAME, "fifo")),
    "the manifest a folder": lambda s: _writable(s, lambda: replace(s / MANIFEST_NAME, "dir")),
    "the manifest cut short": lambda s: _manifest(s, (s / MANIFEST_NAME).read_bytes()[:-9]),
    "the manifest a byte flipped": lambda s: _writable(s, lambda: flip(s / MANIFEST_NAME, -20)),
    # Whole (its hash holds), but not what was written: another commit's, an entry that climbs
    # out of the snapshot, an entry of another shape
    "the manifest another commit's": lambda s: _manifest(s, sha="0" * 40),
    "the manifest names a path outside": lambda s: _manifest(
        s, entry=("../../../../etc/hostname", f"100644 {'0' * 40} 1")
    ),
    "the manifest holds an entry of another shape": lambda s: _manifest(
        s, entry=("README.md", "garbage")
    ),
}


def _manifest(
    snap: Path, data: bytes | None = None, sha: str | None = None, entry: tuple[str, str] = ("", "")
) -> None:
    """Put another manifest in the snapshot: `data`, or what was written with a change (its
    commit, or one entry set), hashed as codeask hashes it."""
    if data is None:
        was = Manifest.read_from(snap)
        assert was is not None
        if entry[0]:
            was.entries[entry[0]] = entry[1]
        data = Manifest(sha or was.sha, was.view, was.entries, was.dirs).dump()
    path = snap / MANIFEST_NAME

    def rewrite() -> None:
        path.unlink()
        path.write_bytes(data)

    _writable(snap, rewrite)


def _cut(path: Path, size: int) -> None:
    os.chmod(path, 0o644)
    os.truncate(path, size)


def _writable(snap: Path, change: Callable[[], Any]) -> None:
    for dirpath, _dirs, _files in os.walk(snap):
        os.chmod(dirpath, 0o755)
    change()


def remove(path: Path) -> None:
    import shutil

    shutil.rmtree(path)


@pytest.mark.parametrize("damage", SNAPSHOT_DAMAGE.values(), ids=SNAPSHOT_DAMAGE.keys())
def test_a_damaged_snapshot_is_written_again(
    damage: Callable[[Path], object], served: Served, tmp_path: Path
) -> None:
    # Given a snapshot on disk that was changed after it was written (or its manifest was)
    first = sync_in_child(tmp_path, served.url)
    snap = Path(first["root"])
    damage(snap)

    # When a new process syncs
    got = sync_in_child(tmp_path, served.url)

    # Then the snapshot was written again, whole, at the same place, and that was reported
    assert (got["sha"], got["root"], got["files"]) == (first["sha"], first["root"], first["files"])
    assert got["app"] == "print('v1')\n"
    assert not (snap / "planted.py").exists()
    assert [r.what for r in got["repairs"]] == ["snapshot"]


# A snapshot folder followed through a symlink put each snapshot wherever the link pointed.
SNAPSHOT_FOLDER_DAMAGE = {
    "a symlink to another folder": "link:{outside}",
    "a dangling symlink": "link:{outside}/gone",
    "a symlink to a root-like folder": "link:{root_like}",
    "a regular file": "file",
}


def root_like(tmp: Path) -> Path:
    """A folder standing in for `/`: system-looking folders, and names codeask's own pruning
    would take for a snapshot and a leftover, old enough to be removed were they codeask's."""
    top = tmp / "root-like"
    for name in ("etc", "tmp", "a" * 40 + "-" + "b" * 12, ".trash-x", ".tmp-y"):
        (top / name).mkdir(parents=True)
        (top / name / "kept").write_text("not codeask's\n")
        os.utime(top / name, (1, 1))
    return top


@pytest.mark.parametrize("by", SNAPSHOT_FOLDER_DAMAGE.values(), ids=SNAPSHOT_FOLDER_DAMAGE.keys())
def test_a_snapshot_folder_that_is_no_folder_is_replaced_never_written_through(
    by: str, served: Served, tmp_path: Path
) -> None:
    # Given a repository's snapshot folder that is a symlink elsewhere, or a file
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "kept").write_text("not codeask's\n")
    top = root_like(tmp_path)
    before = (tree_state(outside), tree_state(top))
    repairs = Repairs()
    store = new_store(tmp_path, repairs)
    spec = RepoSpec.parse(served.url)
    folder = store.snapshot_dir(spec)
    folder.parent.mkdir(parents=True)
    replace(folder, by.format(outside=outside, root_like=top))

    # When it is synced, then once more after a commit (the old snapshot is pruned then)
    first = store.sync(spec)
    new = served.commit({"src/app.py": "print('v2')\n"})
    second = store.sync(spec)
    store.snapshots.reclaim(Free(1 << 62, 1 << 62))

    # Then both snapshots are in a real folder under the snapshot root, it was reported once,
    # and nothing outside was written, touched or removed
    assert os.path.isdir(folder) and not os.path.islink(folder)
    assert first.snapshot.root.parent == second.snapshot.root.parent == folder
    assert (second.sha, (second.snapshot.root / "src/app.py").read_text()) == (new, "print('v2')\n")
    assert repairs.whats() == ["snapshot folder"]
    assert (tree_state(outside), tree_state(top)) == before


def test_a_mirror_folder_linked_to_a_root_like_folder_is_replaced_never_written_through(
    served: Served, tmp_path: Path
) -> None:
    # Given a repository's mirror folder that is a symlink to a folder standing in for `/`
    top = root_like(tmp_path)
    before = tree_state(top)
    repairs = Repairs()
    store = new_store(tmp_path, repairs)
    spec = RepoSpec.parse(served.url)
    mdir = store.mirror_dir(spec)
    mdir.parent.mkdir(parents=True)
    mdir.symlink_to(top)

    # When it is synced
    got = store.sync(spec)

    # Then a real mirror took the link's place, and nothing where it pointed was changed
    assert got.sha == served.work.head()
    assert os.path.isdir(mdir) and not os.path.islink(mdir)
    assert tree_state(top) == before


def test_reclaim_never_follows_a_symlink_among_the_repository_folders(
    served: Served, tmp_path: Path
) -> None:
    # Given a synced repository, and beside its folder a symlink to a root-like folder
    store = new_store(tmp_path, [])
    store.sync(RepoSpec.parse(served.url))
    top = root_like(tmp_path)
    before = tree_state(top)
    (store.snapshot_root / "other-0123456789").symlink_to(top)

    # When room is reclaimed for more than the disk has
    store.snapshots.reclaim(Free(1 << 62, 1 << 62))

    # Then nothing where the link points was removed
    assert tree_state(top) == before


# ---- what the command line says -------------------------------------------------------------


def test_the_command_line_says_on_stderr_what_it_rebuilt(
    served: Served,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from codeask.cli import main

    for name, value in {
        "HOME": tmp_path / "home",
        "MIRROR_ROOT": tmp_path / "mirrors",
        "SNAPSHOT_ROOT": tmp_path / "snapshots",
    }.items():
        monkeypatch.setenv(name, str(value))
    # Given a mirror the command line synced, whose HEAD was then overwritten
    sync_in_child(tmp_path, served.url)
    mdir = new_store(tmp_path, []).mirror_dir(RepoSpec.parse(served.url))
    (mdir / "HEAD").write_text("garbage\n")

    # When an answer citing it is checked, the check passes (stdout is its result alone), and
    # stderr says in one line what was rebuilt and why
    monkeypatch.setattr("sys.stdin", io.StringIO("It prints in `src/app.py:1`.\n"))
    code = main(["verify", "--repo", served.url])
    out, err = capsys.readouterr()
    assert code == 0 and "src/app.py:1" in out and "rebuilt" not in out
    warnings = [line for line in err.splitlines() if "rebuilt" in line]
    assert warnings == [
        "⚠️ upstream: the mirror was damaged (HEAD holds neither a ref nor a commit) and has "
        "been rebuilt"
    ], err


# ---- a repository read in place is never repaired -------------------------------------------

LOCAL_DAMAGE: dict[str, Callable[[Path], object]] = {
    "HEAD garbage": lambda g: (g / "HEAD").write_text("garbage\n"),
    "branch ref garbage": lambda g: (g / "refs" / "heads" / "main").write_text("garbage\n"),
    "branch names a missing commit": lambda g: (g / "refs" / "heads" / "main").write_text(
        "1" * 40 + "\n"
    ),
}


@pytest.mark.parametrize("damage", LOCAL_DAMAGE.values(), ids=LOCAL_DAMAGE.keys())
def test_a_damaged_local_repository_is_reported_and_left_as_it_is(
    damage: Callable[[Path], object], git_repo: Callable[..., GitWorkTree], tmp_path: Path
) -> None:
    # Given a work tree read in place, whose .git was damaged
    work = git_repo("local")
    work.commit({"README.md": "hello\n"})
    damage(work.path / ".git")
    before = tree_state(work.path)
    repairs: list[Repair] = []

    # When it is synced, the error is one line that says it is damaged and how to look
    with pytest.raises(RepoUnavailable) as raised:
        new_store(tmp_path, repairs).sync(RepoSpec.parse(str(work.path)))
    assert "is damaged" in str(raised.value) and "git fsck" in str(raised.value)
    assert "\n" not in str(raised.value)
    # and nothing in it was changed or reported as repaired
    assert tree_state(work.path) == before and repairs == []


# ---- the checks a sync relies on, in this process (mutmut maps no forked child to them) -------


def synced_mirror(served: Served, tmp_path: Path) -> Path:
    store = new_store(tmp_path, [])
    spec = RepoSpec.parse(served.url)
    store.sync(spec)
    return store.mirror_dir(spec)


def test_loose_objects_holding_nul_bytes_are_sound_and_one_cut_short_is_named(
    served: Served, tmp_path: Path
) -> None:
    # Given a mirror of a commit with a binary file, its objects loose
    served.commit({"data.bin": "head\0body\0tail\n"})
    mdir = synced_mirror(served, tmp_path)
    prepare(mdir, "loose")
    # Then it is sound as it is; and once that blob is cut short, the check names it
    bare.check_sound(mdir)
    blob = loose(mdir, "main:data.bin")
    truncate(blob)
    with pytest.raises(bare.Damaged) as caught:
        bare.check_sound(mdir)
    where = f"objects/{blob.parent.name}/{blob.name}"
    assert caught.value.reason == f"the loose object {where} is damaged"


def test_a_branch_ref_that_is_no_file_is_named_as_the_fault(served: Served, tmp_path: Path) -> None:
    mdir = synced_mirror(served, tmp_path)
    replace(mdir / "refs" / "heads" / "main", "fifo")
    with pytest.raises(bare.Damaged) as caught:
        bare.check_sound(mdir)
    assert caught.value.reason == "refs/heads/main is not a regular file"


def test_only_an_old_half_made_mirror_beside_it_counts_as_abandoned(
    served: Served, tmp_path: Path
) -> None:
    # Given a mirror with two half-made ones beside it: one being made this very moment (a
    # first sync elsewhere, without the lock) and one left two hours ago
    mdir = synced_mirror(served, tmp_path)
    fresh = mdir.parent / f".tmp-{mdir.name}-fresh"
    old = mdir.parent / f".tmp-{mdir.name}-old"
    for path in (fresh, old):
        (path / "objects").mkdir(parents=True)
    hours_ago = old.stat().st_mtime - 2 * 3600
    os.utime(old, (hours_ago, hours_ago))
    # When leftovers are cleaned
    removed = bare.clean_leftovers(mdir)
    # Then only the old one went
    assert (removed, fresh.exists(), old.exists()) == (1, True, False)


def test_reclaiming_clears_trash_but_keeps_a_live_snapshots_spare(
    served: Served, tmp_path: Path
) -> None:
    # Given a snapshot with a spare made of it, and a removal's trash left beside them
    store = new_store(tmp_path, [])
    spec = RepoSpec.parse(served.url)
    snapshot = store.sync(spec).snapshot
    assert store.prepare_next(spec, snapshot)
    repo_dir = snapshot.root.parent
    spares = sorted(p.name for p in repo_dir.iterdir() if p.name.startswith(".spare"))
    (repo_dir / ".trash-abc" / "src").mkdir(parents=True)
    # When room is reclaimed (nothing needed beyond the leftovers)
    store.snapshots.reclaim(Free(0, 0))
    # Then the trash is gone, and the snapshot and its spare are kept
    names = sorted(p.name for p in repo_dir.iterdir())
    assert ".trash-abc" not in names and snapshot.root.name in names
    assert spares and set(spares) <= set(names)


def test_an_older_commit_whose_objects_are_gone_is_fetched_again_by_sha(
    served: Served, tmp_path: Path
) -> None:
    # Given a mirror that fetched two commits (by syncs in other processes), a server that
    # hands out commits by SHA, and a file of the older commit gone from the mirror
    old = served.work.head()
    sync_in_child(tmp_path, served.url)
    served.commit({"src/app.py": "print('v2')\n"})
    sync_in_child(tmp_path, served.url)
    run_git(
        "config", "uploadpack.allowAnySHA1InWant", "true", cwd=served.daemon.base / "upstream.git"
    )
    repairs = Repairs()
    store = new_store(tmp_path, repairs, snapshots="fresh-snapshots")
    mdir = store.mirror_dir(RepoSpec.parse(served.url))
    prepare(mdir, "loose")
    loose(mdir, f"{old}:src/app.py").unlink()

    # When the older commit is shown (as for a thread answered at it)
    got = store.snapshot_at(RepoSpec.parse(served.url), old)

    # Then the mirror was rebuilt (holding the branch head only) and the commit fetched into it
    # again by its SHA: the snapshot is whole
    assert (got.sha, (got.root / "src" / "app.py").read_text()) == (old, "print('v1')\n")
    assert repairs.whats() == ["mirror"]
