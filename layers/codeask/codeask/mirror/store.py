"""MirrorStore: deciding when to fetch, serving the mirror's head or a commit, and falling back."""

from __future__ import annotations

import contextlib
import hashlib
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pygit2

from codeask.denylist import DenyList
from codeask.errors import BadInput, RepoUnavailable, first_line
from codeask.mirror import bare
from codeask.mirror.ledger import Ledger, synced_at
from codeask.mirror.lock import locked
from codeask.mirror.refs import local_head, pick_ref
from codeask.mirror.result import StaleNote, SyncResult
from codeask.mirror.snapshots import Snapshots
from codeask.mirror.spec import CallbacksFactory, RepoSpec, redact_url, token_callbacks
from codeask.settings import Settings
from codeask.snapshot import Snapshot

_HEX_RE = re.compile(r"^[0-9a-f]{4,64}$")


@dataclass(frozen=True)
class _Head:
    sha: str
    branch: str
    fetched: bool
    stale: StaleNote | None


@dataclass(frozen=True)
class _Why:
    """Why the mirror could not be brought up to date, and for which branch if known."""

    reason: str
    branch: str | None = None
    # Another sync held the lock: nothing failed, so nothing to record and nothing to raise.
    busy: bool = False


class MirrorStore:
    """One bare shallow mirror per repo under `mirror_root`, snapshots under `snapshot_root`."""

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
    ) -> None:
        # libgit2's timeouts are process-wide; without them a blackholed host hangs until TCP gives up.
        ms = max(1, int(network_timeout_s * 1000))
        pygit2.settings.server_connect_timeout = ms
        pygit2.settings.server_timeout = ms
        self.mirror_root = Path(mirror_root).absolute()
        self.snapshot_root = Path(snapshot_root).absolute()
        self.deny = deny
        self.lock_timeout_s = lock_timeout_s
        self.snapshots = Snapshots(self.snapshot_root, deny, snapshots_keep)
        # Credentials for private remotes plug in here, as RemoteCallbacks built per repo.
        self.callbacks_factory = callbacks_factory

    @classmethod
    def from_settings(cls, settings: Settings) -> MirrorStore:
        return cls(
            settings.mirror_root,
            settings.snapshot_root,
            DenyList(settings.deny_paths),
            lock_timeout_s=settings.lock_timeout_s,
            snapshots_keep=settings.snapshots_keep,
            network_timeout_s=settings.git_timeout_s,
            callbacks_factory=token_callbacks(settings.git_token) if settings.git_token else None,
        )

    # ---- public API -------------------------------------------------------------------------

    def mirror_dir(self, spec: RepoSpec) -> Path:
        """Where the bare mirror of `spec` lives; the URL hash keeps same-named repos apart."""
        safe = re.sub(r"[^A-Za-z0-9._-]+", "-", spec.name).strip(".-")[:40] or "repo"
        digest = hashlib.sha256(redact_url(spec.url).encode()).hexdigest()[:10]
        return self.mirror_root / f"{safe}-{digest}"

    def sync(self, spec: RepoSpec) -> SyncResult:
        """Bring the mirror up to date (fetching only on change) and snapshot its head."""
        start = time.perf_counter()
        timings: dict[str, float] = {}
        head = self._update(spec, timings, strict=False)
        mark = time.perf_counter()
        mdir = self.mirror_dir(spec)
        snapshot = self._snapshot(spec, mdir, head.sha, head.branch)
        timings["snapshot"] = _ms(mark)
        timings["total"] = _ms(start)
        return SyncResult(snapshot, head.sha, head.branch, head.fetched, head.stale, timings)

    def warm(self, spec: RepoSpec) -> str:
        """Bring the mirror up to date without a snapshot; raises RepoUnavailable if unreachable.

        Unlike sync() there is nobody to hand a stale answer to, so a failure is raised for the
        scheduler to see; a sync already running elsewhere counts as success.
        """
        return self._update(spec, {}, strict=True).sha

    def snapshot_at(self, spec: RepoSpec, sha: str) -> Snapshot:
        """A snapshot of a commit already in the mirror, e.g. the SHA a thread was answered at."""
        want = (sha or "").strip().lower()
        if not _HEX_RE.match(want):
            raise BadInput(f"{sha!r} is not a commit SHA")
        mdir = self.mirror_dir(spec)
        if not mdir.is_dir():
            raise BadInput(f"there is no mirror of {spec.name} ({redact_url(spec.url)}) yet")
        repo = bare.open_repo(mdir)
        try:
            obj = repo.get(want)
        except (ValueError, pygit2.GitError):  # an ambiguous short SHA
            obj = None
        commit = None
        if obj is not None:
            with contextlib.suppress(pygit2.GitError, ValueError):
                commit = obj.peel(pygit2.Commit)
        if commit is None:
            raise BadInput(
                f"commit {want} is not in the mirror of {spec.name}; "
                "only commits fetched since the mirror was created can be shown"
            )
        branch = spec.branch or Ledger(mdir).read().get("default_branch")
        return self._snapshot(spec, mdir, str(commit.id), branch)

    def fetch_commit(self, spec: RepoSpec, sha: str) -> Snapshot:
        """A snapshot of any commit the remote will hand out by SHA, fetched shallow on demand."""
        want = (sha or "").strip().lower()
        if not _HEX_RE.match(want):
            raise BadInput(f"{sha!r} is not a commit SHA")
        with contextlib.suppress(BadInput):
            return self.snapshot_at(spec, want)
        if len(want) < 40:
            raise BadInput(
                f"commit {want} is not in the mirror of {spec.name}; give the full 40-character SHA "
                "so it can be fetched"
            )
        self._update(spec, {}, strict=False)  # makes sure the mirror exists
        mdir = self.mirror_dir(spec)
        callbacks = self.callbacks_factory(spec) if self.callbacks_factory else None
        with locked(mdir, self.lock_timeout_s) as held:
            if not held:
                raise RepoUnavailable(f"another sync of {spec.name} held the lock; try again")
            repo = bare.open_repo(mdir)
            try:
                bare.fetch_commit(repo, spec.url, want, callbacks)
            except pygit2.GitError as exc:
                raise BadInput(
                    f"commit {want[:12]} could not be fetched from {redact_url(spec.url)} "
                    f"({first_line(exc)}); the server may not allow fetching by SHA"
                ) from None
        return self.snapshot_at(spec, want)

    def last_synced_at(self, spec: RepoSpec) -> datetime | None:
        """When the mirror last agreed with the remote for the spec's branch (its default if None)."""
        state = Ledger(self.mirror_dir(spec)).read()
        return synced_at(state, spec.branch or state.get("default_branch"))

    # ---- syncing ----------------------------------------------------------------------------

    def _update(self, spec: RepoSpec, timings: dict[str, float], *, strict: bool) -> _Head:
        mdir = self.mirror_dir(spec)
        ledger = Ledger(mdir)
        mark = time.perf_counter()
        repo = bare.open_or_create(mdir, self.lock_timeout_s)
        timings["open"] = _ms(mark)
        callbacks = self.callbacks_factory(spec) if self.callbacks_factory else None

        mark = time.perf_counter()
        try:
            heads = repo.remotes.create_anonymous(spec.url).list_heads(callbacks=callbacks)
        except pygit2.GitError as exc:
            timings["remote_head"] = _ms(mark)
            return self._fall_back(spec, mdir, repo, _Why(self._reason(spec, exc)), strict)
        timings["remote_head"] = _ms(mark)
        branch, remote_ref, remote_oid = pick_ref(spec, heads)

        # The cheap path every question takes: the remote has nothing new for us.
        if local_head(repo, branch) == remote_oid:
            ledger.confirm(spec, branch, str(remote_oid))
            return _Head(str(remote_oid), branch, fetched=False, stale=None)

        mark = time.perf_counter()
        with locked(mdir, self.lock_timeout_s) as held:
            timings["lock"] = _ms(mark)
            if not held:
                reason = _Why("another sync held the lock", branch, busy=True)
                return self._fall_back(spec, mdir, repo, reason, strict)
            fetched = False
            sha = local_head(repo, branch)
            # Another process may have fetched while we waited for the lock.
            if sha != remote_oid:
                mark = time.perf_counter()
                try:
                    sha = bare.fetch_ref(repo, mdir, spec.url, branch, remote_ref, callbacks)
                except pygit2.GitError as exc:
                    timings["fetch"] = _ms(mark)
                    reason = _Why(self._reason(spec, exc), branch)
                    return self._fall_back(spec, mdir, repo, reason, strict, holding_lock=True)
                timings["fetch"] = _ms(mark)
                fetched = True
            assert sha is not None
            ledger.record(spec, branch, str(sha))
        return _Head(str(sha), branch, fetched=fetched, stale=None)

    def _fall_back(
        self,
        spec: RepoSpec,
        mdir: Path,
        repo: pygit2.Repository,
        why: _Why,
        strict: bool,
        *,
        holding_lock: bool = False,
    ) -> _Head:
        """Serve what the mirror already has, marked stale, or explain that there is nothing."""
        shown = redact_url(spec.url)
        ledger = Ledger(mdir)
        if not why.busy:
            ledger.note_error(why.reason, holding_lock=holding_lock)
            if strict:
                raise RepoUnavailable(f"cannot reach {shown}: {why.reason}")
        state = ledger.read()
        branch = why.branch or spec.branch or state.get("default_branch")
        sha = local_head(repo, branch) if branch else None
        if branch is None or sha is None:
            which = f"branch {branch!r}" if branch else "its default branch"
            raise RepoUnavailable(
                f"cannot sync {spec.name} from {shown} ({why.reason}), "
                f"and there is no earlier mirror of {which} to fall back on"
            )
        as_of = synced_at(state, branch)
        if as_of is None:
            as_of = datetime.fromtimestamp(mdir.stat().st_mtime, UTC)
        return _Head(str(sha), branch, False, StaleNote(str(sha), as_of, why.reason))

    def _reason(self, spec: RepoSpec, exc: BaseException) -> str:
        return first_line(exc).replace(spec.url, redact_url(spec.url))

    def _snapshot(self, spec: RepoSpec, mdir: Path, sha: str, branch: str | None) -> Snapshot:
        return self.snapshots.at(bare.open_repo(mdir), mdir.name, sha, spec.ref(branch))


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000.0, 3)
