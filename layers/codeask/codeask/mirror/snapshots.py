"""Immutable snapshots on local disk: one per commit and view (deny-list, scope), cached, touched and pruned."""

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
from codeask.mirror import spare
from codeask.mirror.manifest import Manifest
from codeask.mirror.materialise import TEMP_IDLE_S, View, materialise, remove_tree
from codeask.scope import PathScope
from codeask.snapshot import RepoRef, Snapshot

_SNAPSHOT_DIR_RE = re.compile(r"^[0-9a-f]{40,64}-[0-9a-f]{12}$")
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
    """Snapshots under `root/<repo key>/<sha>-<view fingerprint>`, keeping `keep` per repo and view."""

    def __init__(self, root: Path, deny: DenyList, keep: int) -> None:
        self.root = root
        self.deny = deny
        self.keep = max(1, keep)

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
        one: only what changed between the two commits is written, the rest hard-linked.
        """
        view = View(self.deny, scope or PathScope())
        repo_dir = self.root / key
        target = repo_dir / f"{sha}-{view.fingerprint}"
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
            base = _newest(repo_dir, view.fingerprint)
            listing = materialise(repo, sha, target, view, base=base)
        else:
            listing = _listing(target)  # cheaper than walking the tree, for a new process
        self._touch(target, force=True)
        snapshot = Snapshot(root=target, sha=sha, repo=ref, deny=self.deny, scope=view.scope)
        if listing is not None:
            snapshot.seed_files(listing)
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
            e.name for e in entries if _SNAPSHOT_DIR_RE.match(e.name) and os.path.isdir(e.path)
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
            _touched.pop(path, None)
        remove_tree(trash)
        for made in spare.of(path):
            remove_tree(made)


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


def _listing(target: Path) -> tuple[str, ...] | None:
    manifest = Manifest.read_from(target)
    return None if manifest is None else tuple(sorted(manifest.entries))
