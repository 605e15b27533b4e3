"""RemoteMirror: a remote repository kept as a bare shallow mirror, fetched only when its head moves."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pygit2

from codeask.errors import BadInput, RepoUnavailable, first_line
from codeask.mirror import bare
from codeask.mirror.ledger import Ledger, synced_at
from codeask.mirror.lock import locked
from codeask.mirror.refs import local_head, pick_ref
from codeask.mirror.result import StaleNote
from codeask.mirror.source import Head, elapsed_ms, find_commit, open_repo
from codeask.mirror.spec import RepoSpec, redact_url


@dataclass(frozen=True)
class _Why:
    """Why the mirror could not be brought up to date, and for which branch if known."""

    reason: str
    branch: str | None = None
    # Another sync held the lock: nothing failed, so nothing to record and nothing to raise.
    busy: bool = False


class RemoteMirror:
    """The bare shallow mirror at `mdir` of the remote `spec` names; a Source."""

    def __init__(
        self,
        spec: RepoSpec,
        mdir: Path,
        *,
        lock_timeout_s: float,
        callbacks: pygit2.RemoteCallbacks | None,
    ) -> None:
        self.spec = spec
        self.mdir = mdir
        self.key = mdir.name
        self.lock_timeout_s = lock_timeout_s
        self.callbacks = callbacks

    def head(self, timings: dict[str, float], *, strict: bool) -> Head:
        """Ask the remote for its head; fetch it at depth 1 only when the mirror lacks it."""
        spec, mdir = self.spec, self.mdir
        ledger = Ledger(mdir)
        mark = time.perf_counter()
        repo = bare.open_or_create(mdir, self.lock_timeout_s)
        timings["open"] = elapsed_ms(mark)

        mark = time.perf_counter()
        try:
            heads = repo.remotes.create_anonymous(spec.url).list_heads(callbacks=self.callbacks)
        except pygit2.GitError as exc:
            timings["remote_head"] = elapsed_ms(mark)
            return self._fall_back(repo, _Why(self._reason(exc)), strict)
        timings["remote_head"] = elapsed_ms(mark)
        branch, remote_ref, remote_oid = pick_ref(spec, heads)

        # The cheap path every question takes: the remote has nothing new for us.
        if local_head(repo, branch) == remote_oid:
            ledger.confirm(spec, branch, str(remote_oid))
            return Head(str(remote_oid), branch)

        mark = time.perf_counter()
        with locked(mdir, self.lock_timeout_s) as held:
            timings["lock"] = elapsed_ms(mark)
            if not held:
                reason = _Why("another sync held the lock", branch, busy=True)
                return self._fall_back(repo, reason, strict)
            fetched = False
            sha = local_head(repo, branch)
            # Another process may have fetched while we waited for the lock.
            if sha != remote_oid:
                mark = time.perf_counter()
                try:
                    sha = bare.fetch_ref(repo, mdir, spec.url, branch, remote_ref, self.callbacks)
                except pygit2.GitError as exc:
                    timings["fetch"] = elapsed_ms(mark)
                    reason = _Why(self._reason(exc), branch)
                    return self._fall_back(repo, reason, strict, holding_lock=True)
                timings["fetch"] = elapsed_ms(mark)
                fetched = True
            assert sha is not None
            ledger.record(spec, branch, str(sha))
        return Head(str(sha), branch, fetched=fetched)

    def commit(self, sha: str, *, fetch: bool = False) -> str:
        spec = self.spec
        exists = self.mdir.is_dir()
        found = find_commit(self.objects(), sha) if exists else None
        if found is not None:
            return found
        if not fetch:
            if not exists:
                raise BadInput(f"there is no mirror of {spec.name} ({redact_url(spec.url)}) yet")
            raise BadInput(
                f"commit {sha} is not in the mirror of {spec.name}; "
                "only commits fetched since the mirror was created can be shown"
            )
        if len(sha) < 40:
            raise BadInput(
                f"commit {sha} is not in the mirror of {spec.name}; give the full 40-character SHA "
                "so it can be fetched"
            )
        self.head({}, strict=False)  # makes sure the mirror exists
        with locked(self.mdir, self.lock_timeout_s) as held:
            if not held:
                raise RepoUnavailable(f"another sync of {spec.name} held the lock; try again")
            try:
                bare.fetch_commit(self.objects(), spec.url, sha, self.callbacks)
            except pygit2.GitError as exc:
                raise BadInput(
                    f"commit {sha[:12]} could not be fetched from {redact_url(spec.url)} "
                    f"({first_line(exc)}); the server may not allow fetching by SHA"
                ) from None
        found = find_commit(self.objects(), sha)
        if found is None:
            raise BadInput(f"commit {sha[:12]} was not among what {redact_url(spec.url)} sent")
        return found

    def objects(self) -> pygit2.Repository:
        return open_repo(self.mdir)

    def default_branch(self) -> str | None:
        branch = Ledger(self.mdir).read().get("default_branch")
        return branch if isinstance(branch, str) else None

    def last_synced_at(self) -> datetime | None:
        state = Ledger(self.mdir).read()
        return synced_at(state, self.spec.branch or state.get("default_branch"))

    def _fall_back(
        self, repo: pygit2.Repository, why: _Why, strict: bool, *, holding_lock: bool = False
    ) -> Head:
        """Serve what the mirror already has, marked stale, or explain that there is nothing."""
        spec, mdir = self.spec, self.mdir
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
        return Head(str(sha), branch, stale=StaleNote(str(sha), as_of, why.reason))

    def _reason(self, exc: BaseException) -> str:
        return first_line(exc).replace(self.spec.url, redact_url(self.spec.url))
