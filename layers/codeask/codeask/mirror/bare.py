"""The bare shallow repository of one mirror: opening and checking it, fetching into it, rebuilding it."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import time
import uuid
import zlib
from collections.abc import Callable
from pathlib import Path

import pygit2
from pygit2.enums import RepositoryOpenFlag

from codeask.errors import first_line
from codeask.mirror.materialise import TEMP_IDLE_S, remove_tree
from codeask.mirror.source import forget_repo, open_repo

_TRACKING = "refs/remotes/origin/"
# Lock files libgit2 leaves when killed mid-write; while we hold the mirror lock they are stale.
_GIT_LOCKS = ("packed-refs.lock", "shallow.lock", "FETCH_HEAD.lock", "config.lock")
# What a fetch leaves when killed: libgit2's and git's temporary packs and indexes.
_PACK_TEMP = re.compile(r"^(?:pack_git2_|tmp_pack_|tmp_idx_|tmp_rev_)")
_PACK_FILE = re.compile(r"^pack-[0-9a-f]{40,64}\.(?:pack|idx|rev|keep|bitmap|mtimes|promisor)$")
_HEAD = re.compile(rb"^(?:ref: refs/[^\x00-\x20]+|[0-9a-f]{40}|[0-9a-f]{64})\n?$")
_HEAD_MAX = 512
_CONFIG_MAX = 1 << 16
_INCLUDE = re.compile(rb"(?im)^\s*\[\s*include")
# Files that make libgit2 read another repository's objects or files; codeask never writes them.
_FOREIGN = ("commondir", "objects/info/alternates", "objects/info/http-alternates")
# A directory's entries (dev, inode) this process has checked the layout of.
_checked: set[tuple[Path, int, int]] = set()

Fetch = Callable[[pygit2.Repository, Path], pygit2.Oid]


class Damaged(Exception):
    """The mirror cannot give what a sync relies on; it is a cache, so it is rebuilt."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def open_mirror(mdir: Path) -> pygit2.Repository:
    """The mirror at `mdir`, made empty if missing; Damaged if it is there but unusable.

    The first time this process opens a directory, the files libgit2 will read are checked to be
    what they should be (a FIFO there would hang it, a directory in a file's place fail it); later
    only those it may read again (here the config, the branch's ref in branch_head).
    """
    if not os.path.lexists(mdir):
        _create(mdir)
    try:
        st = os.stat(mdir)
        seen = (mdir, st.st_dev, st.st_ino)
        # libgit2 re-reads a config that changed, even through a handle it holds: checked always.
        fault = _layout_fault(mdir) if seen not in _checked else _config_fault(mdir)
        if fault is not None:
            raise Damaged(fault)
        repo = open_repo(mdir)
    except OSError as exc:
        raise Damaged(f"{mdir.name} cannot be read: {exc.strerror}") from None
    except pygit2.GitError as exc:
        raise Damaged(f"it cannot be opened: {first_line(exc)}") from None
    if not repo.is_bare:
        raise Damaged("its config no longer says it is a bare repository")
    _checked.add(seen)
    return repo


def check_sound(mdir: Path) -> None:
    """Damaged unless every file a fetch reads is of the right kind and a fresh handle opens the
    mirror. Before each fetch, since libgit2 reads more then (the shallow file, every pack index)
    than a sync's cheap path does, and when the remote seems to fail: a config gone bad under a
    handle held open fails every remote call as if the network did."""
    try:
        fault = _layout_fault(mdir)
        if fault is None:
            pygit2.Repository(str(mdir), flags=RepositoryOpenFlag.NO_SEARCH).free()
    except OSError as exc:
        fault = f"{mdir.name} cannot be read: {exc.strerror}"
    except pygit2.GitError as exc:
        fault = f"it cannot be opened: {first_line(exc)}"
    if fault is not None:
        raise Damaged(fault)


def _layout_fault(mdir: Path) -> str | None:
    """What is wrong with the shape of the repository at `mdir`, if anything."""
    if not stat.S_ISDIR(os.lstat(mdir).st_mode):
        return "it is not a directory"
    fault = _files_fault(mdir)
    if fault:
        return fault
    for name in ("objects", "objects/pack", "refs", "refs/heads"):
        fault = _kind_fault(mdir, name, stat.S_ISDIR, "a directory", True)
        if fault:
            return fault
    for entry in os.scandir(mdir / "objects" / "pack"):
        if not entry.is_file(follow_symlinks=False):
            return f"objects/pack/{entry.name} is not a regular file"
    return _loose_fault(mdir / "objects") or _refs_fault(mdir)


def _files_fault(mdir: Path) -> str | None:
    """HEAD, the config and the other files at the top: of the right kind, and what they hold."""
    for name in ("HEAD", "config", "packed-refs", "shallow"):
        fault = _kind_fault(mdir, name, stat.S_ISREG, "a regular file", name in ("HEAD", "config"))
        if fault:
            return fault
    with open(mdir / "HEAD", "rb") as f:
        if not _HEAD.match(f.read(_HEAD_MAX)):
            return "HEAD holds neither a ref nor a commit"
    for name in _FOREIGN:
        if os.path.lexists(mdir / name):
            return f"it has {name}, which no mirror has"
    return _config_fault(mdir)


