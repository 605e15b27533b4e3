"""Immutable snapshots on local disk: one per commit and view (deny-list, scope), cached, checked, touched and pruned."""

from __future__ import annotations

import contextlib
import os
import random
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
from codeask.mirror import space, spare
from codeask.mirror.incremental import delta
from codeask.mirror.manifest import MANIFEST_NAME, Manifest, parse_entry
from codeask.mirror.materialise import (
    MODE_LINK,
    TEMP_IDLE_S,
    View,
    materialise,
    real_dir,
    remove_tree,
    tree_blobs,
)
from codeask.mirror.result import OnRepair, Repair
from codeask.mirror.space import Free, is_full
from codeask.scope import PathScope
from codeask.snapshot import RepoRef, Snapshot

_SNAPSHOT_DIR_RE = re.compile(r"^[0-9a-f]{40,64}-[0-9a-f]{12}$")
INDEX_SUFFIX = ".defs"  # the definitions index of snapshot `X` is the file `X.defs` beside it
PARTIAL_SUFFIX = INDEX_SUFFIX + ".partial"  # ... and one its build could not finish yet
_SNAPSHOT_IDLE_S = 600.0  # a snapshot untouched this long is nobody's current answer
_TOUCH_EVERY_S = 60.0
_CACHE_MAX = 16
_SAMPLES = 8  # files whose size is checked on every use: a cheap look for a partly cleaned tree
_BLOCK = 4096
_MANIFEST_ENTRY = 128  # about what one entry takes in a manifest, for estimating its size

# Shared by every store in the process, so warm Lambda invocations reuse them.
_guard = threading.Lock()
# Least recently used last out; each entry may hold a large file list.
_cache: OrderedDict[tuple[Path, RepoRef], Snapshot] = OrderedDict()
_probes: dict[Path, _Probe] = {}
_touched: dict[Path, float] = {}
_pruned: dict[Path, float] = {}


class ObjectsUnreadable(Exception):
    """The repository could not give an object a snapshot needs: missing, or damaged."""


@dataclass(frozen=True)
class _Probe:
    """What is looked at on each use of a snapshot checked in this process: its manifest and a
    few of its files, each (path, whether a symlink, size) as they were when it was checked."""

    files: tuple[tuple[str, bool, int], ...]

    @classmethod
    def of(cls, target: Path, sample: list[str]) -> _Probe:
        files = []
        for rel in [MANIFEST_NAME, *sample]:
            with contextlib.suppress(OSError, ValueError):
                st = os.lstat(os.path.join(target, rel))
                files.append((rel, stat.S_ISLNK(st.st_mode), st.st_size))
        return cls(tuple(files))

    def holds(self, target: Path) -> bool:
        for rel, link, size in self.files:
            try:
                st = os.lstat(os.path.join(target, rel))
            except (OSError, ValueError):
                return False
            if stat.S_ISLNK(st.st_mode) != link or st.st_size != size:
                return False
        return True


