"""A spare: a hard-linked copy of the newest snapshot, made after an answer, that the next commit's
snapshot is made from by changing only what the commit changed."""

from __future__ import annotations

import errno
import os
import stat
import uuid
from pathlib import Path

import pygit2

from codeask.mirror.incremental import build, delta
from codeask.mirror.manifest import MANIFEST_NAME, Manifest, entry_text, parse_entry
from codeask.mirror.materialise import (
    FILE_PERM,
    MODE_LINK,
    View,
    inodes,
    publish,
    remove_tree,
    write_blob,
    write_link,
)

# `.spare-<snapshot name>-<random>`: it lives as long as the snapshot it was copied from.
PREFIX = ".spare-"


def prepare(repo: pygit2.Repository, snapshot: Path, view: View) -> bool:
    """Make a spare of `snapshot` unless its view has one; whether one was made.

    Costs a hard link per file and a directory per directory, off the question's path (the
    worker calls it after posting its answer); the next commit's snapshot, whichever process
    writes it, then costs only what that commit changed. Making a snapshot takes the spare.
    """
    repo_dir = snapshot.parent
    try:
        names = [e.name for e in os.scandir(repo_dir)]
    except OSError:
        return False
    if any(n.startswith(PREFIX) and f"-{view.fingerprint}-" in n for n in names):
        return False
    manifest = Manifest.read_from(snapshot)
    if manifest is None or manifest.view != view.fingerprint:
        return False
    source = snapshot.name
    tmp = repo_dir / f".tmp-{PREFIX[1:]}{source}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    os.mkdir(tmp)
    try:
        tree = repo[manifest.sha].peel(pygit2.Commit).tree
        built = build(repo, tree, snapshot, tmp, view, manifest.sha)
        if built is None:
            remove_tree(tmp)
            return False
        publish(tmp, *built, repo_dir / f"{PREFIX}{source}-{uuid.uuid4().hex[:8]}")
    except BaseException:
        remove_tree(tmp)
        raise
    return True


def orphans(repo_dir: Path, snapshots: set[str]) -> list[Path]:
    """Spares whose snapshot is gone (a spare lives as long as the snapshot it copies)."""
    try:
        names = [e.name for e in os.scandir(repo_dir) if e.name.startswith(PREFIX)]
    except OSError:
        return []
    return [repo_dir / n for n in names if n[len(PREFIX) : -9] not in snapshots]


def of(snapshot: Path) -> list[Path]:
    """The spares made of `snapshot` (at most one per process racing to make one)."""
    try:
        names = [e.name for e in os.scandir(snapshot.parent)]
    except OSError:
        return []
    own = f"{PREFIX}{snapshot.name}-"
    return [snapshot.parent / n for n in names if n.startswith(own) and len(n) == len(own) + 8]


def claim(repo_dir: Path, view: View, tmp: Path) -> bool:
    """Take a spare of this view for the caller's own, renamed to `tmp`; whether there was one.

    A rename is atomic, so two writers never take the same spare.
    """
    try:
        names = sorted(e.name for e in os.scandir(repo_dir))
    except OSError:
        return False
    for name in names:
        if name.startswith(PREFIX) and f"-{view.fingerprint}-" in name:
            try:
                os.rename(repo_dir / name, tmp)
            except OSError:
                continue  # taken by another writer a moment ago
            return True
    return False


def apply(
    repo: pygit2.Repository, root: Path, new_tree: pygit2.Tree, view: View, sha: str
) -> tuple[Manifest, list[str]] | None:
    """Turn the claimed spare at `root` into a snapshot of `new_tree`: remove what the commit
    removed, write what it added. Returns the manifest and the directories to seal, or None when
    the spare cannot serve (its commit is gone from the repository); raises OSError when its
    tree does not fit the change (the caller then throws it away)."""
    old = Manifest.read_from(root)
    if old is None or old.view != view.fingerprint:
        return None
    if old.changed_dirs(root):
        return None  # something changed it since it was sealed: not to be trusted
    change = delta(repo, old, new_tree, view)
    if change is None:
        return None
    touched: set[str] = {""}
    gone: set[str] = set()
    os.chmod(root, 0o755)
    os.unlink(root / MANIFEST_NAME)
    # A moved file is kept under a name of its own until its new directory exists.
    was = {parse_entry(old.entries[p])[:2]: p for p in change.removed}
    staged: dict[str, str] = {}
    for i, (path, blob) in enumerate(change.added.items()):
        if (source := was.get(blob)) is not None:
            staged[path] = f".codeask-moving-{i}"
            os.link(root / source, root / staged[path], follow_symlinks=False)
    for path in sorted(change.removed, reverse=True):
        parent = path.rpartition("/")[0]
        _writable(root, parent, touched)
        os.unlink(root / path)
        _drop_empty(root, parent, touched, gone)
    entries = old.entries
    for path in change.removed:
        del entries[path]
    written: dict[str, tuple[int, str]] = {}
    for path, (mode, oid) in sorted(change.added.items()):
        parent, _, name = path.rpartition("/")
        _make_dirs(root, parent, touched)
        target = os.path.join(root, path)
        if path in staged:
            os.rename(root / staged[path], target)
            ok = True
        elif mode == MODE_LINK:
            ok = write_link(repo.odb, oid, target)
        else:
            ok = write_blob(repo.odb, oid, target, FILE_PERM[mode])
        if ok:
            written[path] = (mode, oid)
    by_dir: dict[str, dict[str, tuple[int, str]]] = {}
    for path, blob in written.items():
        parent, _, name = path.rpartition("/")
        by_dir.setdefault(parent, {})[name] = blob
    for parent, names in by_dir.items():
        prefix = parent + "/" if parent else ""
        for name, ino in inodes(os.path.join(root, parent), names).items():
            entries[prefix + name] = entry_text(*names[name], ino)
    touched.discard("")
    dirs = {d: t for d, t in old.dirs.items() if d not in gone or d in touched}
    return Manifest(sha, view.fingerprint, entries, dirs), sorted(touched)


def _writable(root: Path, rel_dir: str, touched: set[str]) -> None:
    if rel_dir not in touched:
        path = os.path.join(root, rel_dir)
        if not stat.S_ISDIR(os.lstat(path).st_mode):  # chmod follows links: never one of those
            raise NotADirectoryError(errno.ENOTDIR, "not a directory in the spare", path)
        os.chmod(path, 0o755)
        touched.add(rel_dir)


def _drop_empty(root: Path, rel_dir: str, touched: set[str], gone: set[str]) -> None:
    """Remove directories left empty, upwards, as a tree written afresh would not have them."""
    while rel_dir:
        parent = rel_dir.rpartition("/")[0]
        _writable(root, parent, touched)
        try:
            os.rmdir(os.path.join(root, rel_dir))
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                return
            raise
        touched.discard(rel_dir)
        gone.add(rel_dir)
        rel_dir = parent


def _make_dirs(root: Path, rel_dir: str, touched: set[str]) -> None:
    """Make `rel_dir` and its parents; an existing part must be a real directory, never a link."""
    if not rel_dir or rel_dir in touched:
        return
    parent = rel_dir.rpartition("/")[0]
    _make_dirs(root, parent, touched)
    _writable(root, parent, touched)
    path = os.path.join(root, rel_dir)
    try:
        os.mkdir(path, 0o755)
    except FileExistsError:
        _writable(root, rel_dir, touched)
    touched.add(rel_dir)
