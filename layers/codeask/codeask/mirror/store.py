"""MirrorStore: reading a repository's head or a commit from its source, as a snapshot on local disk."""

from __future__ import annotations

import logging
import re
import time
from datetime import datetime
from pathlib import Path

import pygit2

from codeask.denylist import DenyList
from codeask.errors import BadInput, RepoUnavailable
from codeask.mirror import spare
from codeask.mirror.local import LocalSource
from codeask.mirror.materialise import View
from codeask.mirror.remote import RemoteMirror
from codeask.mirror.result import OnRepair, Repair, SyncResult
from codeask.mirror.snapshots import ObjectsUnreadable, Snapshots
from codeask.mirror.source import Source, elapsed_ms, source_key
from codeask.mirror.space import Free, same_disk
from codeask.mirror.spec import CallbacksFactory, RepoSpec, is_local, token_callbacks
from codeask.settings import Settings
from codeask.snapshot import Snapshot

_HEX_RE = re.compile(r"^[0-9a-f]{4,64}$")
_log = logging.getLogger(__name__)


class MirrorStore:
    """Where questions read repositories from, as snapshots under `snapshot_root`.

    A path on this machine (or file://) is a LocalSource, read in place; any other URL is a
    RemoteMirror, a bare shallow mirror under `mirror_root`. Damage found and rebuilt on the way
    (a mirror, a snapshot, a lock or state file) is told to `on_repair` (else logged).
    """

    def __init__(
        self,
        mirror_root: Path,
        snapshot_root: Path,
        deny: DenyList,
        *,
        lock_timeout_s: float = 120.0,
        snapshots_keep: int = 3,
        callbacks_factory: CallbacksFactory | None = None,
        network_timeout_s: float = 20.0,
        on_repair: OnRepair | None = None,
    ) -> None:
        # libgit2's timeouts are process-wide; without them a blackholed host hangs until TCP gives up.
        ms = max(1, int(network_timeout_s * 1000))
        pygit2.settings.server_connect_timeout = ms
        pygit2.settings.server_timeout = ms
        # libgit2 re-hashes every object it reads unless told otherwise, which made writing a
        # snapshot about twice as slow; git does not, and a fetched pack was checked when indexed.
        pygit2.settings.enable_strict_hash_verification(False)
        self.mirror_root = Path(mirror_root).absolute()
        self.snapshot_root = Path(snapshot_root).absolute()
        self.deny = deny
        self.lock_timeout_s = lock_timeout_s
        self.on_repair: OnRepair = on_repair or _log_repair
        self.snapshots = Snapshots(self.snapshot_root, deny, snapshots_keep, self.on_repair)
        # Credentials for private remotes plug in here, as RemoteCallbacks built per repo.
        self.callbacks_factory = callbacks_factory

    @classmethod
    def from_settings(cls, settings: Settings, *, on_repair: OnRepair | None = None) -> MirrorStore:
        return cls(
            settings.mirror_root,
            settings.snapshot_root,
            DenyList(settings.deny_paths),
            lock_timeout_s=settings.lock_timeout_s,
            snapshots_keep=settings.snapshots_keep,
            network_timeout_s=settings.git_timeout_s,
            callbacks_factory=token_callbacks(settings.git_token) if settings.git_token else None,
            on_repair=on_repair,
        )

    # ---- public API -------------------------------------------------------------------------

    def source(self, spec: RepoSpec) -> Source:
        """Where `spec`'s commits come from: the repository itself if local, else its mirror."""
        if is_local(spec.url):
            return LocalSource(spec, source_key(spec))
        callbacks = self.callbacks_factory(spec) if self.callbacks_factory else None
        return RemoteMirror(
            spec,
            self.mirror_dir(spec),
            lock_timeout_s=self.lock_timeout_s,
            callbacks=callbacks,
            on_repair=self.on_repair,
            reclaim=self._reclaim_for_mirror,
        )

    def mirror_dir(self, spec: RepoSpec) -> Path:
        """Where the bare mirror of a remote `spec` lives (nothing is kept there for local ones)."""
        return self.mirror_root / source_key(spec)

    def snapshot_dir(self, spec: RepoSpec) -> Path:
        """Where the snapshots of `spec` live, one directory per commit."""
        return self.snapshot_root / source_key(spec)

    def sync(self, spec: RepoSpec) -> SyncResult:
        """The spec's branch as it is now (fetched only on change, for a remote), as a snapshot."""
        start = time.perf_counter()
        timings: dict[str, float] = {}
        source = self.source(spec)
        head = source.head(timings, strict=False)
        mark = time.perf_counter()
        unreadable: str | None = None
        try:
            snapshot = self._snapshot(source, head.sha, head.branch)
        except ObjectsUnreadable as exc:
            unreadable = f"commit {head.sha[:12]} cannot be written out: {exc}"
        if unreadable is not None:
            # Outside the except: its traceback would keep the old repository handle alive.
            # The mirror's objects are gone or damaged (a local repository's raise here instead).
            head = source.repair(unreadable)
            snapshot = self._snapshot(source, head.sha, head.branch, last_try=True)
        timings["snapshot"] = elapsed_ms(mark)
        timings["total"] = elapsed_ms(start)
        return SyncResult(
            snapshot, head.sha, head.branch, head.fetched, head.stale, timings, head.uncommitted
        )

    def warm(self, spec: RepoSpec) -> str:
        """Bring the mirror up to date without a snapshot; raises RepoUnavailable if unreachable.

        Unlike sync() there is nobody to hand a stale answer to, so a failure is raised for the
        scheduler to see; a sync already running elsewhere counts as success.
        """
        return self.source(spec).head({}, strict=True).sha

    def snapshot_at(self, spec: RepoSpec, sha: str) -> Snapshot:
        """A snapshot of a commit the source already holds, e.g. the SHA a thread was answered at."""
        source = self.source(spec)
        return self._snapshot_of(source, source.commit(_commit_sha(sha)))

    def fetch_commit(self, spec: RepoSpec, sha: str) -> Snapshot:
        """A snapshot of any commit the source holds or, for a remote, will hand out by SHA."""
        source = self.source(spec)
        return self._snapshot_of(source, source.commit(_commit_sha(sha), fetch=True))

    def _snapshot_of(self, source: Source, full: str) -> Snapshot:
        branch = source.spec.branch or source.default_branch()
        try:
            return self._snapshot(source, full, branch)
        except ObjectsUnreadable as exc:
            unreadable = f"commit {full[:12]} cannot be written out: {exc}"
        source.repair(unreadable)
        # A rebuilt mirror holds the branch head only: the commit is fetched again by SHA.
        again = source.commit(full, fetch=True)
        return self._snapshot(source, again, branch, last_try=True)

    def prepare_next(self, spec: RepoSpec, snapshot: Snapshot) -> bool:
        """Make the next commit's snapshot cheap while nobody waits for it: a hard-linked spare
        of `snapshot` (see mirror/spare.py), unless one is ready. Whether one was made."""
        view = View(self.deny, spec.scope)
        return spare.prepare(self.source(spec).objects(), snapshot.root, view)

    def last_synced_at(self, spec: RepoSpec) -> datetime | None:
        """When the source last agreed with the repository for the spec's branch (or default)."""
        return self.source(spec).last_synced_at()

    def _snapshot(
        self, source: Source, sha: str, branch: str | None, *, last_try: bool = False
    ) -> Snapshot:
        spec = source.spec
        try:
            return self.snapshots.at(
                source.objects(), source.key, sha, spec.ref(branch), spec.scope
            )
        except ObjectsUnreadable as exc:
            if not last_try:
                raise
            raise RepoUnavailable(
                f"commit {sha[:12]} of {source.spec.name} cannot be read even from a rebuilt "
                f"mirror: {exc}"
            ) from None

    def _reclaim_for_mirror(self, need_bytes: int) -> bool:
        """Free snapshots for a fetch that found the disk full, if they share the mirrors' disk."""
        if not same_disk(self.mirror_root, self.snapshot_root):
            return False
        return self.snapshots.reclaim(Free(need_bytes, 64)) > 0


def _log_repair(repair: Repair) -> None:
    _log.warning(repair.message())


def _commit_sha(sha: str) -> str:
    want = (sha or "").strip().lower()
    if not _HEX_RE.match(want):
        raise BadInput(f"{sha!r} is not a commit SHA")
    return want
