"""A snapshot built from an earlier one: unchanged files hard-linked (verified), only the difference written."""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path

import pygit2
from pygit2.enums import DeltaStatus

from codeask.mirror.manifest import Manifest, entry_text, parse_entry
from codeask.mirror.materialise import (
    FILE_PERM,
    MODE_LINK,
    View,
    inodes,
    safe_entry_name,
    write_blob,
    write_link,
)
from codeask.mirror.source import find_commit

# Where a link cannot be made, the file is written from the object database instead: another
# filesystem (EXDEV), an inode at its link limit (EMLINK), a filesystem without hard links.
_CANNOT_LINK = frozenset({errno.EXDEV, errno.EMLINK, errno.EPERM, errno.EACCES, errno.ENOTSUP})
_REMOVED = (DeltaStatus.DELETED, DeltaStatus.MODIFIED, DeltaStatus.TYPECHANGE)
_ADDED = (DeltaStatus.ADDED, DeltaStatus.MODIFIED, DeltaStatus.TYPECHANGE)


@dataclass
class Delta:
    """What differs, under one view, between the commit a snapshot holds and the one wanted."""

    removed: set[str] = field(default_factory=set)  # paths the earlier snapshot holds, to drop
    added: dict[str, tuple[int, str]] = field(default_factory=dict)  # path -> (mode, blob) to write


def delta(
    repo: pygit2.Repository, old: Manifest, new_tree: pygit2.Tree, view: View
) -> Delta | None:
    """The difference between `old`'s commit and `new_tree` (trees compared, nothing checked
    out), or None when it cannot be known: the earlier commit is no longer in the repository."""
    found = find_commit(repo, old.sha)
    if found is None:
        return None
    old_tree = repo[found].peel(pygit2.Commit).tree
    out = Delta()
    # Without INCLUDE_TYPECHANGE a file that became a symlink (or a directory) is a deletion and
    # an addition; renames are not looked for: a moved file is linked by its blob below.
    for d in old_tree.diff_to_tree(new_tree).deltas:
        if d.status in _REMOVED and d.old_file.path in old.entries:
            out.removed.add(d.old_file.path)
        if d.status not in _ADDED:
            continue
        path, mode = d.new_file.path, d.new_file.mode
        if mode not in FILE_PERM and mode != MODE_LINK:
            continue  # a gitlink (submodule) or a tree: never written
        if path in out.added or not all(map(safe_entry_name, path.split("/"))):
            continue
        if view.admits(path):
            out.added[path] = (mode, str(d.new_file.id))
    return out


def build(
    repo: pygit2.Repository,
    new_tree: pygit2.Tree,
    base: Path,
    tmp: Path,
    view: View,
    sha: str,
) -> tuple[Manifest, list[str]] | None:
    """Write `new_tree` into the empty `tmp` from the snapshot `base`; None (nothing written)
    when `base` cannot serve: no manifest, another view, its commit gone from the repository, or
    a tree whose entries would collide (a path both a file and a directory)."""
    old = Manifest.read_from(base)
    if old is None or old.view != view.fingerprint:
        return None
    change = delta(repo, old, new_tree, view)
    if change is None:
        return None
    removed, added = change.removed, change.added
    # Link from the base: every unchanged file at its own path, and a moved file (the blob and
    # mode of one removed) from where it was. Whatever cannot be linked is written.
    groups: dict[str, list[tuple[str, str, str]]] = {}  # base dir -> (name, target, entry)
    for path, text in old.entries.items():
        if path in removed or path in added:
            continue
        d, _, name = path.rpartition("/")
        group = groups.get(d)
        if group is None:
            group = groups[d] = []
        group.append((name, path, text))
    was = {_blob(old.entries[p]): p for p in removed}
    for path, (mode, oid) in added.items():
        if (source := was.get((mode, oid))) is not None:
            d, _, name = source.rpartition("/")
            groups.setdefault(d, []).append((name, path, old.entries[source]))
    dirs = _dirs(groups, added)
    if any(p in dirs for p in added) or any(p in old.entries and p not in removed for p in dirs):
        return None  # only a crafted tree gets here; the whole write handles it as always
    root = str(tmp)
    for d in sorted(dirs):
        os.mkdir(os.path.join(root, d), 0o755)
    entries = _link_all(base, root, groups, old.dirs)
    todo = {p: b for p, b in added.items() if p not in entries}
    for items in groups.values():
        todo.update((target, _blob(text)) for _, target, text in items if target not in entries)
    entries.update(_write_all(repo.odb, root, todo))
    return Manifest(sha, view.fingerprint, entries), sorted(dirs)