class Snapshots:
    """Snapshots under `root/<repo key>/<sha>-<view fingerprint>`, keeping `keep` per repo and view."""

    def __init__(
        self, root: Path, deny: DenyList, keep: int, on_repair: OnRepair | None = None
    ) -> None:
        self.root = root
        self.deny = deny
        self.keep = max(1, keep)
        self.on_repair = on_repair

    def at(
        self,
        repo: pygit2.Repository,
        key: str,
        sha: str,
        ref: RepoRef,
        scope: PathScope | None = None,
    ) -> Snapshot:
        """The snapshot of commit `sha` of `repo`, written on first use; `key` names the repo.

        A new one is written from the newest snapshot of the same repo and view, when there is
        one: only what changed between the two commits is written, the rest hard-linked. One
        found damaged is written again (and told to `on_repair`).

        Raises ObjectsUnreadable if the repository cannot give what the tree needs, DiskFull if
        the disk stays full after old snapshots were removed.
        """
        view = View(self.deny, scope or PathScope())
        repo_dir = self.root / key
        self._real_dir(repo_dir, ref.name)
        target = repo_dir / f"{sha}-{view.fingerprint}"
        cache_key = (target, ref)
        with _guard:
            cached = _cache.get(cache_key)
            if cached is not None:
                _cache.move_to_end(cache_key)
            probe = _probes.get(target)
        # Used in this process already: its manifest and a few files' sizes, as they were.
        if cached is not None and probe is not None and probe.holds(target):
            self._touch(target)
            self._maybe_prune(repo_dir, target)
            return cached
        # First use here: its manifest (the listing, read anyway) against the tree, see _check.
        manifest, fault = _check(repo, target, sha, view)
        if manifest is not None and fault is None:
            listing = tuple(sorted(manifest.entries))
            wrote = False
        else:
            if fault != _MISSING:
                self._evict(target)  # never served half there: written again instead
                if self.on_repair is not None:
                    self.on_repair(Repair(ref.name, "snapshot", f"{target.name}: {fault}"))
            listing = self._write(repo, sha, target, view, ref.name)
            wrote = True
        self._touch(target, force=True)
        index_path = target.with_name(target.name + INDEX_SUFFIX)
        snapshot = Snapshot(root=target, sha=sha, repo=ref, deny=self.deny, scope=view.scope,
                            index_path=index_path)  # fmt: skip
        snapshot.seed_files(listing)
        if not index_path.is_file():
            # Its index is still to be built: unchanged files' rows are found by their blob ids.
            snapshot.blobs = tree_blobs(repo, sha, view)
        probe = _Probe.of(target, _sample(listing))
        with _guard:
            _cache[cache_key] = snapshot
            _probes[target] = probe
            while len(_cache) > _CACHE_MAX:
                _cache.popitem(last=False)
        self._maybe_prune(repo_dir, target, force=wrote)
        return snapshot

    def _write(
        self, repo: pygit2.Repository, sha: str, target: Path, view: View, name: str
    ) -> tuple[str, ...]:
        """Materialise, from the newest snapshot of the view when there is one; on a full disk,
        free old snapshots (never that one: building from it costs only the change) and try once
        more."""
        base = _newest(target.parent, view.fingerprint)
        try:
            return self._materialise(repo, sha, target, view, base)
        except OSError as exc:
            if not is_full(exc):
                raise self._unwritable(name, exc) from None
        need = _need(repo, sha, view, base)
        evicted = self.reclaim(need, keep={target} if base is None else {target, base})
        if evicted or _room(self.root, need):
            try:
                return self._materialise(repo, sha, target, view, base)
            except OSError as exc:
                if not is_full(exc):
                    raise self._unwritable(name, exc) from None
        have = _fmt_free(self.root)
        raise DiskFull(
            f"no space left under {self.root} for the snapshot of {name} at {sha[:7]} "
            f"(it needs about {need.bytes / 1e6:.1f} MB in {need.inodes} files and folders; "
            f"{have} after removing {evicted} older snapshot{'s' if evicted != 1 else ''})"
        )

    def _materialise(
        self, repo: pygit2.Repository, sha: str, target: Path, view: View, base: Path | None
    ) -> tuple[str, ...]:
        try:
            return materialise(repo, sha, target, view, base=base)
        except (KeyError, pygit2.GitError) as exc:
            raise ObjectsUnreadable(first_line(exc)) from None

    def reclaim(self, need: Free, keep: set[Path] | frozenset[Path] = frozenset()) -> int:
        """Free room for `need` on the snapshot disk: leftovers first, then snapshots of any repo
        nobody used for ten minutes (one used since may be an answer's in progress), least
        recently used first, each with its spares, until the disk says there is room; returns
        how many went.

        Room is read from the filesystem after each removal, never summed from sizes: a file
        hard-linked into several snapshots frees nothing until the last of them goes.
        """
        candidates: list[tuple[float, Path]] = []
        try:
            # A symlink is never followed: whatever it points at is not codeask's to delete.
            repo_dirs = [
                Path(e.path) for e in os.scandir(self.root) if e.is_dir(follow_symlinks=False)
            ]
        except OSError:
            return 0
        now = time.time()
        for repo_dir in repo_dirs:
            entries = _dated_entries(repo_dir)
            if entries is None:
                continue
            names = set()
            for entry, path, mtime in entries:
                if entry.name.startswith(".trash-") or (
                    entry.name.startswith(".tmp-") and now - mtime > TEMP_IDLE_S
                ):
                    remove_tree(path)
                elif _SNAPSHOT_DIR_RE.match(entry.name):
                    names.add(entry.name)
                    if path not in keep and now - mtime > _SNAPSHOT_IDLE_S:
                        candidates.append((mtime, path))
                elif _orphan_index(repo_dir, entry.name, now - mtime):
                    remove_tree(path)
            for orphan in spare.orphans(repo_dir, names):
                remove_tree(orphan)
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
        entries = _dated_entries(repo_dir)
        if entries is None:
            return
        for entry, path, mtime in entries:
            if entry.name.startswith((".tmp-", ".trash-")):
                if now - mtime > TEMP_IDLE_S:
                    remove_tree(path)
            elif path != current and _SNAPSHOT_DIR_RE.match(entry.name) and entry.is_dir():
                kept.append((mtime, path))
            elif _orphan_index(repo_dir, entry.name, now - mtime):
                remove_tree(path)
        kept.sort(reverse=True)
        # `keep` per view: a channel scoped to part of the repo has snapshots of its own.
        seen: dict[str, int] = {current.name[-12:]: 1}
        for mtime, path in kept:
            view = path.name[-12:]
            seen[view] = seen.get(view, 0) + 1
            if seen[view] <= self.keep or now - mtime <= _SNAPSHOT_IDLE_S:
                continue
            self._evict(path)
        names = {
            e.name
            for e, _, _ in entries
            if _SNAPSHOT_DIR_RE.match(e.name) and os.path.isdir(e.path)
        }
        for orphan in spare.orphans(repo_dir, names):
            remove_tree(orphan)  # its snapshot is gone: it would only hold that one's files

    def _evict(self, path: Path) -> None:
        """Remove a snapshot and its spares. Its files shared with other snapshots stay theirs;
        the space of the rest is freed only with the spares, which link every one of them."""
        # Rename first so nobody starts reading a half-deleted tree under its real name.
        trash = path.with_name(f".trash-{path.name}-{uuid.uuid4().hex[:8]}")
        try:
            os.rename(path, trash)
        except OSError:
            return
        with _guard:
            for key in [k for k in _cache if k[0] == path]:
                del _cache[key]
            _probes.pop(path, None)
            _touched.pop(path, None)
        remove_tree(trash)
        # An open index stays readable to whoever has it open; new readers rebuild.
        remove_tree(path.with_name(path.name + INDEX_SUFFIX))
        remove_tree(path.with_name(path.name + PARTIAL_SUFFIX))
        for made in spare.of(path):
            remove_tree(made)

    def _real_dir(self, repo_dir: Path, name: str) -> None:
        """The repository's folder as a real directory (one lstat when it is one already)."""
        try:
            found = real_dir(repo_dir)
        except OSError as exc:
            if is_full(exc):
                raise DiskFull(f"no space left under {self.root} to make {repo_dir.name}") from None
            raise self._unwritable(name, exc) from None
        if found is not None and self.on_repair is not None:
            self.on_repair(Repair(name, "snapshot folder", f"{repo_dir.name} was {found}"))

    def _unwritable(self, name: str, exc: OSError) -> RepoUnavailable:
        where = exc.filename or self.root
        why = (exc.strerror or type(exc).__name__).lower()
        return RepoUnavailable(
            f"cannot write the snapshot of {name} under {self.root} ({where}: {why})"
        )