def _refs_fault(mdir: Path) -> str | None:
    for dirpath, dirnames, filenames in os.walk(mdir / "refs" / "heads"):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            want, kind = (
                (stat.S_ISDIR, "a directory")
                if name in dirnames
                else (stat.S_ISREG, "a regular file")
            )
            if not want(os.lstat(path).st_mode):
                return f"{os.path.relpath(path, mdir)} is not {kind}"
    return None


def _loose_fault(objects: Path) -> str | None:
    """A loose object that does not inflate whole. Fetches write packs only, so a mirror has
    none unless something else wrote them; and libgit2 (up to 1.9) never returns from reading a
    loose object cut short (libgit2 issue #7342), so each one is inflated here first."""
    for sub in os.scandir(objects):
        if len(sub.name) != 2 or not sub.is_dir(follow_symlinks=False):
            continue
        for entry in os.scandir(sub.path):
            where = f"objects/{sub.name}/{entry.name}"
            if not entry.is_file(follow_symlinks=False):
                return f"{where} is not a regular file"
            if not _inflates_whole(Path(entry.path)):
                return f"the loose object {where} is damaged"
    return None


def _inflates_whole(path: Path) -> bool:
    inflate = zlib.decompressobj()
    try:
        data = inflate.decompress(path.read_bytes())
    except (OSError, zlib.error):
        return False
    header, nul, body = data.partition(b"\0")
    kind, _, size = header.partition(b" ")
    return (
        inflate.eof
        and bool(nul)
        and kind in (b"commit", b"tree", b"blob", b"tag")
        and size.isdigit()
        and int(size) == len(body)
    )


def _config_fault(mdir: Path) -> str | None:
    """What is wrong with the config: not a plain file, or one that reads other files (libgit2
    follows an include, and one naming a FIFO hangs it). A mirror's config is init's few lines."""
    fault = _kind_fault(mdir, "config", stat.S_ISREG, "a regular file", True)
    if fault:
        return fault
    with open(mdir / "config", "rb") as f:
        text = f.read(_CONFIG_MAX + 1)
    if len(text) > _CONFIG_MAX:
        return "config is larger than a mirror's"
    if _INCLUDE.search(text):
        return "config includes other files"
    return None


def _kind_fault(
    mdir: Path, name: str, want: Callable[[int], bool], kind: str, required: bool
) -> str | None:
    try:
        mode = os.lstat(mdir / name).st_mode
    except FileNotFoundError:
        return f"{name} is missing" if required else None
    except OSError as exc:  # e.g. a file where one of its folders should be
        return f"{name} cannot be read ({(exc.strerror or '').lower()})"
    return None if want(mode) else f"{name} is not {kind}"


def branch_head(repo: pygit2.Repository, branch: str) -> pygit2.Oid | None:
    """The commit the mirror's branch `branch` points at, if it has one; Damaged if unreadable.

    The files libgit2 reads for it are checked first to be regular files (two lstat calls):
    a FIFO put there would hang every question of a process that already holds the mirror open.
    """
    where = Path(repo.path)
    for name in (f"refs/heads/{branch}", "packed-refs"):
        fault = _kind_fault(where, name, stat.S_ISREG, "a regular file", False)
        if fault:
            raise Damaged(fault)
    try:
        ref = repo.references.get(f"refs/heads/{branch}")
    except (pygit2.GitError, ValueError) as exc:
        raise Damaged(f"its branch {branch!r} cannot be read: {first_line(exc)}") from None
    if ref is None:
        return None
    target = ref.target
    if not isinstance(target, pygit2.Oid):
        raise Damaged(f"its branch {branch!r} is a symbolic ref")
    return target


def check_commit(repo: pygit2.Repository, oid: pygit2.Oid) -> None:
    """Damaged unless the commit `oid` and its root tree can be read: what every sync relies on.

    Two object reads, not an fsck: a damaged blob is found when a snapshot is written from it.
    """
    try:
        commit = repo[oid].peel(pygit2.Commit)
        len(commit.tree)
    except (KeyError, ValueError, pygit2.GitError) as exc:
        raise Damaged(f"commit {str(oid)[:12]} cannot be read: {first_line(exc)}") from None


def clean_leftovers(mdir: Path) -> int:
    """Remove what killed fetches and rebuilds left behind; hold the lock. Returns how many.

    Temporary packs and indexes, zero-byte packs or indexes, a pack without its index or an
    index without its pack, and stale lock files; beside the mirror, abandoned rebuilds.
    """
    removed = 0
    for name in _GIT_LOCKS:
        removed += _unlink(mdir / name)
    pack_dir = mdir / "objects" / "pack"
    try:
        entries = {e.name: e for e in os.scandir(pack_dir)}
    except OSError:
        entries = {}
    for name, entry in entries.items():
        stem, _, ext = name.rpartition(".")
        try:
            size = entry.stat(follow_symlinks=False).st_size
        except OSError:
            continue
        orphan = (
            ext in ("pack", "idx") and f"{stem}.{'idx' if ext == 'pack' else 'pack'}" not in entries
        )
        if _PACK_TEMP.match(name) or (
            _PACK_FILE.match(name) and ext in ("pack", "idx") and (size == 0 or orphan)
        ):
            removed += _unlink(Path(entry.path))
    parent = mdir.parent
    for pattern in (f".trash-{mdir.name}-*", f".tmp-{mdir.name}-*"):
        for old in parent.glob(pattern):
            # Trash is never read again; a .tmp- may be a first mirror being made (without the
            # lock) this very moment, so only an old one counts as abandoned.
            with contextlib.suppress(OSError):
                if pattern.startswith(".trash") or time.time() - old.stat().st_mtime > TEMP_IDLE_S:
                    remove_tree(old)
                    removed += 1
    return removed