def _blob(text: str) -> tuple[int, str]:
    mode, oid, _ = parse_entry(text)
    return mode, oid


def _dirs(groups: dict[str, list[tuple[str, str, str]]], added: dict[str, tuple[int, str]]) -> set[str]:  # fmt: skip
    """Every directory the new tree needs, their parents included (not the root): those that
    keep a file (a kept file's target is not among the added), and those of added files."""
    dirs: set[str] = set()
    for where in chain(
        (d for d, items in groups.items() if any(t not in added for _, t, _ in items)),
        (p.rpartition("/")[0] for p in added),
    ):
        d = where
        while d and d not in dirs:
            dirs.add(d)
            d = d.rpartition("/")[0]
    return dirs


def _link_all(
    base: Path, root: str, groups: dict[str, list[tuple[str, str, str]]], times: dict[str, int]
) -> dict[str, str]:
    """Hard-link each target from its source in `base`, if the source's directory is unchanged
    since the base was sealed (`times`) and the source is still the inode its manifest names: a
    file removed or replaced since (a damaged or half-pruned base) is left out, to be written
    afresh. Returns the entries linked."""
    out: dict[str, str] = {}
    targets: dict[str, int] = {}  # open target directories
    try:
        for d, items in groups.items():
            src = _open_dir(base, d)
            if src is None:
                continue
            try:
                # The root's time moves whenever the snapshot is used: its files are written.
                if os.fstat(src).st_mtime_ns != times.get(d):
                    continue
                present = inodes(src)
                for name, target, text in items:
                    if present.get(name) != int(text[text.rindex(" ") + 1 :]):
                        continue
                    target_dir, _, target_name = target.rpartition("/")
                    dst = targets.get(target_dir)
                    if dst is None:
                        dst = targets[target_dir] = _open_target(root, target_dir)
                    if _link(src, name, dst, target_name):
                        out[target] = text
            finally:
                os.close(src)
            # Most links stay in their own directory: keep few target directories open.
            for fd in targets.values():
                os.close(fd)
            targets.clear()
    finally:
        for fd in targets.values():
            os.close(fd)
    return out


def _open_target(root: str, rel_dir: str) -> int:
    return os.open(os.path.join(root, rel_dir), os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)


def _write_all(odb: pygit2.Odb, root: str, todo: dict[str, tuple[int, str]]) -> dict[str, str]:
    """Write blobs and symlinks from the object database; the entries written, with inodes."""
    by_dir: dict[str, dict[str, tuple[int, str]]] = {}
    for path, blob in todo.items():
        d, _, name = path.rpartition("/")
        by_dir.setdefault(d, {})[name] = blob
    out: dict[str, str] = {}
    for d, names in by_dir.items():
        fd = _open_target(root, d)
        try:
            written = {}
            for name, (mode, oid) in names.items():
                if mode == MODE_LINK:
                    ok = write_link(odb, oid, name, dir_fd=fd)
                else:
                    ok = write_blob(odb, oid, name, FILE_PERM[mode], dir_fd=fd)
                if ok:
                    written[name] = (mode, oid)
            prefix = d + "/" if d else ""
            for name, ino in inodes(fd, written).items():
                out[prefix + name] = entry_text(*written[name], ino)
        finally:
            os.close(fd)
    return out


def _open_dir(base: Path, rel_dir: str) -> int | None:
    """A descriptor on the base's directory, or None if it is gone (its files are written)."""
    try:
        return os.open(os.path.join(base, rel_dir), os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a symlink where the directory was: not ours to follow
            return None
        raise


def _link(src_fd: int, src: str, dst_fd: int, dst: str) -> bool:
    try:
        os.link(src, dst, src_dir_fd=src_fd, dst_dir_fd=dst_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False  # pruned between the check and the link
    except OSError as exc:
        if exc.errno in _CANNOT_LINK:
            return False
        raise
    return True