_MISSING = "it is missing"


def _dated_entries(repo_dir: Path) -> list[tuple[os.DirEntry[str], Path, float]] | None:
    """A repo folder's entries with their own (unfollowed) mtimes; None when it cannot be listed."""
    try:
        entries = list(os.scandir(repo_dir))
    except OSError:
        return None
    dated = []
    for entry in entries:
        try:
            dated.append((entry, Path(entry.path), entry.stat(follow_symlinks=False).st_mtime))
        except OSError:
            continue
    return dated


def _orphan_index(repo_dir: Path, name: str, idle_s: float) -> bool:
    """Whether `name` is a definitions index left over: its snapshot was pruned while someone
    still read it (an hour idle, so a build under way for a snapshot being written is not)."""
    if not name.endswith((INDEX_SUFFIX, PARTIAL_SUFFIX)) or idle_s <= TEMP_IDLE_S:
        return False
    return not (repo_dir / name.removesuffix(".partial").removesuffix(INDEX_SUFFIX)).is_dir()


def _check(
    repo: pygit2.Repository, target: Path, sha: str, view: View
) -> tuple[Manifest | None, str | None]:
    """The snapshot's manifest, and why the tree at `target` is not what it says, or None.

    No walk of the files: every directory but the top one is unchanged since the snapshot was
    sealed iff its modification time is the manifest's (they are read-only; any entry added,
    removed or renamed moves it), the top one (whose time moves with each use) holds exactly
    the names the manifest gives, and a sample of files has its blob's size. A file changed in
    place outside the sample is not seen here.
    """
    try:
        if not stat.S_ISDIR(os.lstat(target).st_mode):
            return None, "it is not a directory"
    except FileNotFoundError:
        return None, _MISSING
    except OSError as exc:
        return None, f"it cannot be read ({exc.strerror})"
    manifest = Manifest.read_from(target)
    if manifest is None:
        if not os.path.lexists(target / MANIFEST_NAME):
            return None, "it has no manifest"
        return None, "its manifest is not what was written"
    if (manifest.sha, manifest.view) != (sha, view.fingerprint):
        return None, "its manifest is another snapshot's"
    return manifest, _tree_fault(repo, target, manifest)


