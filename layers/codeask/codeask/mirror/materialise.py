"""Writing a commit's tree as a read-only directory, renamed into place whole; removing one."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import uuid
from pathlib import Path

import pygit2

from codeask.denylist import DenyList

# Longer than any Lambda can live, so a live writer's temp dir is never taken for a leftover.
TEMP_IDLE_S = 3600.0

_MODE_TREE = 0o040000
_MODE_BLOB = 0o100644
_MODE_BLOB_GROUP_WRITABLE = 0o100664  # written by very old gits; still a plain file
_MODE_BLOB_EXECUTABLE = 0o100755
_MODE_LINK = 0o120000


def materialise(repo: pygit2.Repository, sha: str, target: Path, deny: DenyList) -> None:
    """Write the commit's tree beside `target`, then rename it into place in one step."""
    commit = repo[sha].peel(pygit2.Commit)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".tmp-{target.name}-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    os.mkdir(tmp)
    try:
        dirs = _write_tree(commit.tree, str(tmp), deny)
        for d in reversed(dirs):
            os.chmod(d, 0o555)
        try:
            os.rename(tmp, target)
        except OSError as exc:
            if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY) or not target.is_dir():
                raise
            remove_tree(tmp)  # another process won the race; its snapshot is identical
        else:
            os.chmod(target, 0o555)
    except BaseException:
        remove_tree(tmp)
        raise


def _safe_entry_name(name: str) -> bool:
    # Tree entries come from the remote: a crafted one must not climb out of the snapshot.
    return name not in ("", ".", "..") and "/" not in name and "\x00" not in name


def _write_tree(root: pygit2.Tree, dest: str, deny: DenyList) -> list[str]:
    """Write the visible entries of `root` under `dest`; returns the dirs made, parents first."""
    dirs: list[str] = []
    stack: list[tuple[pygit2.Tree, str, str]] = [(root, dest, "")]
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    while stack:
        tree, where, prefix = stack.pop()
        for entry in tree:
            name = entry.name
            if name is None or not _safe_entry_name(name):
                continue
            rel = prefix + name
            # Denied paths are never written, so a secret never reaches the snapshot disk.
            if deny.is_denied(rel):
                continue
            mode = entry.filemode
            path = os.path.join(where, name)
            try:
                if mode == _MODE_TREE and isinstance(entry, pygit2.Tree):
                    os.mkdir(path, 0o755)
                    dirs.append(path)
                    stack.append((entry, path, rel + "/"))
                elif not isinstance(entry, pygit2.Blob):
                    continue  # a gitlink (submodule): its commit is not in this repository
                elif mode in (_MODE_BLOB, _MODE_BLOB_GROUP_WRITABLE, _MODE_BLOB_EXECUTABLE):
                    perm = 0o555 if mode == _MODE_BLOB_EXECUTABLE else 0o444
                    fd = os.open(path, flags, perm)
                    try:
                        view = memoryview(entry.data)
                        while view:
                            view = view[os.write(fd, view) :]
                    finally:
                        os.close(fd)
                elif mode == _MODE_LINK:
                    target = entry.data
                    if target and b"\x00" not in target:
                        os.symlink(os.fsdecode(target), path)
            except FileExistsError:
                continue  # a crafted tree with a duplicate name; the first entry wins
    return dirs


def remove_tree(path: Path) -> None:
    """Delete a snapshot-like tree whose read-only directories would otherwise refuse it."""
    if not os.path.lexists(path):
        return
    if os.path.isdir(path) and not os.path.islink(path):
        # os.walk does not follow symlinks, so nothing outside the tree is ever chmod-ed.
        for dirpath, _dirs, _files in os.walk(path):
            with contextlib.suppress(OSError):
                os.chmod(dirpath, 0o700)
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            os.unlink(path)
