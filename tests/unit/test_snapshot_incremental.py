"""A new commit's snapshot is built from the last one: unchanged files hard-linked, the rest written."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pygit2
import pytest

from codeask.denylist import DenyList
from codeask.mirror import MirrorStore, RepoSpec
from codeask.mirror.incremental import build
from codeask.mirror.manifest import MANIFEST_NAME, Manifest, parse_entry
from codeask.mirror.materialise import View, materialise, remove_tree
from codeask.scope import PathScope
from conftest import GitWorkTree

DENY = DenyList(("secrets",))


def tree(root: Path) -> dict[str, tuple[str, int, bytes]]:
    """What a snapshot shows: each file's kind, permission bits and content (a link's target)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            st = os.lstat(path)
            if rel == MANIFEST_NAME:
                continue
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", 0, os.readlink(path).encode())
            elif stat.S_ISREG(st.st_mode):
                out[rel] = ("file", st.st_mode & 0o777, Path(path).read_bytes())
            elif not os.listdir(path):
                out[rel] = ("empty dir", st.st_mode & 0o777, b"")
    return out


def inode(path: Path) -> int:
    return os.lstat(path).st_ino


def whole(work: GitWorkTree, sha: str, dest: Path, view: View) -> Path:
    """The same commit written from scratch: what an incremental snapshot must equal."""
    materialise(pygit2.Repository(str(work.path)), sha, dest, view)
    return dest


@pytest.fixture
def work(git_repo: Callable[..., GitWorkTree]) -> GitWorkTree:
    w = git_repo("work")
    w.commit(
        {"README.md": "hello\n", "src/app.py": "print('v1')\n", "src/lib/util.py": "def u(): pass\n",
         "docs/guide.md": "guide\n", "tools/run.sh": "#!/bin/sh\n"},
        symlinks={"docs/latest": "guide.md"},
    )  # fmt: skip
    return w


@pytest.fixture
def store(tmp_path: Path) -> MirrorStore:
    return MirrorStore(tmp_path / "mirrors", tmp_path / "snapshots", DENY)


def test_a_one_file_commit_writes_one_file_and_links_every_other(
    store: MirrorStore, work: GitWorkTree, tmp_path: Path
) -> None:
    # Given a snapshot of the first commit
    spec = RepoSpec.parse(str(work.path))
    old = store.sync(spec).snapshot
    before = tree(old.root)

    # When one file changes and the next commit is synced
    work.commit({"src/app.py": "print('v2')\n"})
    new = store.sync(spec).snapshot

    # Then every unchanged file is the same inode as in the old snapshot, the changed one is new
    for rel in ("src/lib/util.py", "docs/guide.md", "docs/latest", "tools/run.sh"):
        assert inode(new.root / rel) == inode(old.root / rel), rel
    assert inode(new.root / "src/app.py") != inode(old.root / "src/app.py")
    # (the top directory's time moves whenever a snapshot is used, so its few files are written)
    assert inode(new.root / "README.md") != inode(old.root / "README.md")
    # And both snapshots show exactly their commit, as a whole write of it would
    assert tree(old.root) == before
    assert tree(new.root) == tree(whole(work, new.sha, tmp_path / "whole", View(DENY)))
    assert new.files == ("README.md", "docs/guide.md", "docs/latest", "src/app.py",
                         "src/lib/util.py", "tools/run.sh")  # fmt: skip


