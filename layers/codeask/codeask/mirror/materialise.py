"""Writing a commit's tree as a read-only directory, renamed into place whole; removing one."""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import os
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pygit2

from codeask.denylist import DenyList
from codeask.mirror import space
from codeask.mirror.manifest import Manifest, entry_text
from codeask.ops import logger
from codeask.scope import PathScope

# Longer than any Lambda can live, so a live writer's temp dir is never taken for a leftover.
TEMP_IDLE_S = 3600.0

MODE_TREE = 0o040000
MODE_LINK = 0o120000
_MODE_BLOB = 0o100644
_MODE_BLOB_GROUP_WRITABLE = 0o100664  # written by very old gits; still a plain file
_MODE_BLOB_EXECUTABLE = 0o100755
FILE_PERM = {_MODE_BLOB: 0o444, _MODE_BLOB_GROUP_WRITABLE: 0o444, _MODE_BLOB_EXECUTABLE: 0o555}
CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True)
class View:
    """What a snapshot holds of a commit's tree: nothing deny-listed, nothing outside the scope."""

    deny: DenyList
    scope: PathScope = PathScope()

    def admits(self, rel: str) -> bool:
        return not self.deny.is_denied(rel) and self.scope.admits(rel)

    def may_hold(self, rel_dir: str) -> bool:
        return not self.deny.is_denied(rel_dir) and self.scope.may_hold(rel_dir)

    @functools.cached_property
    def fingerprint(self) -> str:
        """Names the snapshots written under this view; unscoped, it is the deny-list's own."""
        deny = self.deny.fingerprint()
        if self.scope.whole:
            return deny
        return hashlib.sha256(f"{deny}\n{self.scope.fingerprint()}".encode()).hexdigest()[:12]


def materialise(
    repo: pygit2.Repository, sha: str, target: Path, view: View, *, base: Path | None = None
) -> tuple[str, ...]:
    """Write the commit's tree beside `target`, then rename it into place in one step.

    The cheapest way that holds is taken: a spare of this view (a hard-linked copy of an earlier
    snapshot, see spare.py) changed by what differs between the commits; else, with `base` (a
    snapshot of another commit under the same view), every unchanged file hard-linked from it,
    verified against its manifest first, and only the rest written; else the whole tree.
    Returns the visible paths written (files and symlinks, sorted), so the caller need not walk
    the tree again to list it.
    """
    from codeask.mirror import incremental, spare

    commit = repo[sha].peel(pygit2.Commit)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".tmp-{target.name}-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    built = None
    try:
        if spare.claim(target.parent, view, tmp):
            built = _cheaper(lambda: spare.apply(repo, tmp, commit.tree, view, sha), tmp, sha)
        if built is None:
            os.mkdir(tmp)
        if built is None and base is not None:
            build = lambda: incremental.build(repo, commit.tree, base, tmp, view, sha)  # noqa: E731
            built = _cheaper(build, tmp, sha)
            if built is None:
                os.mkdir(tmp)
        if built is None:
            built = write_whole(repo.odb, commit.tree, tmp, view, sha)
        manifest, dirs = built
        publish(tmp, manifest, dirs, target)
    except BaseException:
        remove_tree(tmp)
        raise
    return tuple(sorted(manifest.entries))


def tree_blobs(repo: pygit2.Repository, sha: str, view: View) -> dict[str, str]:
    """The blob id of every file of the commit the view holds, by path, as `materialise` would
    write it; reads trees only, never a blob."""
    plan = _plan(repo[sha].peel(pygit2.Commit).tree, "", view)
    return {rel: str(oid) for _, rel, oid, _ in plan.files}


def _cheaper(
    build: Callable[[], tuple[Manifest, list[str]] | None], tmp: Path, sha: str
) -> tuple[Manifest, list[str]] | None:
    """Run one of the cheaper ways; when it cannot serve or fails, `tmp` is gone and None comes
    back, for the next way to start afresh. Disk full is raised: it is not the way's fault."""
    try:
        built = build()
    except (OSError, ValueError) as exc:  # ValueError: an entry of a forged manifest
        # Disk full is not a reason to try again writing everything: it is the caller's to handle.
        if space.is_full(exc):
            raise
        # The spare or base went away or broke under us: the next way is always right.
        logger.warning("incremental snapshot failed; writing it another way",
                       extra={"sha": sha, "error": f"{type(exc).__name__}: {exc}"})  # fmt: skip
        built = None
    if built is None:
        remove_tree(tmp)
    return built


def publish(tmp: Path, manifest: Manifest, dirs: list[str], target: Path) -> None:
    """Seal a written tree (manifest in, read-only) and rename it to `target` in one step;
    `dirs` are the directories written or changed (the root aside), whose times are noted."""
    manifest.note_dirs(tmp, dirs)
    manifest.write_into(tmp)
    for d in sorted(dirs, reverse=True):
        os.chmod(os.path.join(tmp, d), 0o555)
    try:
        os.rename(tmp, target)
    except OSError as exc:
        if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY) or not target.is_dir():
            raise
        remove_tree(tmp)  # another process won the race; its snapshot is identical
    else:
        os.chmod(target, 0o555)


