"""Immutable snapshots on local disk: one per commit and deny-list, cached, checked, touched and pruned."""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import pygit2

from codeask.denylist import DenyList
from codeask.errors import DiskFull, RepoUnavailable, first_line
from codeask.mirror import space
from codeask.mirror.materialise import TEMP_IDLE_S, materialise, remove_tree
from codeask.mirror.result import OnRepair, Repair
from codeask.mirror.space import Free, is_full
from codeask.snapshot import RepoRef, Snapshot

_SNAPSHOT_DIR_RE = re.compile(r"^[0-9a-f]{40,64}-[0-9a-f]{12}$")
_SNAPSHOT_IDLE_S = 600.0  # a snapshot untouched this long is nobody's current answer
_TOUCH_EVERY_S = 60.0
_CACHE_MAX = 16
# Beside each snapshot directory: written after its last file and before it is renamed into
# place, so a snapshot is complete iff its marker exists (and the tree still matches it).
_MARKER = ".complete"
_MARKER_MAX = 1 << 16
_SAMPLES = 8  # files whose size is checked on every use: a cheap look for a partly cleaned tree
_BLOCK = 4096

# Shared by every store in the process, so warm Lambda invocations reuse them.
_guard = threading.Lock()
# Least recently used last out; each entry may hold a large file list.
_cache: OrderedDict[tuple[Path, RepoRef], Snapshot] = OrderedDict()
_touched: dict[Path, float] = {}
_pruned: dict[Path, float] = {}


class ObjectsUnreadable(Exception):
    """The repository could not give an object a snapshot needs: missing, or damaged."""


@dataclass(frozen=True)
class _Tally:
    """What a snapshot tree holds, as its marker records it and a walk of the tree finds it."""

    entries: int  # files, symlinks and directories
    bytes: int  # the sizes of its regular files
    sample: tuple[tuple[str, int], ...]  # a few files spread over the tree, with their sizes


