"""Immutable snapshots on local disk: one per commit and deny-list, cached, touched and pruned."""

from __future__ import annotations

import contextlib
import os
import re
import threading
import time
import uuid
from collections import OrderedDict
from pathlib import Path

import pygit2

from codeask.denylist import DenyList
from codeask.mirror.materialise import TEMP_IDLE_S, materialise, remove_tree, tree_blobs
from codeask.snapshot import RepoRef, Snapshot

_SNAPSHOT_DIR_RE = re.compile(r"^[0-9a-f]{40,64}-[0-9a-f]{12}$")
INDEX_SUFFIX = ".defs"  # the definitions index of snapshot `X` is the file `X.defs` beside it
PARTIAL_SUFFIX = INDEX_SUFFIX + ".partial"  # ... and one its build could not finish yet
_SNAPSHOT_IDLE_S = 600.0  # a snapshot untouched this long is nobody's current answer
_TOUCH_EVERY_S = 60.0
_CACHE_MAX = 16

# Shared by every store in the process, so warm Lambda invocations reuse them.
_guard = threading.Lock()
# Least recently used last out; each entry may hold a large file list.
_cache: OrderedDict[tuple[Path, RepoRef], Snapshot] = OrderedDict()
_touched: dict[Path, float] = {}
_pruned: dict[Path, float] = {}


class Snapshots:
    """Snapshots under `root/<repo key>/<sha>-<deny fingerprint>`, keeping `keep` per repo."""

    def __init__(self, root: Path, deny: DenyList, keep: int) -> None:
        self.root = root
        self.deny = deny
        self.keep = max(1, keep)
        self._fingerprint = deny.fingerprint()

    def at(self, repo: pygit2.Repository, key: str, sha: str, ref: RepoRef) -> Snapshot:
        """The snapshot of commit `sha` of `repo`, written on first use; `key` names the repo."""
        repo_dir = self.root / key
        target = repo_dir / f"{sha}-{self._fingerprint}"
        cache_key = (target, ref)
        with _guard:
            cached = _cache.get(cache_key)
            if cached is not None:
                _cache.move_to_end(cache_key)
        if cached is not None and target.is_dir():
            self._touch(target)
            self._maybe_prune(repo_dir, target)
            return cached
        listing = None
        if not target.is_dir():
            listing = materialise(repo, sha, target, self.deny)
        self._touch(target, force=True)
        index_path = target.with_name(target.name + INDEX_SUFFIX)
        snapshot = Snapshot(root=target, sha=sha, repo=ref, deny=self.deny, index_path=index_path)
        if listing is not None:
            snapshot.seed_files(listing)
        if not index_path.is_file():
            # Its index is still to be built: unchanged files' rows are found by their blob ids.
            snapshot.blobs = tree_blobs(repo, sha, self.deny)
        with _guard:
            _cache[cache_key] = snapshot
            while len(_cache) > _CACHE_MAX:
                _cache.popitem(last=False)
        self._maybe_prune(repo_dir, target, force=listing is not None)
        return snapshot

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
        for entry in entries:
            path = Path(entry.path)
            try:
                mtime = entry.stat(follow_symlinks=False).st_mtime
            except OSError:
                continue
            if entry.name.startswith((".tmp-", ".trash-")):
                if now - mtime > TEMP_IDLE_S:
                    remove_tree(path)
            elif path != current and _SNAPSHOT_DIR_RE.match(entry.name) and entry.is_dir():
                kept.append((mtime, path))
            elif entry.name.endswith((INDEX_SUFFIX, PARTIAL_SUFFIX)) and now - mtime > TEMP_IDLE_S:
                owner = entry.name.removesuffix(".partial").removesuffix(INDEX_SUFFIX)
                if not (repo_dir / owner).is_dir():
                    remove_tree(path)  # its snapshot was pruned while someone still read it
        kept.sort(reverse=True)
        for mtime, path in kept[self.keep - 1 :]:
            if now - mtime <= _SNAPSHOT_IDLE_S:
                continue
            # Rename first so nobody starts reading a half-deleted tree under its real name.
            trash = repo_dir / f".trash-{path.name}-{uuid.uuid4().hex[:8]}"
            try:
                os.rename(path, trash)
            except OSError:
                continue
            # An open index stays readable to whoever has it open; new readers rebuild.
            remove_tree(path.with_name(path.name + INDEX_SUFFIX))
            remove_tree(path.with_name(path.name + PARTIAL_SUFFIX))
            with _guard:
                for key in [k for k in _cache if k[0] == path]:
                    del _cache[key]
                _touched.pop(path, None)
            remove_tree(trash)
