"""RemoteMirror: a remote repository kept as a bare shallow mirror, fetched only when its head moves."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import pygit2

from codeask.errors import BadInput, DiskFull, RepoUnavailable, first_line
from codeask.mirror import bare
from codeask.mirror.ledger import Ledger, synced_at
from codeask.mirror.lock import locked
from codeask.mirror.refs import TAG_PREFIX, pick_ref
from codeask.mirror.result import OnRepair, Repair, StaleNote
from codeask.mirror.source import Head, elapsed_ms, find_commit, open_repo
from codeask.mirror.space import is_full
from codeask.mirror.spec import RepoSpec, redact_url

T = TypeVar("T")
# Asked for room when the mirror's disk is full: given the bytes wanted, says whether any was freed.
Reclaim = Callable[[int], bool]
_FIRST_FETCH_BYTES = 1 << 30  # room asked for a first fetch, whose size nothing tells in advance


@dataclass(frozen=True)
class _Why:
    """Why the mirror could not be brought up to date, and for which branch if known."""

    reason: str
    branch: str | None = None
    # Another sync held the lock: nothing failed, so nothing to record and nothing to raise.
    busy: bool = False
    full: bool = False  # the mirror's disk is full: said as DiskFull when nothing can be served


class RemoteMirror:
    """The bare shallow mirror at `mdir` of the remote `spec` names; a Source.

    The mirror is a cache: what a sync relies on (the branch's ref, its commit and root tree) is
    checked on every question, and a mirror that fails the check, cannot be opened, or cannot
    take a fetch is rebuilt from the remote under the lock, and `on_repair` is told.
    """

    def __init__(
        self,
        spec: RepoSpec,
        mdir: Path,
        *,
        lock_timeout_s: float,
        callbacks: pygit2.RemoteCallbacks | None,
        on_repair: OnRepair | None = None,
        reclaim: Reclaim | None = None,
    ) -> None:
        self.spec = spec
        self.mdir = mdir
        self.key = mdir.name
        self.lock_timeout_s = lock_timeout_s
        self.callbacks = callbacks
        self.on_repair = on_repair
        self.reclaim = reclaim
        self._opened: tuple[int, int] | None = None  # the mirror directory this sync read

    def head(self, timings: dict[str, float], *, strict: bool) -> Head:
        """Ask the remote for its head; fetch it at depth 1 only when the mirror lacks it."""
        return self._sync(timings, strict=strict, damaged=None)

    def repair(self, reason: str) -> Head:
        """Objects a snapshot needed could not be read: rebuild the mirror and say where the
        branch is now (unless another process rebuilt it since this one read it)."""
        rebuilt_elsewhere = self._opened is not None and self._identity() != self._opened
        return self._sync({}, strict=False, damaged=None if rebuilt_elsewhere else reason)

    def _sync(self, timings: dict[str, float], *, strict: bool, damaged: str | None) -> Head:
        spec = self.spec
        mark = time.perf_counter()
        repo: pygit2.Repository | None
        try:
            repo = bare.open_mirror(self.mdir)
            self._opened = self._identity()
        except bare.Damaged as exc:
            repo, damaged = None, exc.reason
        except OSError as exc:  # no mirror could be made at all
            raise self._storage_error(exc) from None
        timings["open"] = elapsed_ms(mark)
        if repo is None:
            assert damaged is not None
            return self._locked(timings, strict, None, None, damaged)

        mark = time.perf_counter()
        try:
            heads = self._list_heads(repo)
        except pygit2.GitError as exc:
            timings["remote_head"] = elapsed_ms(mark)
            try:
                bare.check_sound(self.mdir)
            except bare.Damaged as fault:
                return self._locked(timings, strict, None, None, fault.reason)
            return self._fall_back(repo, _Why(self._reason(exc)), strict)
        timings["remote_head"] = elapsed_ms(mark)
        picked = pick_ref(spec, heads)
        branch, _remote_ref, remote_oid = picked

        # The cheap path every question takes: the remote has nothing new for us, and what the
        # mirror has for it can be read (two object reads; its objects may be gone or damaged).
        if damaged is None:
            mark = time.perf_counter()
            try:
                if bare.branch_head(repo, branch) == remote_oid:
                    bare.check_commit(repo, remote_oid)
                    timings["verify"] = elapsed_ms(mark)
                    self._ledger().confirm(spec, branch, str(remote_oid))
                    return Head(str(remote_oid), branch)
            except bare.Damaged as exc:
                damaged = exc.reason
        return self._locked(timings, strict, repo, picked, damaged)

    def _locked(
        self,
        timings: dict[str, float],
        strict: bool,
        repo: pygit2.Repository | None,
        picked: tuple[str, str, pygit2.Oid] | None,
        damaged: str | None,
    ) -> Head:
        """Fetch what the mirror lacks, or rebuild it, under the lock."""
        mark = time.perf_counter()
        with locked(self.mdir, self.lock_timeout_s, self._lock_replaced) as held:
            timings["lock"] = elapsed_ms(mark)
            if not held:
                if damaged is not None:
                    raise RepoUnavailable(
                        f"the mirror of {self.spec.name} is damaged ({damaged}) and another "
                        "sync held its lock; try again shortly"
                    )
                assert picked is not None
                busy = _Why("another sync held the lock", picked[0], busy=True)
                return self._fall_back(repo, busy, strict)
            return self._update(timings, strict, picked, damaged)

    def _update(
        self,
        timings: dict[str, float],
        strict: bool,
        picked: tuple[str, str, pygit2.Oid] | None,
        damaged: str | None,
    ) -> Head:
        """Bring the mirror to the remote's head, rebuilding it if it is at fault; hold the lock."""
        spec, mdir = self.spec, self.mdir
        failed: str | None = None  # a fetch failed although the remote answered
        repo: pygit2.Repository | None = None
        if damaged is None and picked is not None:
            branch, remote_ref, remote_oid = picked
            mark = time.perf_counter()
            try:
                # Another process may have fetched, or rebuilt the mirror, while we waited.
                repo = bare.open_mirror(mdir)
                sha = bare.branch_head(repo, branch)
                fetched = sha != remote_oid
                if fetched:
                    bare.check_sound(mdir)
                    bare.clean_leftovers(mdir)
                    fetch_into = repo
                    sha = self._with_room(
                        lambda: bare.fetch_ref(
                            fetch_into, mdir, spec.url, branch, remote_ref, self.callbacks
                        )
                    )
                    timings["fetch"] = elapsed_ms(mark)
                assert sha is not None
                bare.check_commit(repo, sha)
                self._ledger().record(spec, branch, str(sha))
                return Head(str(sha), branch, fetched=fetched)
            except bare.Damaged as exc:
                damaged = exc.reason
            except (pygit2.GitError, OSError) as exc:  # libgit2 raises OSError for its own I/O
                timings["fetch"] = elapsed_ms(mark)
                if is_full(exc):
                    why = _Why(self._full_reason(), branch, full=True)
                    return self._fall_back(repo, why, strict, holding_lock=True)
                # The remote answered a moment ago, so the mirror itself may be at fault (objects
                # a fetch builds on that are gone): a fresh fetch beside it tells the two apart.
                failed = self._reason(exc)
        return self._rebuild(timings, strict, picked, damaged, failed, repo)

    def _rebuild(
        self,
        timings: dict[str, float],
        strict: bool,
        picked: tuple[str, str, pygit2.Oid] | None,
        damaged: str | None,
        failed: str | None,
        old: pygit2.Repository | None,
    ) -> Head:
        """Fetch the branch into a fresh mirror and put it in place of this one; hold the lock."""
        spec, mdir = self.spec, self.mdir
        chosen = picked

        def fetch(repo: pygit2.Repository, where: Path) -> pygit2.Oid:
            nonlocal chosen
            if chosen is None:
                chosen = pick_ref(spec, self._list_heads(repo))
            return bare.fetch_ref(repo, where, spec.url, chosen[0], chosen[1], self.callbacks)

        reason = damaged or f"a fetch into it failed: {failed}"
        mark = time.perf_counter()
        try:
            oid = self._with_room(lambda: bare.rebuild(mdir, fetch, keep_old=damaged is None))
        except (pygit2.GitError, bare.Damaged) as exc:
            timings["rebuild"] = elapsed_ms(mark)
            why = exc.reason if isinstance(exc, bare.Damaged) else self._reason(exc)
            if is_full(exc):
                raise DiskFull(
                    f"the mirror of {spec.name} could not be rebuilt: {self._full_reason()}"
                ) from None
            if damaged is None and old is not None:
                # The old mirror is sound and kept: the remote is what fails, so answer stale.
                branch = chosen[0] if chosen else None
                return self._fall_back(old, _Why(failed or why, branch), strict, holding_lock=True)
            raise RepoUnavailable(
                f"the mirror of {spec.name} is damaged ({reason}) and fetching it anew from "
                f"{redact_url(spec.url)} failed: {why}"
            ) from None
        except OSError as exc:
            raise self._storage_error(exc) from None
        timings["rebuild"] = elapsed_ms(mark)
        assert chosen is not None
        self._report("mirror", reason)
        self._opened = self._identity()
        self._ledger().record(spec, chosen[0], str(oid))
        return Head(str(oid), chosen[0], fetched=True)

    def commit(self, sha: str, *, fetch: bool = False) -> str:
        spec = self.spec
        exists = self.mdir.is_dir()
        found = self._find(sha) if exists else None
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
        self.head({}, strict=False)  # makes sure the mirror exists and is sound
        with locked(self.mdir, self.lock_timeout_s, self._lock_replaced) as held:
            if not held:
                raise RepoUnavailable(f"another sync of {spec.name} held the lock; try again")
            try:
                bare.check_sound(self.mdir)
                self._with_room(
                    lambda: bare.fetch_commit(self.objects(), spec.url, sha, self.callbacks)
                )
            except bare.Damaged as exc:
                raise RepoUnavailable(
                    f"the mirror of {spec.name} is damaged: {exc.reason}"
                ) from None
            except (pygit2.GitError, OSError) as exc:
                if is_full(exc):
                    raise DiskFull(
                        f"commit {sha[:12]} of {spec.name} could not be fetched: "
                        f"{self._full_reason()}"
                    ) from None
                if isinstance(exc, OSError):  # libgit2's own I/O in the mirror failed
                    raise RepoUnavailable(
                        f"commit {sha[:12]} could not be written into the mirror of {spec.name}: "
                        f"{first_line(exc)}"
                    ) from None
                raise BadInput(
                    f"commit {sha[:12]} could not be fetched from {redact_url(spec.url)} "
                    f"({first_line(exc)}); the server may not allow fetching by SHA"
                ) from None
        found = self._find(sha)
        if found is None:
            raise BadInput(f"commit {sha[:12]} was not among what {redact_url(spec.url)} sent")
        return found

    def _find(self, sha: str) -> str | None:
        """The commit `sha` names in the mirror; None if absent or the mirror cannot be read."""
        try:
            return find_commit(open_repo(self.mdir), sha)
        except pygit2.GitError:
            return None

    def objects(self) -> pygit2.Repository:
        try:
            return open_repo(self.mdir)
        except pygit2.GitError as exc:
            raise RepoUnavailable(
                f"the mirror of {self.spec.name} cannot be read: {first_line(exc)}"
            ) from None

    def default_branch(self) -> str | None:
        branch = self._ledger().read().get("default_branch")
        return branch if isinstance(branch, str) else None

    def last_synced_at(self) -> datetime | None:
        state = self._ledger().read()
        return synced_at(state, self.spec.branch or state.get("default_branch"))

    def _fall_back(
        self,
        repo: pygit2.Repository | None,
        why: _Why,
        strict: bool,
        *,
        holding_lock: bool = False,
    ) -> Head:
        """Serve what the mirror already has, marked stale, or explain that there is nothing."""
        spec, mdir = self.spec, self.mdir
        shown = redact_url(spec.url)
        ledger = self._ledger()
        fail: type[RepoUnavailable | DiskFull] = DiskFull if why.full else RepoUnavailable
        if not why.busy:
            ledger.note_error(why.reason, holding_lock=holding_lock)
            if strict:
                raise fail(f"cannot sync {spec.name} from {shown}: {why.reason}")
        state = ledger.read()
        branch = why.branch or spec.branch or state.get("default_branch") or _only_branch(repo)
        sha = None
        if branch and repo is not None:
            try:
                sha = bare.branch_head(repo, branch)
                if sha is not None:
                    bare.check_commit(repo, sha)
            except bare.Damaged as exc:
                raise RepoUnavailable(
                    f"cannot sync {spec.name} from {shown} ({why.reason}), and its mirror is "
                    f"damaged ({exc.reason}), so there is nothing to fall back on"
                ) from None
        if branch is None or sha is None:
            which = f"branch {branch!r}" if branch else "its default branch"
            raise fail(
                f"cannot sync {spec.name} from {shown} ({why.reason}), "
                f"and there is no earlier mirror of {which} to fall back on"
            )
        as_of = synced_at(state, branch)
        if as_of is None:
            as_of = datetime.fromtimestamp(mdir.stat().st_mtime, UTC)
        return Head(str(sha), branch, stale=StaleNote(str(sha), as_of, why.reason))

    def _with_room(self, attempt: Callable[[], T]) -> T:
        """Run a fetch; if the disk is full, free what can be freed and run it once more."""
        try:
            return attempt()
        except (pygit2.GitError, OSError) as exc:
            if not is_full(exc):
                raise
            bare.clean_leftovers(self.mdir)
            need = bare.pack_bytes(self.mdir) or _FIRST_FETCH_BYTES
            if self.reclaim is None or not self.reclaim(need):
                raise
        return attempt()

    def _list_heads(self, repo: pygit2.Repository) -> list[Any]:
        return list(
            repo.remotes.create_anonymous(self.spec.url).list_heads(callbacks=self.callbacks)
        )

    def _ledger(self) -> Ledger:
        return Ledger(self.mdir, self._report)

    def _lock_replaced(self, why: str) -> None:
        self._report("lock file", why)

    def _report(self, what: str, reason: str) -> None:
        if self.on_repair is not None:
            self.on_repair(Repair(self.spec.name, what, reason))

    def _identity(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.mdir)
        except OSError:
            return None
        return (st.st_dev, st.st_ino)

    def _full_reason(self) -> str:
        return f"no space left on the disk under {self.mdir.parent}"

    def _storage_error(self, exc: OSError) -> Exception:
        if is_full(exc):
            return DiskFull(f"cannot make the mirror of {self.spec.name}: {self._full_reason()}")
        return RepoUnavailable(
            f"cannot make the mirror of {self.spec.name} under {self.mdir.parent}: "
            f"{(exc.strerror or type(exc).__name__).lower()}"
        )

    def _reason(self, exc: BaseException) -> str:
        return first_line(exc).replace(self.spec.url, redact_url(self.spec.url))


def _only_branch(repo: pygit2.Repository | None) -> str | None:
    """The mirror's one branch, when the state that names the default one is lost: a mirror
    synced only for its default branch holds no other."""
    if repo is None:
        return None
    try:
        names = [n for n in repo.branches.local if not n.startswith(TAG_PREFIX)]
    except pygit2.GitError:
        return None
    return names[0] if len(names) == 1 else None