@pytest.mark.parametrize("start", ["last snapshot", "spare"])
def test_every_kind_of_change_gives_what_a_whole_write_gives(
    store: MirrorStore, work: GitWorkTree, tmp_path: Path, start: str
) -> None:
    def added_changed_deleted_and_denied() -> None:
        work.commit({"a/b/c/new.py": "new\n", "README.md": "hello again\n", ".env": "K=1\n",
                     "secrets/db.txt": "pw\n"}, delete=("src/lib/util.py",))  # fmt: skip

    def exec_bit_on_and_off() -> None:  # the same blob under another mode
        (work.path / "README.md").chmod(0o755)
        (work.path / "tools/run.sh").chmod(0o644)
        work.commit()

    def file_into_directory() -> None:
        work.git("rm", "-q", "--", "docs/guide.md", "docs/latest", "src/app.py")
        work.commit({"docs/guide.md/index.md": "now a directory\n"})

    def symlinks_added_and_a_file_turned_into_one() -> None:
        work.git("rm", "-q", "--", "tools/run.sh")
        work.commit(symlinks={"docs/latest": "guide.md/index.md", "src/app.py": "../README.md",
                              "tools/run.sh": "../README.md"})  # fmt: skip

    def directory_moved() -> None:
        _move(work, "a/b", "z/y")

    def directory_back_into_a_file() -> None:
        work.git("rm", "-q", "-r", "--", "docs/guide.md", "docs/latest")
        work.commit({"docs/guide.md": "a file again\n"})

    def submodule_added() -> None:
        _gitlink(work, "vendor/lib")

    def submodule_and_a_whole_directory_removed() -> None:
        work.commit(delete=("vendor/lib", "z"))

    spec = RepoSpec.parse(str(work.path))
    first = store.sync(spec).snapshot
    previous = Manifest.read_from(first.root)
    if start == "spare":
        assert store.prepare_next(spec, first)
    steps = [added_changed_deleted_and_denied, exec_bit_on_and_off, file_into_directory,
             symlinks_added_and_a_file_turned_into_one, directory_moved,
             directory_back_into_a_file, submodule_added,
             submodule_and_a_whole_directory_removed]  # fmt: skip
    for step in steps:
        # Given the snapshot of the last commit  When the next one changes something
        step()
        spares = [inode(p) for p in spare_dirs(store, spec)]
        snapshot = store.sync(spec).snapshot
        if start == "spare":  # the spare became the snapshot; the next one gets a spare again
            assert spares == [inode(snapshot.root)]
            assert not spare_dirs(store, spec)
            assert store.prepare_next(spec, snapshot)
        # Then its snapshot is what writing that commit from scratch gives, and its manifest
        # names every entry on disk with its inode
        expected = tree(whole(work, snapshot.sha, tmp_path / step.__name__, View(DENY)))
        assert tree(snapshot.root) == expected, step.__name__
        assert set(snapshot.files) == set(expected), step.__name__
        manifest = Manifest.read_from(snapshot.root)
        assert manifest is not None and set(manifest.entries) == set(snapshot.files)
        for rel, text in manifest.entries.items():
            assert inode(snapshot.root / rel) == parse_entry(text)[2]
        assert not any(p.startswith(("secrets", ".env")) for p in expected)
        # And it was built from the last one: what did not change is the same inode
        assert previous is not None
        blobs = {p: parse_entry(t)[:2] for p, t in previous.entries.items()}
        unchanged = [p for p, t in manifest.entries.items()
                     if blobs.get(p) == parse_entry(t)[:2] and "/" in p]  # fmt: skip
        assert unchanged and all(manifest.entries[p] == previous.entries[p] for p in unchanged)
        previous = manifest


def spare_dirs(store: MirrorStore, spec: RepoSpec) -> list[Path]:
    return sorted(p for p in store.snapshot_dir(spec).iterdir() if p.name.startswith(".spare-"))