def _unlink(path: Path) -> int:
    """Remove a file, or a directory put where a file belongs; 1 if something went."""
    if not os.path.lexists(path):
        return 0
    remove_tree(path)
    return 0 if os.path.lexists(path) else 1


def _create(mdir: Path) -> None:
    """Make an empty bare mirror beside `mdir` and rename it into place in one step."""
    mdir.parent.mkdir(parents=True, exist_ok=True)
    tmp = _new_repo(mdir)
    try:
        os.rename(tmp, mdir)
    except OSError as exc:
        # Another process created it first; theirs is as good as ours.
        remove_tree(tmp)
        if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
            raise


def _new_repo(mdir: Path) -> Path:
    tmp = mdir.with_name(f".tmp-{mdir.name}-{uuid.uuid4().hex[:8]}")
    try:
        pygit2.init_repository(str(tmp), bare=True)
    except BaseException:
        remove_tree(tmp)
        raise
    return tmp


def rebuild(mdir: Path, fetch: Fetch, *, keep_old: bool) -> pygit2.Oid:
    """Replace the mirror at `mdir` by a fresh one filled by `fetch`; hold the lock.

    With `keep_old` the fresh mirror is fetched beside the old one, which is replaced only once
    the fetch worked (the old one may still serve stale answers if it fails); without, the old
    one is moved aside and deleted first, so a full disk has the most room. Returns the commit
    `fetch` fetched, checked readable.
    """
    mdir.parent.mkdir(parents=True, exist_ok=True)
    if not keep_old:
        _discard(mdir)
    tmp = _new_repo(mdir)
    try:
        repo = pygit2.Repository(str(tmp))
        oid = fetch(repo, tmp)
        check_commit(repo, oid)
        del repo
        for attempt in range(3):
            _discard(mdir)
            try:
                os.rename(tmp, mdir)
                break
            except OSError as exc:
                # A reader that found no mirror made an empty one meanwhile: ours replaces it.
                if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY) or attempt == 2:
                    raise
    except BaseException:
        remove_tree(tmp)
        raise
    return oid


def _discard(mdir: Path) -> None:
    """Move the mirror aside (one rename: nobody opens half of it) and delete it."""
    forget_repo(mdir)
    trash = mdir.with_name(f".trash-{mdir.name}-{uuid.uuid4().hex[:8]}")
    try:
        os.rename(mdir, trash)
    except FileNotFoundError:
        return
    remove_tree(trash)


def fetch_ref(
    repo: pygit2.Repository,
    mdir: Path,
    url: str,
    branch: str,
    remote_ref: str,
    callbacks: pygit2.RemoteCallbacks | None,
) -> pygit2.Oid:
    """Fetch `remote_ref` at depth 1 and point local `branch` at its commit; hold the lock."""
    for name in (f"refs/heads/{branch}.lock", f"{_TRACKING}{branch}.lock"):
        _unlink(mdir / name)
    tracking = f"{_TRACKING}{branch}"
    remote = repo.remotes.create_anonymous(url)
    remote.fetch([f"+{remote_ref}:{tracking}"], callbacks=callbacks, depth=1)
    try:
        fetched = repo.references[tracking].target
        assert isinstance(fetched, pygit2.Oid)
        oid = repo[fetched].peel(pygit2.Commit).id  # an annotated tag points at a tag object
    except (KeyError, ValueError) as exc:
        raise Damaged(
            f"what was fetched for {branch!r} cannot be read: {first_line(exc)}"
        ) from None
    # Never merge: a depth-1 history cannot be fast-forwarded, and a force-push must win.
    repo.references.create(f"refs/heads/{branch}", oid, force=True)
    return oid


def fetch_commit(
    repo: pygit2.Repository, url: str, sha: str, callbacks: pygit2.RemoteCallbacks | None
) -> None:
    """Fetch one commit by its full SHA (if the server allows it); hold the lock."""
    remote = repo.remotes.create_anonymous(url)
    remote.fetch([sha], callbacks=callbacks, depth=1)


def pack_bytes(mdir: Path) -> int:
    """The size of the mirror's packs: about what fetching a new commit of it takes again."""
    total = 0
    with contextlib.suppress(OSError):
        for entry in os.scandir(mdir / "objects" / "pack"):
            with contextlib.suppress(OSError):
                total += entry.stat(follow_symlinks=False).st_size
    return total
