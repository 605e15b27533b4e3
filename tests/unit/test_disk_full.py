"""A full disk under the snapshot root: idle snapshots go first, then one clear line, nothing half-written."""

from __future__ import annotations

import errno
import io
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

import pygit2
import pytest

from codeask.denylist import DenyList
from codeask.errors import DiskFull
from codeask.mirror import MirrorStore, RepoSpec
from codeask.mirror.remote import RemoteMirror
from codeask.mirror.space import is_full
from conftest import GitWorkTree
from fakes.disk import SmallDisk

KB = 1024


def store_at(tmp: Path) -> MirrorStore:
    return MirrorStore(tmp / "mirrors", tmp / "snapshots", DenyList(), lock_timeout_s=30)


def repo_of(git_repo: Callable[..., GitWorkTree], name: str, kb: int) -> RepoSpec:
    """A repository whose tree takes about `kb` KiB: a few files of different sizes."""
    work = git_repo(name)
    work.commit(
        {
            "README.md": f"{name}\n",
            "data/big.bin": "x" * (kb * KB * 3 // 4),
            "data/small.txt": "y" * (kb * KB // 4),
        }
    )
    return RepoSpec.parse(str(work.path))


def app_at(
    git_repo: Callable[..., GitWorkTree], tmp: Path
) -> tuple[GitWorkTree, RepoSpec, MirrorStore]:
    """A repository of a 300 KiB file, a 100 KiB one and a README, to commit to; its store."""
    work = git_repo("app")
    work.commit({"README.md": "v1\n", "data/big.bin": "x" * (300 * KB), "data/small.txt": "y" * (100 * KB)})  # fmt: skip
    return work, RepoSpec.parse(str(work.path)), store_at(tmp)


def snapshots_of(store: MirrorStore, spec: RepoSpec) -> list[str]:
    """The names under the repo's snapshot folder: snapshots, spares, and anything left over."""
    where = store.snapshot_dir(spec)
    return sorted(p.name for p in where.iterdir()) if where.exists() else []


def age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_idle_snapshots_of_other_repos_are_removed_to_make_room(
    git_repo: Callable[..., GitWorkTree], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a 700 KiB disk holding an idle 400 KiB snapshot of one repo and a busy small one
    disk = SmallDisk(tmp_path / "snapshots", 700 * KB).install(monkeypatch)
    old, busy, new = (
        repo_of(git_repo, n, kb) for n, kb in (("old", 400), ("busy", 40), ("new", 400))
    )
    store = store_at(tmp_path)
    old_root = store.sync(old).snapshot.root
    busy_root = store.sync(busy).snapshot.root
    age(old_root, 3600)

    # When a question needs a 400 KiB snapshot of a third repo
    got = store.sync(new)

    # Then the write met the full disk, the idle snapshot went to make room, the
    # one used a moment ago stayed, and the new snapshot is whole
    assert disk.refused >= 1
    assert snapshots_of(store, old) == []
    assert busy_root.is_dir() and (busy_root / "README.md").read_text() == "busy\n"
    assert (got.snapshot.root / "data" / "big.bin").stat().st_size == 300 * KB
    assert (got.snapshot.root / "data" / "small.txt").stat().st_size == 100 * KB
    assert disk.used() <= disk.capacity


@pytest.mark.parametrize(
    "capacity_kb",
    [0, 2, 150, 350],
    ids=["no room at all", "room for a small file", "full mid-file", "full near the end"],
)
def test_a_disk_still_full_after_reclaiming_is_one_line_and_leaves_nothing_half_written(
    capacity_kb: int,
    git_repo: Callable[..., GitWorkTree],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a disk too small for the snapshot, with only a snapshot used a moment ago on it
    disk = SmallDisk(tmp_path / "snapshots", capacity_kb * KB).install(monkeypatch)
    spec = repo_of(git_repo, "app", 400)
    store = store_at(tmp_path)

    # When a question needs it, the sync fails with a DiskFull: one line naming the snapshot
    # root and what it needs, no raw OSError
    with pytest.raises(DiskFull) as raised:
        store.sync(spec)
    message = str(raised.value)
    assert "\n" not in message and "no space left under" in message
    assert str(store.snapshot_root) in message and "MB" in message
    assert raised.value.exit_code == 3
    assert disk.refused >= 1
    # and nothing half-written is left to be served or to take space: no tree, no temporary one
    assert snapshots_of(store, spec) == []
    assert disk.used() == 0

    # When room is made, the next question gets the whole snapshot
    disk.capacity = 1024 * KB
    got = store.sync(spec)
    assert (got.snapshot.root / "data" / "big.bin").read_text() == "x" * (300 * KB)
    assert sorted(got.snapshot.files) == ["README.md", "data/big.bin", "data/small.txt"]


def test_a_recently_used_snapshot_is_never_taken_from_under_an_answer(
    git_repo: Callable[..., GitWorkTree], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a disk holding one snapshot used a moment ago, with no room beside it for another
    SmallDisk(tmp_path / "snapshots", 600 * KB).install(monkeypatch)
    first, second = repo_of(git_repo, "first", 400), repo_of(git_repo, "second", 400)
    store = store_at(tmp_path)
    kept = store.sync(first).snapshot

    # When the other repo is asked about, it fails as a full disk...
    with pytest.raises(DiskFull, match="after removing 0 older snapshots"):
        store.sync(second)
    # ...and the snapshot in use is still whole and served again
    assert (kept.root / "data" / "big.bin").stat().st_size == 300 * KB
    assert store.sync(first).snapshot.root == kept.root


def test_the_command_line_says_disk_full_in_one_line_and_exits_3(
    git_repo: Callable[..., GitWorkTree],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from codeask.cli import main

    # Given a snapshot root on a disk with room for a few bytes only
    SmallDisk(tmp_path / "snapshots", 10).install(monkeypatch)
    spec = repo_of(git_repo, "app", 40)
    for name, value in {
        "HOME": tmp_path / "home",
        "MIRROR_ROOT": tmp_path / "mirrors",
        "SNAPSHOT_ROOT": tmp_path / "snapshots",
    }.items():
        monkeypatch.setenv(name, str(value))

    # When a tool and a check are run on a repository (`tool` moves the engine's log handler to
    # this test's stderr, which is closed after it: put back as it was)
    handlers = [h for h in logging.getLogger("codeask").handlers if hasattr(h, "stream")]
    for handler in handlers:
        monkeypatch.setattr(handler, "stream", handler.stream)
    for argv in (
        ["tool", "list_files", "{}", "--repo", spec.url],
        ["verify", "--repo", spec.url],
    ):
        monkeypatch.setattr("sys.stdin", io.StringIO("see README.md:1\n"))
        code = main(argv)
        out, err = capsys.readouterr()

        # Then each exits 3 with one line on stderr, no traceback, and nothing on stdout
        assert code == 3, (argv, err)
        assert out == ""
        assert err.count("\n") == 1 and err.startswith("codeask: no space left under"), err
        assert "Traceback" not in err and "OSError" not in err


@pytest.mark.parametrize("start", ["last snapshot", "spare"])
def test_a_disk_filling_up_during_an_incremental_build_leaves_nothing_half_written(
    start: str,
    git_repo: Callable[..., GitWorkTree],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a 500 KiB disk holding a 400 KiB snapshot used a moment ago (and, for a spare, a
    # hard-linked copy of it made after the answer)
    disk = SmallDisk(tmp_path / "snapshots", 500 * KB).install(monkeypatch)
    work, spec, store = app_at(git_repo, tmp_path)
    first = store.sync(spec).snapshot
    if start == "spare":
        assert store.prepare_next(spec, first)
    before = {p: (first.root / p).read_bytes() for p in first.files}

    # When a commit adds 200 KiB, more than is left, and the next question needs its snapshot
    work.commit({"README.md": "v2\n", "data/more.bin": "z" * (200 * KB)})
    with pytest.raises(DiskFull) as raised:
        store.sync(spec)

    # Then the build met the full disk part way, and failed in one line that estimates what the
    # change needs (0.2 MB), not the whole tree (0.6 MB); nothing half-written is left, and the
    # snapshot it was built from is whole
    message = str(raised.value)
    assert disk.refused >= 1 and not disk.overfilled
    assert "\n" not in message and "needs about 0.2 MB" in message, message
    assert snapshots_of(store, spec) == [first.root.name]
    assert {p: (first.root / p).read_bytes() for p in first.files} == before
    assert disk.used() <= 420 * KB

    # When room is made, the next question gets the new snapshot, built from the first: the
    # unchanged files shared, the new one whole
    disk.capacity = 1024 * KB
    got = store.sync(spec).snapshot
    assert got.files == ("README.md", "data/big.bin", "data/more.bin", "data/small.txt")
    assert (got.root / "data" / "more.bin").read_text() == "z" * (200 * KB)
    assert (got.root / "README.md").read_text() == "v2\n"
    big = (got.root / "data" / "big.bin").stat()
    assert big.st_ino == (first.root / "data" / "big.bin").stat().st_ino
    assert disk.used() < 650 * KB


@pytest.mark.parametrize(("need_kb", "evicted"), [(350, 1), (450, 2)])
def test_room_is_counted_by_the_disk_so_shared_files_free_nothing_until_their_last_holder_goes(
    need_kb: int,
    evicted: int,
    git_repo: Callable[..., GitWorkTree],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from codeask.mirror.space import Free

    # Given two idle snapshots of one repo, the second built from the first (a 300 KiB file
    # shared, a 100 KiB one each of their own), a spare of the first linking all of its files,
    # and 300 KiB free
    disk = SmallDisk(tmp_path / "snapshots", 2048 * KB).install(monkeypatch)
    work, spec, store = app_at(git_repo, tmp_path)
    old = store.sync(spec).snapshot
    work.commit({"data/small.txt": "z" * (100 * KB)})
    new = store.sync(spec).snapshot
    assert store.prepare_next(spec, old)
    assert (new.root / "data" / "big.bin").stat().st_ino == (old.root / "data" / "big.bin").stat().st_ino  # fmt: skip
    age(old.root, 7200)
    age(new.root, 3600)
    disk.capacity = disk.used() + 300 * KB

    # When room is wanted for more than is free
    got = store.snapshots.reclaim(Free(need_kb * KB, 1))

    # Then the older snapshot went first, with its spare, freeing only the file it alone held;
    # the shared one is freed only when the newer snapshot goes too, when that is still needed
    assert got == evicted
    assert disk.free(tmp_path / "snapshots").bytes >= need_kb * KB
    left = snapshots_of(store, spec)
    if evicted == 1:
        assert left == [new.root.name]
        assert (new.root / "data" / "big.bin").read_text() == "x" * (300 * KB)
        assert (new.root / "data" / "big.bin").stat().st_nlink == 1
    else:
        assert left == []


@pytest.mark.parametrize(
    ("tree", "change", "needs"),
    [
        # a top-level file rewritten: its new blob only, not the old one's as well
        ({"big.bin": "x" * (300 * KB)}, {"big.bin": "w" * (300 * KB)}, "0.3 MB"),
        # a large tree: the manifest listing every entry is written whole, about 128 B each
        ({f"many/{i:04}.txt": f"{i}\n" for i in range(1000)}, {"new.bin": "n" * (120 * KB)}, "0.3 MB"),
    ],
    ids=["a top-level file rewritten", "one file added to a large tree"],
)  # fmt: skip
def test_a_full_disk_says_what_an_incremental_build_needs(
    tree: dict[str, str],
    change: dict[str, str],
    needs: str,
    git_repo: Callable[..., GitWorkTree],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a snapshot used a moment ago, on a disk with 40 KiB left beside it
    work = git_repo("app")
    work.commit({"README.md": "v1\n", **tree})
    spec, store = RepoSpec.parse(str(work.path)), store_at(tmp_path)
    store.sync(spec)
    disk = SmallDisk(tmp_path / "snapshots", 0).install(monkeypatch)
    disk.capacity = disk.used() + 40 * KB

    # When a commit needs more than that, the build from the snapshot fails, and the message
    # estimates what the change takes (blocks of its new files, folders, the new manifest)
    work.commit(change)
    with pytest.raises(DiskFull) as raised:
        store.sync(spec)
    assert f"needs about {needs} in" in str(raised.value), raised.value


def test_a_mirror_fetch_that_found_the_disk_full_may_take_an_idle_snapshots_room(
    git_repo: Callable[..., GitWorkTree], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given mirrors beside the snapshots on a disk with 100 KiB free, and one idle 400 KiB
    # snapshot on it
    disk = SmallDisk(tmp_path / "snapshots", 500 * KB).install(monkeypatch)
    store = store_at(tmp_path)
    idle = repo_of(git_repo, "idle", 400)
    age(store.sync(idle).snapshot.root, 3600)
    store.mirror_root.mkdir()
    mirror = store.source(RepoSpec.parse("git://127.0.0.1:9/remote.git"))
    assert isinstance(mirror, RemoteMirror) and mirror.reclaim is not None

    # When a fetch into a mirror asks for 300 KiB, the idle snapshot goes, and the fetch is
    # told to try again; once nothing idle is left, it is told there is nothing to free
    assert mirror.reclaim(300 * KB) is True
    assert snapshots_of(store, idle) == [] and disk.used() == 0
    assert mirror.reclaim(600 * KB) is False


@pytest.mark.parametrize(
    ("exc", "full"),
    [
        (OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)), True),
        (OSError(errno.EDQUOT, os.strerror(errno.EDQUOT)), True),
        # libgit2's I/O errors come through pygit2 as an OSError or GitError with text only
        (OSError(f"failed to write pack: {os.strerror(errno.ENOSPC)}"), True),
        (pygit2.GitError(f"write error: {os.strerror(errno.EDQUOT)}"), True),
        (OSError(errno.EACCES, os.strerror(errno.EACCES)), False),
        (OSError("failed to lock file 'x.lock' for writing"), False),
        (pygit2.GitError("unexpected disconnect"), False),
        (ValueError(os.strerror(errno.ENOSPC)), False),
    ],
    ids=str,
)
def test_a_full_disk_is_told_apart_from_other_failures(exc: BaseException, full: bool) -> None:
    assert is_full(exc) is full