def test_a_spare_is_made_once_and_lives_as_long_as_its_snapshot(
    tmp_path: Path, work: GitWorkTree
) -> None:
    # Given a snapshot and a spare made of it after the answer
    store = MirrorStore(tmp_path / "m", tmp_path / "s", DENY, snapshots_keep=1)
    spec = RepoSpec.parse(str(work.path))
    old = store.sync(spec).snapshot
    assert store.prepare_next(spec, old)
    assert not store.prepare_next(spec, old)  # one is ready: nothing more to do
    (made,) = spare_dirs(store, spec)
    # The spare shares every file with its snapshot and holds nothing a tool could see
    assert inode(made / "src/app.py") == inode(old.root / "src/app.py")
    assert tree(made) == tree(old.root)
    # When the snapshot it copies is pruned (unused, beyond `keep`) and no commit came since
    store.prepare_next(spec, old)
    os.utime(old.root, (0, 0))
    work.commit({"docs/guide.md": "v2\n"})
    new = store.sync(spec).snapshot  # takes the spare
    assert store.prepare_next(spec, new)
    assert not old.root.exists()
    (again,) = spare_dirs(store, spec)
    assert again.name.startswith(f".spare-{new.root.name}-")
    # Then pruning the newer snapshot takes its spare with it
    os.utime(new.root, (0, 0))
    work.commit({"docs/guide.md": "v3\n"})
    newest = store.sync(spec).snapshot
    assert not new.root.exists() and spare_dirs(store, spec) == []
    assert (newest.root / "docs/guide.md").read_text() == "v3\n"


@pytest.mark.parametrize("damage", ["directory removed", "file replaced"])
def test_a_damaged_spare_is_thrown_away_and_the_snapshot_written_another_way(
    store: MirrorStore, work: GitWorkTree, tmp_path: Path, damage: str
) -> None:
    # Given a spare that something changed after it was made
    spec = RepoSpec.parse(str(work.path))
    first = store.sync(spec).snapshot
    store.prepare_next(spec, first)
    (made,) = spare_dirs(store, spec)
    os.chmod(made / "src", 0o755)
    if damage == "directory removed":
        remove_tree(made / "src" / "lib")  # the directory a change below needs
    else:  # the same name, another file (its inode number may well be the old one's)
        (made / "src" / "app.py").unlink()
        (made / "src" / "app.py").write_text("print('tampered')\n")
    # When the next commit's snapshot is made  Then it is exactly that commit
    work.commit({"src/lib/util.py": "def u(): return 2\n"})
    snapshot = store.sync(spec).snapshot
    assert tree(snapshot.root) == tree(whole(work, snapshot.sha, tmp_path / "w", View(DENY)))
    assert not spare_dirs(store, spec)
    assert not [p for p in store.snapshot_dir(spec).iterdir() if p.name.startswith(".tmp-")]


def test_a_moved_file_is_linked_from_where_it_was(store: MirrorStore, work: GitWorkTree) -> None:
    spec = RepoSpec.parse(str(work.path))
    old = store.sync(spec).snapshot
    _move(work, "src/lib", "pkg/lib")
    new = store.sync(spec).snapshot
    assert inode(new.root / "pkg/lib/util.py") == inode(old.root / "src/lib/util.py")
    assert not (new.root / "src/lib").exists()


def test_a_damaged_or_half_pruned_base_never_gives_a_wrong_snapshot(
    store: MirrorStore, work: GitWorkTree, tmp_path: Path
) -> None:
    # Given a snapshot that was damaged after it was written: a directory gone, a file removed,
    # one replaced by another file of the same name, as a half-finished prune or cleaner leaves it
    spec = RepoSpec.parse(str(work.path))
    old = store.sync(spec).snapshot
    os.chmod(old.root, 0o755)
    os.chmod(old.root / "src", 0o755)
    os.chmod(old.root / "docs", 0o755)
    remove_tree(old.root / "src" / "lib")
    os.unlink(old.root / "README.md")
    os.unlink(old.root / "docs" / "guide.md")
    (old.root / "docs" / "guide.md").write_text("not what the commit holds\n")

    # When the next commit is built from it
    work.commit({"tools/new.txt": "n\n"})
    new = store.sync(spec).snapshot

    # Then the new snapshot is exactly its commit: what was gone or replaced is written afresh
    assert tree(new.root) == tree(whole(work, new.sha, tmp_path / "whole", View(DENY)))
    assert (new.root / "docs/guide.md").read_text() == "guide\n"
    assert inode(new.root / "docs/guide.md") != inode(old.root / "docs/guide.md")
    assert inode(new.root / "tools/run.sh") == inode(old.root / "tools/run.sh")