def _tree_fault(repo: pygit2.Repository, target: Path, manifest: Manifest) -> str | None:
    """Why the tree at `target` differs from its (whole) manifest, or None; see _check."""
    try:
        top = set(os.listdir(target))
    except OSError as exc:
        return f"it cannot be listed ({exc.strerror})"
    expected = {p for p in manifest.entries if "/" not in p}
    expected.update(d for d in manifest.dirs if d and "/" not in d)
    expected.add(MANIFEST_NAME)
    if top != expected:
        odd = sorted(top - expected) or sorted(expected - top)
        return f"its top folder {'holds' if top - expected else 'lacks'} {odd[0]!r}"
    for d, mtime in manifest.dirs.items():
        if not d:
            continue
        try:
            st = os.lstat(os.path.join(target, d))
        except OSError:
            return f"{d!r} is missing"
        if not stat.S_ISDIR(st.st_mode) or st.st_mtime_ns != mtime:
            return f"{d!r} was changed after the snapshot was written"
    for rel in _sample(manifest.entries):
        try:
            mode, oid, _ino = parse_entry(manifest.entries[rel])
        except ValueError:
            return f"its manifest's entry for {rel!r} is not what was written"
        try:
            size = repo.odb.read_header(oid)[1]
        except (KeyError, ValueError, pygit2.GitError):
            continue  # the repository's fault, not the snapshot's: found when it is needed
        try:
            st = os.lstat(os.path.join(target, rel))
        except OSError:
            return f"{rel!r} is missing"
        if stat.S_ISLNK(st.st_mode) != (mode == MODE_LINK) or st.st_size != size:
            return f"{rel!r} has {st.st_size} bytes, not {size}"
    return None


def _sample(paths: dict[str, str] | tuple[str, ...]) -> list[str]:
    """A few paths spread over the listing, from a random start: each process looks at others."""
    listed = list(paths)
    if len(listed) <= _SAMPLES:
        return listed
    step = len(listed) // _SAMPLES
    return listed[random.randrange(step) :: step][:_SAMPLES]


def _newest(repo_dir: Path, view: str) -> Path | None:
    """The most recently used snapshot of this repo under `view`, to build the next one from."""
    best: tuple[float, Path] | None = None
    try:
        entries = list(os.scandir(repo_dir))
    except OSError:
        return None
    for entry in entries:
        if not entry.name.endswith("-" + view) or not _SNAPSHOT_DIR_RE.match(entry.name):
            continue
        try:
            mtime = entry.stat(follow_symlinks=False).st_mtime
        except OSError:
            continue
        if best is None or mtime > best[0]:
            best = (mtime, Path(entry.path))
    return None if best is None else best[1]


def _need(repo: pygit2.Repository, sha: str, view: View, base: Path | None) -> Free:
    """About what writing the commit's snapshot takes: built from `base`, what changed (and the
    top folder's files, always written); else every file the view admits. Blobs in whole
    blocks, a block per folder, and the manifest."""
    blobs: list[str] = []
    folders = 1
    entries = 0
    try:
        tree = repo[sha].peel(pygit2.Commit).tree
        old = None if base is None else Manifest.read_from(base)
        change = None
        if old is not None and old.view == view.fingerprint:
            change = delta(repo, old, tree, view)
        if old is not None and change is not None:
            blobs = [oid for _mode, oid in change.added.values()]
            blobs += [
                parse_entry(text)[1]
                for p, text in old.entries.items()
                if "/" not in p and p not in change.removed and p not in change.added
            ]
            folders += len(old.dirs)
            entries = len(old.entries) + len(change.added)
        else:
            folders, blobs = _whole(tree, view)
            entries = len(blobs)
        blocks = folders + (entries * _MANIFEST_ENTRY + _BLOCK - 1) // _BLOCK
        for oid in blobs:
            blocks += (repo.odb.read_header(oid)[1] + _BLOCK - 1) // _BLOCK
    except (KeyError, ValueError, pygit2.GitError):
        return Free(0, 0)  # the write itself reports unreadable objects
    return Free(blocks * _BLOCK, folders + len(blobs) + 1)


def _whole(tree: pygit2.Tree, view: View) -> tuple[int, list[str]]:
    """The folders and the blobs (files and symlinks) of `tree` the view admits."""
    folders = 1
    blobs: list[str] = []
    stack: list[tuple[pygit2.Tree, str]] = [(tree, "")]
    while stack:
        where, prefix = stack.pop()
        for entry in where:
            rel = prefix + (entry.name or "")
            if isinstance(entry, pygit2.Tree):
                if view.may_hold(rel):
                    folders += 1
                    stack.append((entry, rel + "/"))
            elif isinstance(entry, pygit2.Blob) and view.admits(rel):
                blobs.append(str(entry.id))
    return folders, blobs


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