def safe_entry_name(name: str) -> bool:
    # Tree entries come from the remote: a crafted one must not climb out of the snapshot.
    return name not in ("", ".", "..") and "/" not in name and "\x00" not in name


@dataclass
class _Plan:
    """What a tree becomes on disk: directories (parents first), files and symlinks to write."""

    dirs: list[str] = field(default_factory=list)  # relative to the root
    # (path, path relative to the root, blob, git file mode)
    files: list[tuple[str, str, pygit2.Oid, int]] = field(default_factory=list)
    links: list[tuple[str, str, pygit2.Oid]] = field(default_factory=list)

    def write(self, odb: pygit2.Odb, root: str) -> dict[str, tuple[int, str]]:
        """Make the directories, files and links; returns the relative paths written.

        Measured on 20k-file trees: the blob reads hold the GIL, so writer threads gained nothing
        on tmpfs and were lost in the noise on a disk-bound ext4; three syscalls per file it is.
        """
        written: dict[str, tuple[int, str]] = {}
        for d in self.dirs:
            os.mkdir(os.path.join(root, d), 0o755)
        for path, rel, oid, mode in self.files:
            if write_blob(odb, oid, path, FILE_PERM[mode]):
                written[rel] = (mode, str(oid))
        for path, rel, oid in self.links:
            if write_link(odb, oid, path):
                written[rel] = (MODE_LINK, str(oid))
        return written


def write_blob(odb: pygit2.Odb, oid: pygit2.Oid | str, path: str, perm: int, dir_fd: int | None = None) -> bool:  # fmt: skip
    """Write a blob as a new read-only file; False if the name is taken (a crafted duplicate)."""
    try:
        fd = os.open(path, CREATE, perm, dir_fd=dir_fd)
    except FileExistsError:
        return False  # a crafted tree with a duplicate name; the first entry wins
    try:
        space.write_all(fd, odb.read(oid)[1])
    finally:
        os.close(fd)
    return True


def write_link(odb: pygit2.Odb, oid: pygit2.Oid | str, path: str, dir_fd: int | None = None) -> bool:  # fmt: skip
    """Recreate a symlink; False for an empty or NUL-holding target, or a taken name."""
    target = odb.read(oid)[1]
    if not target or b"\x00" in target:
        return False
    try:
        os.symlink(os.fsdecode(target), path, dir_fd=dir_fd)
    except FileExistsError:
        return False
    return True


def inodes(where: str | int, only: dict[str, tuple[int, str]] | None = None) -> dict[str, int]:
    """Inode numbers of a directory's entries (given by path or descriptor), read from the
    directory itself: no stat per file, and the same numbers whoever reads them."""
    with os.scandir(where) as it:
        return {e.name: e.inode() for e in it if only is None or e.name in only}


def write_whole(
    odb: pygit2.Odb, tree: pygit2.Tree, tmp: Path, view: View, sha: str
) -> tuple[Manifest, list[str]]:
    """Every visible entry of `tree` written into the empty directory `tmp`."""
    root = str(tmp)
    plan = _plan(tree, root, view)
    written = plan.write(odb, root)
    entries: dict[str, str] = {}
    for d in ["", *plan.dirs]:
        prefix = d + "/" if d else ""
        for name, ino in inodes(os.path.join(root, d)).items():
            rel = prefix + name
            if rel in written:
                entries[rel] = entry_text(*written[rel], ino)
    return Manifest(sha, view.fingerprint, entries), plan.dirs


def _plan(root: pygit2.Tree, dest: str, view: View) -> _Plan:
    """The visible entries of `root` under `dest`; denied paths are left out, never written."""
    plan = _Plan()
    seen_dirs: set[str] = set()
    needed: set[str] = set()
    stack: list[tuple[pygit2.Tree, str, str]] = [(root, dest, "")]
    while stack:
        tree, where, prefix = stack.pop()
        for entry in tree:
            name = entry.name
            if name is None or not safe_entry_name(name):
                continue
            rel = prefix + name
            mode = entry.filemode
            path = os.path.join(where, name)
            if mode == MODE_TREE and isinstance(entry, pygit2.Tree):
                # Denied paths and paths outside the scope are never written, so a secret (or
                # another team's code) never reaches the snapshot disk.
                if rel in seen_dirs or not view.may_hold(rel):
                    continue  # seen: a crafted tree with a duplicate name; the first entry wins
                seen_dirs.add(rel)
                plan.dirs.append(rel)
                stack.append((entry, path, rel + "/"))
            elif not isinstance(entry, pygit2.Blob) or not view.admits(rel):
                continue  # not a blob: a gitlink (submodule), its commit is not in this repository
            elif mode in FILE_PERM:
                plan.files.append((path, rel, entry.id, mode))
                needed.add(prefix[:-1])
            elif mode == MODE_LINK:
                plan.links.append((path, rel, entry.id))
                needed.add(prefix[:-1])
    # Only directories that hold something: one whose files are all denied or out of scope is
    # not made, just as a snapshot built from an earlier one would not have it.
    for d in reversed(plan.dirs):
        if d in needed:
            needed.add(d.rpartition("/")[0])
    plan.dirs = [d for d in plan.dirs if d in needed]
    return plan


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