def test_a_base_without_a_manifest_or_its_commit_is_not_used(
    work: GitWorkTree, tmp_path: Path
) -> None:
    repo = pygit2.Repository(str(work.path))
    view = View(DENY)
    base = tmp_path / "base"
    materialise(repo, work.head(), base, view)
    sha = work.commit({"README.md": "two\n"})
    new_tree = repo[sha].peel(pygit2.Commit).tree
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    # A manifest written under another view (another deny-list or scope) is not used
    assert build(repo, new_tree, base, tmp, View(DenyList()), sha) is None
    # A commit the repository no longer holds cannot be compared with
    manifest = Manifest.read_from(base)
    assert manifest is not None
    os.chmod(base, 0o755)
    (base / MANIFEST_NAME).unlink()
    (base / MANIFEST_NAME).write_bytes(
        Manifest("0" * 40, view.fingerprint, manifest.entries).dump()
    )
    assert build(repo, new_tree, base, tmp, view, sha) is None
    # Nor a manifest cut short, or none at all
    (base / MANIFEST_NAME).unlink()
    (base / MANIFEST_NAME).write_bytes(manifest.dump()[:-5])
    assert build(repo, new_tree, base, tmp, view, sha) is None
    (base / MANIFEST_NAME).unlink()
    assert build(repo, new_tree, base, tmp, view, sha) is None
    assert list(tmp.iterdir()) == []  # nothing was written for a base that cannot serve


def test_where_links_are_impossible_files_are_written_instead(
    work: GitWorkTree, tmp_path: Path
) -> None:
    # Given a base on another filesystem than the new snapshot (hard links fail with EXDEV)
    shm = Path("/dev/shm")
    if not shm.is_dir() or os.stat(shm).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("needs /dev/shm on a filesystem of its own")
    repo = pygit2.Repository(str(work.path))
    view = View(DENY)
    base = shm / f"codeask-test-{os.getpid()}-{tmp_path.name}"
    try:
        materialise(repo, work.head(), base, view)
        sha = work.commit({"README.md": "two\n"})
        tmp = tmp_path / "tmp"
        tmp.mkdir()
        # When a snapshot is built from it
        built = build(repo, repo[sha].peel(pygit2.Commit).tree, base, tmp, view, sha)
        # Then every file is written (copied from the object database), none linked
        assert built is not None
        assert tree(tmp) == tree(whole(work, sha, tmp_path / "whole", view))
        assert all(os.lstat(tmp / rel).st_nlink == 1 for rel in built[0].entries)
    finally:
        remove_tree(base)


def test_disk_for_two_snapshots_is_one_tree_plus_the_change(
    store: MirrorStore, work: GitWorkTree
) -> None:
    from codeask.mirror.diskuse import disk_usage

    spec = RepoSpec.parse(str(work.path))
    store.sync(spec)
    one = disk_usage(store.snapshot_root)
    work.commit({"src/app.py": "print('v2')\n"})
    store.sync(spec)
    two = disk_usage(store.snapshot_root)
    # Counted by unique inode: the second snapshot adds its one new file, its directories and
    # its manifest; a naive sum counts every shared file twice
    # (the changed file, the new manifest, and README.md: top-level files are always written)
    assert two.files == one.files + 3
    assert two.naive_bytes > two.bytes