class Snapshots:
    """Snapshots under `root/<repo key>/<sha>-<deny fingerprint>`, keeping `keep` per repo."""

    def __init__(
        self, root: Path, deny: DenyList, keep: int, on_repair: OnRepair | None = None
    ) -> None:
        self.root = root
        self.deny = deny
        self.keep = max(1, keep)
        self.on_repair = on_repair
        self._fingerprint = deny.fingerprint()

    def at(self, repo: pygit2.Repository, key: str, sha: str, ref: RepoRef) -> Snapshot:
        """The snapshot of commit `sha` of `repo`, written on first use; `key` names the repo.

        Raises ObjectsUnreadable if the repository cannot give what the tree needs, DiskFull if
        the disk stays full after old snapshots were removed.
        """
        repo_dir = self.root / key
        target = repo_dir / f"{sha}-{self._fingerprint}"
        cache_key = (target, ref)
        with _guard:
            cached = _cache.get(cache_key)
            if cached is not None:
                _cache.move_to_end(cache_key)
        # Used in this process already: the marker and a few files' sizes. First use here: a
        # walk of the whole tree against its marker (the walk a listing would make anyway).
        fault = _fault(target, whole=cached is None)
        if cached is not None and fault is None:
            self._touch(target)
            self._maybe_prune(repo_dir, target)
            return cached
        listing = None
        if fault is not None:
            if fault != _MISSING and _fault(target, whole=True) is not None:
                self._evict(target)  # never served half there: written again instead
                if self.on_repair is not None:
                    self.on_repair(Repair(ref.name, "snapshot", f"{target.name}: {fault}"))
            listing = self._write(repo, sha, target, ref.name)
        self._touch(target, force=True)
        snapshot = Snapshot(root=target, sha=sha, repo=ref, deny=self.deny)
        if listing is not None:
            snapshot.seed_files(listing)
        with _guard:
            _cache[cache_key] = snapshot
            while len(_cache) > _CACHE_MAX:
                _cache.popitem(last=False)
        self._maybe_prune(repo_dir, target, force=listing is not None)
        return snapshot

    def _write(self, repo: pygit2.Repository, sha: str, target: Path, name: str) -> tuple[str, ...]:
        """Materialise with a marker; on a full disk, free old snapshots and try once more."""
        try:
            return self._materialise(repo, sha, target)
        except OSError as exc:
            if not is_full(exc):
                raise self._unwritable(name, exc) from None
        need = _need(repo, sha)
        evicted = self.reclaim(need, keep={target})
        if evicted or _room(self.root, need):
            try:
                return self._materialise(repo, sha, target)
            except OSError as exc:
                if not is_full(exc):
                    raise self._unwritable(name, exc) from None
        have = _fmt_free(self.root)
        raise DiskFull(
            f"no space left under {self.root} for the snapshot of {name} at {sha[:7]} "
            f"(it needs about {need.bytes / 1e6:.1f} MB in {need.inodes} files and folders; "
            f"{have} after removing {evicted} older snapshot{'s' if evicted != 1 else ''})"
        )

    def _materialise(self, repo: pygit2.Repository, sha: str, target: Path) -> tuple[str, ...]:
        marker = _marker_of(target)

        def mark(tmp: Path) -> None:
            tally = _tally(tmp, sample=True)
            data = {"entries": tally.entries, "bytes": tally.bytes, "sample": tally.sample}
            part = marker.with_name(f".tmp-{marker.name}-{uuid.uuid4().hex[:8]}")
            try:
                part.write_text(json.dumps(data, ensure_ascii=True), encoding="utf-8")
                os.replace(part, marker)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(part)
                raise

        try:
            return materialise(repo, sha, target, self.deny, before_rename=mark)
        except (KeyError, pygit2.GitError) as exc:
            raise ObjectsUnreadable(first_line(exc)) from None

    def reclaim(self, need: Free, keep: set[Path] | frozenset[Path] = frozenset()) -> int:
        """Free room for `need` on the snapshot disk: leftovers first, then snapshots of any repo
        nobody used for ten minutes (one used since may be an answer's in progress), least
        recently used first, until the disk says there is room; returns how many went.

        Room is read from the filesystem after each removal, never summed from sizes: a file
        hard-linked into several snapshots frees nothing until the last of them goes.
        """
        candidates: list[tuple[float, Path]] = []
        try:
            repo_dirs = [Path(e.path) for e in os.scandir(self.root) if e.is_dir()]
        except OSError:
            return 0
        now = time.time()
        for repo_dir in repo_dirs:
            try:
                entries = list(os.scandir(repo_dir))
            except OSError:
                continue
            for entry in entries:
                path = Path(entry.path)
                try:
                    mtime = entry.stat(follow_symlinks=False).st_mtime
                except OSError:
                    continue
                if entry.name.startswith(".trash-") or (
                    entry.name.startswith(".tmp-") and now - mtime > TEMP_IDLE_S
                ):
                    remove_tree(path)
                elif (
                    _SNAPSHOT_DIR_RE.match(entry.name)
                    and path not in keep
                    and now - mtime > _SNAPSHOT_IDLE_S
                ):
                    candidates.append((mtime, path))
        candidates.sort()
        evicted = 0
        for _mtime, path in candidates:
            if _room(self.root, need):
                break
            self._evict(path)
            evicted += 1
        return evicted

    def _touch(self, target: Path, *, force: bool = False) -> None:
        now = time.monotonic()
        last = _touched.get(target)
        if force or last is None or now - last >= _TOUCH_EVERY_S:
            with contextlib.suppress(OSError):
                os.utime(target)
            _touched[target] = now

    def _maybe_prune(self, repo_dir: Path, current: Path, *, force: bool = False) -> None:
        now = time.monotonic()
        last = _pruned.get(repo_dir)
        if not force and last is not None and now - last < _SNAPSHOT_IDLE_S:
            return
        _pruned[repo_dir] = now
        self._prune(repo_dir, current)

    def _prune(self, repo_dir: Path, current: Path) -> None:
        """Drop this repo's snapshots beyond `keep` that nobody used for ten minutes."""
        now = time.time()
        kept: list[tuple[float, Path]] = []
        try:
            entries = list(os.scandir(repo_dir))
        except OSError:
            return
        names = {entry.name for entry in entries}
        for entry in entries:
            path = Path(entry.path)
            try:
                mtime = entry.stat(follow_symlinks=False).st_mtime
            except OSError:
                continue
            if entry.name.startswith((".tmp-", ".trash-")):
                if now - mtime > TEMP_IDLE_S:
                    remove_tree(path)
            elif entry.name.endswith(_MARKER):
                # A marker is written just before its tree is renamed in: only an old one whose
                # tree is gone is left over.
                if entry.name[: -len(_MARKER)] not in names and now - mtime > TEMP_IDLE_S:
                    remove_tree(path)
            elif path != current and _SNAPSHOT_DIR_RE.match(entry.name) and entry.is_dir():
                kept.append((mtime, path))
        kept.sort(reverse=True)
        for mtime, path in kept[self.keep - 1 :]:
            if now - mtime <= _SNAPSHOT_IDLE_S:
                continue
            self._evict(path)

    def _evict(self, path: Path) -> None:
        """Remove a snapshot and its marker; first renamed, so nobody starts reading it half gone."""
        trash = path.with_name(f".trash-{path.name}-{uuid.uuid4().hex[:8]}")
        try:
            os.rename(path, trash)
        except FileNotFoundError:
            pass
        except OSError:
            return
        with _guard:
            for key in [k for k in _cache if k[0] == path]:
                del _cache[key]
            _touched.pop(path, None)
        remove_tree(_marker_of(path))
        remove_tree(trash)

    def _unwritable(self, name: str, exc: OSError) -> RepoUnavailable:
        where = exc.filename or self.root
        why = (exc.strerror or type(exc).__name__).lower()
        return RepoUnavailable(
            f"cannot write the snapshot of {name} under {self.root} ({where}: {why})"
        )