def test_pruning_frees_the_old_snapshot_and_its_spare_and_nothing_the_others_hold(
    tmp_path: Path, work: GitWorkTree
) -> None:
    from codeask.mirror.diskuse import disk_usage

    # Given snapshots of two commits, the second built from the first, and a spare of the first
    # (made after a follow-up pinned to it), which links every one of its files
    store = MirrorStore(tmp_path / "m", tmp_path / "s", DENY, snapshots_keep=2)
    spec = RepoSpec.parse(str(work.path))
    old = store.sync(spec).snapshot
    work.commit({"src/app.py": "print('v2')\n"})
    mid = store.sync(spec).snapshot
    assert store.prepare_next(spec, old)
    only_old = os.lstat(old.root / "src/app.py")
    shared = os.lstat(old.root / "src/lib/util.py")
    assert only_old.st_nlink == 2 and shared.st_nlink == 3  # old, its spare; and mid
    # When the first is unused for ten minutes and a third commit (made from the spare) makes it
    # one snapshot too many
    os.utime(old.root, (0, 0))
    work.commit({"docs/guide.md": "v2\n"})
    new = store.sync(spec).snapshot
    # Then it is gone, and what stays on disk is exactly what the two remaining snapshots hold,
    # each file counted once: the files only the first held were freed
    assert sorted(store.snapshot_dir(spec).iterdir()) == sorted([mid.root, new.root])
    left = _file_inodes(store.snapshot_root)
    assert left == _file_inodes(mid.root) | _file_inodes(new.root)
    assert (only_old.st_dev, only_old.st_ino) not in left
    both = disk_usage(mid.root, new.root)
    assert both.files == len(left) and both.bytes < both.naive_bytes
    # And a file the first shared is still whole in the others, held by them alone
    assert os.lstat(mid.root / "src/lib/util.py").st_ino == shared.st_ino
    assert os.lstat(new.root / "src/lib/util.py").st_nlink == 2
    assert (new.root / "src/lib/util.py").read_text() == "def u(): pass\n"


def _file_inodes(root: Path) -> set[tuple[int, int]]:
    """The files (and symlinks) under `root`, as the inodes that hold them."""
    out = set()
    for d, _, files in os.walk(root):
        for name in files:
            st = os.lstat(os.path.join(d, name))
            out.add((st.st_dev, st.st_ino))
    return out


def test_pruning_the_old_snapshot_leaves_the_new_one_whole(
    tmp_path: Path, work: GitWorkTree
) -> None:
    store = MirrorStore(tmp_path / "m", tmp_path / "s", DENY, snapshots_keep=1)
    spec = RepoSpec.parse(str(work.path))
    old = store.sync(spec).snapshot
    then = 0
    os.utime(old.root, (then, then))
    work.commit({"src/app.py": "print('v2')\n"})
    new = store.sync(spec).snapshot
    assert not old.root.exists()  # pruned: unused for longer than ten minutes, beyond `keep`
    assert (new.root / "README.md").read_text() == "hello\n"
    assert os.lstat(new.root / "README.md").st_nlink == 1  # the last snapshot holding it


def test_each_scope_gets_snapshots_of_its_own_holding_only_its_paths(
    store: MirrorStore, work: GitWorkTree, tmp_path: Path
) -> None:
    base_spec = RepoSpec.parse(str(work.path))
    docs = RepoSpec(base_spec.name, base_spec.url, scope=PathScope().narrow(["docs/**"]))
    whole_repo = store.sync(base_spec).snapshot
    scoped = store.sync(docs).snapshot
    assert scoped.root != whole_repo.root and scoped.root.parent == whole_repo.root.parent
    assert set(tree(scoped.root)) == {"docs", "docs/guide.md", "docs/latest"} - {"docs"}
    # A commit inside the scope and one outside it: each scoped snapshot is built from the last
    work.commit({"docs/guide.md": "guide v2\n", "src/app.py": "print('v3')\n"})
    again = store.sync(docs).snapshot
    assert tree(again.root) == tree(whole(work, again.sha, tmp_path / "w", View(DENY, docs.scope)))
    assert inode(again.root / "docs/latest") == inode(scoped.root / "docs/latest")


def _move(work: GitWorkTree, src: str, dst: str) -> str:
    (work.path / dst).parent.mkdir(parents=True, exist_ok=True)
    work.git("mv", src, dst)
    return work.commit()


def _gitlink(work: GitWorkTree, path: str) -> str:
    work.git("update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},{path}")
    work.git("commit", "-q", "-m", "submodule")
    return work.head()