_MISSING = "it is missing"


def _marker_of(target: Path) -> Path:
    return target.with_name(target.name + _MARKER)


def _fault(target: Path, *, whole: bool) -> str | None:
    """Why the snapshot at `target` is not complete, or None; `whole` walks the tree too."""
    try:
        fd = os.open(_marker_of(target), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return "it has no completion marker" if os.path.lexists(target) else _MISSING
    except OSError as exc:
        return f"its completion marker cannot be read ({exc.strerror})"
    try:
        raw = os.read(fd, _MARKER_MAX)
    except OSError as exc:
        return f"its completion marker cannot be read ({exc.strerror})"
    finally:
        os.close(fd)
    try:
        data = json.loads(raw)
        recorded = _Tally(
            int(data["entries"]),
            int(data["bytes"]),
            tuple((str(rel), int(size)) for rel, size in data["sample"]),
        )
        if any(os.path.isabs(rel) or ".." in rel.split("/") for rel, _ in recorded.sample):
            raise ValueError("a sample outside the snapshot")
    except (ValueError, KeyError, TypeError, OverflowError, RecursionError):
        return "its completion marker is not what was written"
    try:
        if not stat.S_ISDIR(os.lstat(target).st_mode):
            return "it is not a directory"
    except FileNotFoundError:
        return _MISSING
    for rel, size in recorded.sample:
        try:
            st = os.lstat(os.path.join(target, rel))
        except (OSError, ValueError):  # ValueError: a NUL in the name
            return f"{rel!r} is missing"
        if stat.S_ISREG(st.st_mode) and st.st_size != size:
            return f"{rel!r} has {st.st_size} bytes, not {size}"
    if whole:
        found = _tally(target, sample=False)
        if (found.entries, found.bytes) != (recorded.entries, recorded.bytes):
            return (
                f"it holds {found.entries} entries and {found.bytes} bytes, "
                f"not {recorded.entries} and {recorded.bytes}"
            )
    return None


def _tally(root: Path, *, sample: bool) -> _Tally:
    """Count a tree's entries and file bytes (and pick a sample of files) without following links."""
    entries = 0
    total = 0
    files: list[tuple[str, int]] = []
    stack = [(str(root), "")]
    while stack:
        where, prefix = stack.pop()
        with os.scandir(where) as it:
            for entry in it:
                entries += 1
                rel = prefix + entry.name
                if entry.is_dir(follow_symlinks=False):
                    stack.append((entry.path, rel + "/"))
                elif entry.is_file(follow_symlinks=False):
                    size = entry.stat(follow_symlinks=False).st_size
                    total += size
                    if sample:
                        files.append((rel, size))
    picked: tuple[tuple[str, int], ...] = ()
    if files:
        files.sort()
        step = max(1, len(files) // _SAMPLES)
        picked = tuple(files[::step][: _SAMPLES - 1]) + (files[-1],)
    return _Tally(entries, total, picked)


def _need(repo: pygit2.Repository, sha: str) -> Free:
    """About what writing the commit's tree takes: its blobs in whole blocks, and its entries."""
    blocks = 0
    inodes = 1
    try:
        stack = [repo[sha].peel(pygit2.Commit).tree]
        while stack:
            tree = stack.pop()
            for entry in tree:
                inodes += 1
                if isinstance(entry, pygit2.Tree):
                    stack.append(entry)
                    blocks += 1
                elif isinstance(entry, pygit2.Blob):
                    size = repo.odb.read_header(entry.id)[1]
                    blocks += (size + _BLOCK - 1) // _BLOCK
    except (KeyError, pygit2.GitError):
        pass  # the write itself reports unreadable objects
    return Free(blocks * _BLOCK, inodes)


def _room(root: Path, need: Free) -> bool:
    try:
        return space.free(root).covers(need)
    except OSError:
        return False


def _fmt_free(root: Path) -> str:
    try:
        have = space.free(root)
    except OSError:
        return "free space unknown"
    return f"{have.bytes / 1e6:.1f} MB free"
