"""Bare shallow mirrors of remote repos, kept current with pygit2 alone, and immutable snapshots."""

from __future__ import annotations

import contextlib
import difflib
import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pygit2
from pygit2.enums import RepositoryOpenFlag

from codeask.denylist import DenyList
from codeask.errors import BadInput, RepoUnavailable, first_line
from codeask.settings import Settings
from codeask.snapshot import RepoRef, Snapshot

CallbacksFactory = Callable[["RepoSpec"], pygit2.RemoteCallbacks | None]

_SCHEMES = ("https", "http", "ssh", "git", "file")
# user@host:path as git understands it; a colon before any slash is what makes it remote.
_SCP_RE = re.compile(
    r"^(?:[A-Za-z0-9._~+-]+@)?(?P<host>[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):(?P<path>.+)$"
)
_SNAPSHOT_DIR_RE = re.compile(r"^[0-9a-f]{40,64}-[0-9a-f]{12}$")
_HEX_RE = re.compile(r"^[0-9a-f]{4,64}$")

_MODE_TREE = 0o040000
_MODE_BLOB = 0o100644
_MODE_BLOB_GROUP_WRITABLE = 0o100664  # written by very old gits; still a plain file
_MODE_BLOB_EXECUTABLE = 0o100755
_MODE_LINK = 0o120000

_SNAPSHOT_IDLE_S = 600.0  # a snapshot untouched this long is nobody's current answer
_TEMP_IDLE_S = 3600.0  # longer than any Lambda can live, so a live writer's temp dir is never taken
_TOUCH_EVERY_S = 60.0
_SNAPSHOT_CACHE_MAX = 16
_STATE_REFRESH_S = 60.0  # how stale "as of" may be before an unchanged sync rewrites the state file
_LOCK_POLL_MAX_S = 0.25
_TRACKING = "refs/remotes/origin/"
# A tag's commit is kept under a local branch of this prefix, so one code path serves both.
TAG_PREFIX = "tags/"
# Lock files libgit2 leaves when killed mid-write; while we hold the mirror lock they are stale.
_GIT_LOCKS = ("packed-refs.lock", "shallow.lock", "FETCH_HEAD.lock", "config.lock")


def redact_url(url: str) -> str:
    """The URL without credentials, safe for messages, state files and permalinks."""
    if "://" not in url:
        return url
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    userinfo, host = parts.netloc.rsplit("@", 1)
    # A bare user (ssh://git@host) is not a secret; https userinfo is usually a token.
    if ":" not in userinfo and parts.scheme not in ("http", "https"):
        return url
    return parts._replace(netloc=f"***@{host}").geturl()


def token_callbacks(token: str) -> CallbacksFactory:
    """Credentials for private https remotes: the token as the password (GitHub, GitLab, Bitbucket)."""

    def factory(spec: RepoSpec) -> pygit2.RemoteCallbacks | None:
        if not spec.url.lower().startswith("https://"):
            return None
        return pygit2.RemoteCallbacks(credentials=pygit2.UserPass("x-access-token", token))

    return factory


def _is_local(url: str) -> bool:
    return url.startswith("/") or url.lower().startswith("file://")


def _name_from(path: str) -> str:
    tail = path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    if tail.endswith(".git"):
        tail = tail[:-4]
    return tail or "repo"


def _open_local_repo(path: Path, shown: str) -> None:
    if not path.exists():
        raise BadInput(
            f"{shown!r} is not an existing local path or a URL; give a path to a git repository "
            "or a URL (https://, http://, ssh://, git://, file:// or git@host:org/repo.git)"
        )
    try:
        pygit2.Repository(str(path), flags=RepositoryOpenFlag.NO_SEARCH)
    except pygit2.GitError as exc:
        raise BadInput(
            f"{shown!r} is not a git repository (work tree or bare): {first_line(exc)}"
        ) from None


@dataclass(frozen=True)
class RepoSpec:
    """Which repository to answer about: a name for humans, where to fetch it, which branch."""

    name: str
    url: str
    branch: str | None = None  # None = the remote's default branch (its HEAD symref)

    @classmethod
    def parse(cls, value: str, branch: str | None = None, name: str | None = None) -> RepoSpec:
        """Accept a local path (work tree or bare repo) or a fetchable URL, or say what is wrong."""
        raw = (value or "").strip()
        if not raw:
            raise BadInput("no repository given; give a local path or a URL")
        if "://" in raw:
            url, derived = cls._parse_url(raw)
        elif (m := _SCP_RE.match(raw)) and not Path(raw).expanduser().exists():
            if m["path"].strip("/") in ("", ".git"):
                raise BadInput(f"{raw!r} has no repository path after the ':'")
            url, derived = raw, _name_from(m["path"])
        else:
            path = Path(raw).expanduser().resolve()
            _open_local_repo(path, raw)
            url, derived = str(path), _name_from(str(path))
        return cls(name=cls._clean_name(name, derived), url=url, branch=cls._clean_branch(branch))

    @staticmethod
    def _parse_url(raw: str) -> tuple[str, str]:
        try:
            parts = urlsplit(raw)
            parts.port  # noqa: B018 -- raises on a malformed port
        except ValueError as exc:
            raise BadInput(f"{redact_url(raw)!r} is not a valid URL: {exc}") from None
        scheme = parts.scheme.lower()
        if scheme not in _SCHEMES:
            raise BadInput(
                f"{redact_url(raw)!r}: unsupported URL scheme {parts.scheme!r}; "
                f"use one of {', '.join(s + '://' for s in _SCHEMES)}"
            )
        if scheme == "file":
            if parts.netloc not in ("", "localhost"):
                raise BadInput(f"{raw!r}: file:// URLs must name a local path (file:///path)")
            _open_local_repo(Path(unquote(parts.path)), raw)
            return raw, _name_from(unquote(parts.path))
        if not parts.hostname:
            raise BadInput(f"{redact_url(raw)!r} has no host name")
        if parts.path.strip("/") in ("", ".git"):
            raise BadInput(f"{redact_url(raw)!r} has no repository path after the host")
        return raw, _name_from(parts.path)

    @staticmethod
    def _clean_name(name: str | None, derived: str) -> str:
        if name is None:
            return derived
        if not name.strip():
            raise BadInput("repository name must not be empty")
        return name.strip()

    @staticmethod
    def _clean_branch(branch: str | None) -> str | None:
        if branch is None:
            return None
        b = branch.strip().removeprefix("refs/heads/")
        if not b or not pygit2.reference_is_valid_name(f"refs/heads/{b}"):
            raise BadInput(f"{branch!r} is not a valid branch name")
        return b

    def ref(self, resolved_branch: str | None = None) -> RepoRef:
        return RepoRef(
            name=self.name, url=redact_url(self.url), branch=resolved_branch or self.branch
        )


@dataclass(frozen=True)
class StaleNote:
    """Why an answer comes from an older mirror state, and from when."""

    sha: str
    as_of: datetime  # UTC, time of the last successful sync
    reason: str

    def message(self) -> str:
        when = self.as_of.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
        return f"may be stale — as of {self.sha[:7]}, {when} ({self.reason})"


@dataclass
class SyncResult:
    snapshot: Snapshot
    sha: str
    branch: str  # the resolved branch name
    fetched: bool  # whether a fetch happened
    stale: StaleNote | None
    timings_ms: dict[str, float] = field(default_factory=dict)


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


class _Process:
    """State shared by every MirrorStore in this process, so warm Lambda invocations reuse it."""

    def __init__(self) -> None:
        self.guard = threading.Lock()
        # fcntl locks belong to the process, so threads must also exclude each other.
        self.mirror_locks: dict[Path, threading.Lock] = {}
        # Least recently used last out; each entry may hold a large file list.
        self.snapshots: OrderedDict[tuple[Path, RepoRef], Snapshot] = OrderedDict()
        self.touched: dict[Path, float] = {}
        self.pruned: dict[Path, float] = {}
        self.confirmed: dict[tuple[Path, str], float] = {}
        # libgit2 repository handles must not be shared between threads.
        self.local = threading.local()

    def mirror_lock(self, path: Path) -> threading.Lock:
        with self.guard:
            return self.mirror_locks.setdefault(path, threading.Lock())

    def repos(self) -> dict[Path, pygit2.Repository]:
        cache: dict[Path, pygit2.Repository] | None = getattr(self.local, "repos", None)
        if cache is None:
            cache = self.local.repos = {}
        return cache


_PROCESS = _Process()


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
        self.snapshots_keep = max(1, snapshots_keep)
        # Credentials for private remotes plug in here, as RemoteCallbacks built per repo.
        self.callbacks_factory = callbacks_factory
        self._fingerprint = deny.fingerprint()

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
        repo = self._open(mdir)
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
        branch = spec.branch or self._read_state(mdir).get("default_branch")
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
        with self._locked(mdir, self.lock_timeout_s) as held:
            if not held:
                raise RepoUnavailable(f"another sync of {spec.name} held the lock; try again")
            repo = self._open(mdir)
            try:
                remote = repo.remotes.create_anonymous(spec.url)
                remote.fetch([want], callbacks=callbacks, depth=0 if _is_local(spec.url) else 1)
            except pygit2.GitError as exc:
                raise BadInput(
                    f"commit {want[:12]} could not be fetched from {redact_url(spec.url)} "
                    f"({first_line(exc)}); the server may not allow fetching by SHA"
                ) from None
        return self.snapshot_at(spec, want)

    # ---- mirror -----------------------------------------------------------------------------

    def _update(self, spec: RepoSpec, timings: dict[str, float], *, strict: bool) -> _Head:
        mdir = self.mirror_dir(spec)
        mark = time.perf_counter()
        repo = self._open_or_create(mdir)
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
        if _local_head(repo, branch) == remote_oid:
            self._confirm(spec, mdir, branch, str(remote_oid))
            return _Head(str(remote_oid), branch, fetched=False, stale=None)

        mark = time.perf_counter()
        with self._locked(mdir, self.lock_timeout_s) as held:
            timings["lock"] = _ms(mark)
            if not held:
                reason = _Why("another sync held the lock", branch)
                return self._fall_back(spec, mdir, repo, reason, strict=False)
            fetched = False
            sha = _local_head(repo, branch)
            # Another process may have fetched while we waited for the lock.
            if sha != remote_oid:
                mark = time.perf_counter()
                try:
                    sha = self._fetch(repo, mdir, spec, branch, remote_ref, callbacks)
                except pygit2.GitError as exc:
                    timings["fetch"] = _ms(mark)
                    reason = _Why(self._reason(spec, exc), branch)
                    return self._fall_back(spec, mdir, repo, reason, strict, locked=True)
                timings["fetch"] = _ms(mark)
                fetched = True
            assert sha is not None
            self._record(spec, mdir, branch, str(sha))
        return _Head(str(sha), branch, fetched=fetched, stale=None)

    def _fetch(
        self,
        repo: pygit2.Repository,
        mdir: Path,
        spec: RepoSpec,
        branch: str,
        remote_ref: str,
        callbacks: pygit2.RemoteCallbacks | None,
    ) -> pygit2.Oid:
        for name in (*_GIT_LOCKS, f"refs/heads/{branch}.lock", f"{_TRACKING}{branch}.lock"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(mdir / name)
        tracking = f"{_TRACKING}{branch}"
        remote = repo.remotes.create_anonymous(spec.url)
        # libgit2 refuses depth over the local transport; local remotes are cheap to copy anyway.
        depth = 0 if _is_local(spec.url) else 1
        remote.fetch([f"+{remote_ref}:{tracking}"], callbacks=callbacks, depth=depth)
        fetched = repo.references[tracking].target
        assert isinstance(fetched, pygit2.Oid)
        oid = repo[fetched].peel(pygit2.Commit).id  # an annotated tag points at a tag object
        # Never merge: a depth-1 history cannot be fast-forwarded, and a force-push must win.
        repo.references.create(f"refs/heads/{branch}", oid, force=True)
        return oid

    def _fall_back(
        self,
        spec: RepoSpec,
        mdir: Path,
        repo: pygit2.Repository,
        why: _Why,
        strict: bool,
        *,
        locked: bool = False,
    ) -> _Head:
        """Serve what the mirror already has, marked stale, or explain that there is nothing."""
        shown = redact_url(spec.url)
        if why.reason != "another sync held the lock":
            self._note_error(mdir, why.reason, locked=locked)
            if strict:
                raise RepoUnavailable(f"cannot reach {shown}: {why.reason}")
        state = self._read_state(mdir)
        branch = why.branch or spec.branch or state.get("default_branch")
        sha = _local_head(repo, branch) if branch else None
        if branch is None or sha is None:
            which = f"branch {branch!r}" if branch else "its default branch"
            raise RepoUnavailable(
                f"cannot sync {spec.name} from {shown} ({why.reason}), "
                f"and there is no earlier mirror of {which} to fall back on"
            )
        as_of = _parse_time(state.get("branches", {}).get(branch, {}).get("synced_at"))
        if as_of is None:
            as_of = datetime.fromtimestamp(mdir.stat().st_mtime, UTC)
        return _Head(str(sha), branch, False, StaleNote(str(sha), as_of, why.reason))

    def _reason(self, spec: RepoSpec, exc: BaseException) -> str:
        return first_line(exc).replace(spec.url, redact_url(spec.url))

    def _open(self, mdir: Path) -> pygit2.Repository:
        repos = _PROCESS.repos()
        repo = repos.get(mdir)
        if repo is None:
            repo = repos[mdir] = pygit2.Repository(str(mdir), flags=RepositoryOpenFlag.NO_SEARCH)
        return repo

    def _open_or_create(self, mdir: Path) -> pygit2.Repository:
        try:
            return self._open(mdir)
        except pygit2.GitError as exc:
            if not os.path.lexists(mdir):
                self._create(mdir)
                return self._open(mdir)
            broken = exc
        # Mirrors are caches: one that cannot be opened is rebuilt, under the lock so that two
        # processes never rebuild it at once or throw away each other's fresh copy.
        with self._locked(mdir, self.lock_timeout_s) as held:
            if not held:
                raise RepoUnavailable(
                    f"the mirror of {mdir.name} cannot be opened ({first_line(broken)}) "
                    "and another sync held its lock"
                )
            with contextlib.suppress(pygit2.GitError):
                return self._open(mdir)
            trash = mdir.with_name(f".trash-{mdir.name}-{uuid.uuid4().hex[:8]}")
            with contextlib.suppress(FileNotFoundError):
                os.rename(mdir, trash)
                _remove_tree(trash)
            self._create(mdir)
        return self._open(mdir)

    def _create(self, mdir: Path) -> None:
        """Make an empty bare mirror beside `mdir` and rename it into place in one step."""
        self.mirror_root.mkdir(parents=True, exist_ok=True)
        for old in self.mirror_root.glob(f".tmp-{mdir.name}-*"):
            # Left by a process killed while creating; nobody takes an hour to init a repo.
            with contextlib.suppress(OSError):
                if time.time() - old.stat().st_mtime > _TEMP_IDLE_S:
                    _remove_tree(old)
        tmp = mdir.with_name(f".tmp-{mdir.name}-{uuid.uuid4().hex[:8]}")
        pygit2.init_repository(str(tmp), bare=True)
        try:
            os.rename(tmp, mdir)
        except OSError as exc:
            # Another process created it first; theirs is as good as ours.
            _remove_tree(tmp)
            if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                raise

    # ---- lock and state ---------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self, mdir: Path, timeout_s: float) -> Iterator[bool]:
        """Hold the mirror's lock file; yields False if it stayed busy for `timeout_s`.

        fcntl.lockf works over NFS/EFS and the kernel releases it when the holder dies, so a
        killed sync never wedges the mirror.
        """
        deadline = time.monotonic() + timeout_s
        thread_lock = _PROCESS.mirror_lock(mdir)
        if not (
            thread_lock.acquire(timeout=timeout_s) if timeout_s > 0 else thread_lock.acquire(False)
        ):
            yield False
            return
        try:
            self.mirror_root.mkdir(parents=True, exist_ok=True)
            # Closing any descriptor of this file drops a process's lock, so it is opened only here.
            fd = os.open(_sibling(mdir, ".lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                if not _lockf_until(fd, deadline):
                    yield False
                    return
                try:
                    yield True
                finally:
                    fcntl.lockf(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
        finally:
            thread_lock.release()

    def last_synced_at(self, spec: RepoSpec) -> datetime | None:
        """When the mirror last agreed with the remote for the spec's branch (its default if None)."""
        state = self._read_state(self.mirror_dir(spec))
        branch = spec.branch or state.get("default_branch")
        entry = (state.get("branches") or {}).get(branch) if branch else None
        return _parse_time(entry.get("synced_at")) if isinstance(entry, dict) else None

    def _read_state(self, mdir: Path) -> dict[str, Any]:
        try:
            data = json.loads(_sibling(mdir, ".json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write_state(self, mdir: Path, state: dict[str, Any]) -> None:
        path = _sibling(mdir, ".json")
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
        try:
            tmp.write_text(json.dumps(state, indent=1, sort_keys=True), encoding="utf-8")
            os.replace(tmp, path)
        except OSError:
            # The state only dates stale notes; the refs are the truth, so a full or read-only
            # disk here must not fail a sync that already has its commit.
            with contextlib.suppress(OSError):
                tmp.unlink()

    def _record(self, spec: RepoSpec, mdir: Path, branch: str, sha: str) -> None:
        """Note a successful sync; the caller holds the mirror lock."""
        state = self._read_state(mdir)
        state["url"] = redact_url(spec.url)
        if spec.branch is None:
            state["default_branch"] = branch
        branches = state.setdefault("branches", {})
        branches[branch] = {"sha": sha, "synced_at": datetime.now(UTC).isoformat()}
        state.setdefault("last_error", None)
        self._write_state(mdir, state)
        _PROCESS.confirmed[(mdir, branch)] = time.monotonic()

    def _confirm(self, spec: RepoSpec, mdir: Path, branch: str, sha: str) -> None:
        """Refresh "as of" after an unchanged check, at most once a minute per process.

        Writing state costs several metadata operations on a network filesystem, and a stale
        note only needs minute precision; a busy lock means someone else is recording anyway.
        """
        last = _PROCESS.confirmed.get((mdir, branch))
        if last is not None and time.monotonic() - last < _STATE_REFRESH_S:
            return
        with self._locked(mdir, 0) as held:
            if held:
                self._record(spec, mdir, branch, sha)

    def _note_error(self, mdir: Path, reason: str, *, locked: bool) -> None:
        entry = {"at": datetime.now(UTC).isoformat(), "message": reason}
        if locked:
            state = self._read_state(mdir)
            state["last_error"] = entry
            self._write_state(mdir, state)
            return
        with self._locked(mdir, 0) as held:
            if held:
                state = self._read_state(mdir)
                state["last_error"] = entry
                self._write_state(mdir, state)

    # ---- snapshots --------------------------------------------------------------------------

    def _snapshot(self, spec: RepoSpec, mdir: Path, sha: str, branch: str | None) -> Snapshot:
        repo_dir = self.snapshot_root / mdir.name
        target = repo_dir / f"{sha}-{self._fingerprint}"
        ref = spec.ref(branch)
        key = (target, ref)
        with _PROCESS.guard:
            cached = _PROCESS.snapshots.get(key)
            if cached is not None:
                _PROCESS.snapshots.move_to_end(key)
        if cached is not None and target.is_dir():
            self._touch(target)
            self._maybe_prune(repo_dir, target)
            return cached
        created = False
        if not target.is_dir():
            self._materialise(self._open(mdir), sha, target)
            created = True
        self._touch(target, force=True)
        snapshot = Snapshot(root=target, sha=sha, repo=ref, deny=self.deny)
        with _PROCESS.guard:
            _PROCESS.snapshots[key] = snapshot
            while len(_PROCESS.snapshots) > _SNAPSHOT_CACHE_MAX:
                _PROCESS.snapshots.popitem(last=False)
        self._maybe_prune(repo_dir, target, force=created)
        return snapshot

    def _materialise(self, repo: pygit2.Repository, sha: str, target: Path) -> None:
        """Write the commit's tree beside `target`, then rename it into place in one step."""
        commit = repo[sha].peel(pygit2.Commit)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".tmp-{target.name}-{os.getpid()}-{uuid.uuid4().hex[:8]}")
        os.mkdir(tmp)
        try:
            dirs = _write_tree(commit.tree, str(tmp), self.deny)
            for d in reversed(dirs):
                os.chmod(d, 0o555)
            try:
                os.rename(tmp, target)
            except OSError as exc:
                if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY) or not target.is_dir():
                    raise
                _remove_tree(tmp)  # another process won the race; its snapshot is identical
            else:
                os.chmod(target, 0o555)
        except BaseException:
            _remove_tree(tmp)
            raise

    def _touch(self, target: Path, *, force: bool = False) -> None:
        now = time.monotonic()
        last = _PROCESS.touched.get(target)
        if force or last is None or now - last >= _TOUCH_EVERY_S:
            with contextlib.suppress(OSError):
                os.utime(target)
            _PROCESS.touched[target] = now

    def _maybe_prune(self, repo_dir: Path, current: Path, *, force: bool = False) -> None:
        now = time.monotonic()
        last = _PROCESS.pruned.get(repo_dir)
        if not force and last is not None and now - last < _SNAPSHOT_IDLE_S:
            return
        _PROCESS.pruned[repo_dir] = now
        self._prune(repo_dir, current)

    def _prune(self, repo_dir: Path, current: Path) -> None:
        """Drop this repo's snapshots beyond `snapshots_keep` that nobody used for ten minutes."""
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
                if now - mtime > _TEMP_IDLE_S:
                    _remove_tree(path)
            elif path != current and _SNAPSHOT_DIR_RE.match(entry.name) and entry.is_dir():
                kept.append((mtime, path))
        kept.sort(reverse=True)
        for mtime, path in kept[self.snapshots_keep - 1 :]:
            if now - mtime <= _SNAPSHOT_IDLE_S:
                continue
            # Rename first so nobody starts reading a half-deleted tree under its real name.
            trash = repo_dir / f".trash-{path.name}-{uuid.uuid4().hex[:8]}"
            try:
                os.rename(path, trash)
            except OSError:
                continue
            with _PROCESS.guard:
                for key in [k for k in _PROCESS.snapshots if k[0] == path]:
                    del _PROCESS.snapshots[key]
                _PROCESS.touched.pop(path, None)
            _remove_tree(trash)


# ---- helpers --------------------------------------------------------------------------------


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000.0, 3)


def _sibling(mdir: Path, suffix: str) -> Path:
    return mdir.with_name(mdir.name + suffix)


def _parse_time(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _local_head(repo: pygit2.Repository, branch: str) -> pygit2.Oid | None:
    ref = repo.references.get(f"refs/heads/{branch}")
    if ref is None:
        return None
    target = ref.target
    return target if isinstance(target, pygit2.Oid) else None


def pick_ref(spec: RepoSpec, heads: list[Any]) -> tuple[str, str, pygit2.Oid]:
    """(local key, remote ref, commit) for the spec's branch or tag, or the remote's default."""
    branches: dict[str, pygit2.Oid] = {}
    tags: dict[str, pygit2.Oid] = {}
    head = None
    for h in heads:
        if h.name == "HEAD":
            head = h
        elif h.name and h.name.startswith("refs/heads/"):
            branches[h.name[len("refs/heads/") :]] = h.oid
        elif h.name and h.name.startswith("refs/tags/"):
            name = h.name[len("refs/tags/") :]
            if name.endswith("^{}"):
                tags[name[:-3]] = h.oid  # the commit an annotated tag points at wins
            else:
                tags.setdefault(name, h.oid)
    shown = redact_url(spec.url)
    if spec.branch is not None:
        if spec.branch in branches:
            return spec.branch, f"refs/heads/{spec.branch}", branches[spec.branch]
        if spec.branch in tags:
            return f"{TAG_PREFIX}{spec.branch}", f"refs/tags/{spec.branch}", tags[spec.branch]
        raise BadInput(
            f"no branch or tag {spec.branch!r} was found on {shown}; {_some(branches, spec)}"
        )
    if head is not None:
        target = head.symref_target or ""
        if target.startswith("refs/heads/") and target[len("refs/heads/") :] in branches:
            name = target[len("refs/heads/") :]
            return name, target, branches[name]
        # Servers that do not advertise the symref: the branch HEAD points at by commit.
        same = sorted(b for b, oid in branches.items() if oid == head.oid)
        for preferred in ("main", "master"):
            if preferred in same:
                return preferred, f"refs/heads/{preferred}", branches[preferred]
        if same:
            return same[0], f"refs/heads/{same[0]}", branches[same[0]]
    raise BadInput(
        f"{shown} has no default branch (its HEAD is not on a branch, or it is empty); "
        f"name a branch. {_some(branches)}"
    )


def _some(branches: dict[str, pygit2.Oid], spec: RepoSpec | None = None, limit: int = 8) -> str:
    if not branches:
        return "the remote has no branches"
    names = sorted(branches)
    close = difflib.get_close_matches(spec.branch, names, n=3) if spec and spec.branch else []
    pick = close + [n for n in names if n not in close]
    more = len(names) - limit
    listed = ", ".join(pick[:limit]) + (f" and {more} more" if more > 0 else "")
    return f"branches there include: {listed}"


def _lockf_until(fd: int, deadline: float) -> bool:
    delay = 0.01
    while True:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EAGAIN):
                raise
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(delay, left))
        delay = min(delay * 2, _LOCK_POLL_MAX_S)


def _safe_entry_name(name: str) -> bool:
    # Tree entries come from the remote: a crafted one must not climb out of the snapshot.
    return name not in ("", ".", "..") and "/" not in name and "\x00" not in name


def _write_tree(root: pygit2.Tree, dest: str, deny: DenyList) -> list[str]:
    """Write the visible entries of `root` under `dest`; returns the dirs made, parents first."""
    dirs: list[str] = []
    stack: list[tuple[pygit2.Tree, str, str]] = [(root, dest, "")]
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    while stack:
        tree, where, prefix = stack.pop()
        for entry in tree:
            name = entry.name
            if name is None or not _safe_entry_name(name):
                continue
            rel = prefix + name
            # Denied paths are never written, so a secret never reaches the snapshot disk.
            if deny.is_denied(rel):
                continue
            mode = entry.filemode
            path = os.path.join(where, name)
            try:
                if mode == _MODE_TREE and isinstance(entry, pygit2.Tree):
                    os.mkdir(path, 0o755)
                    dirs.append(path)
                    stack.append((entry, path, rel + "/"))
                elif not isinstance(entry, pygit2.Blob):
                    continue  # a gitlink (submodule): its commit is not in this repository
                elif mode in (_MODE_BLOB, _MODE_BLOB_GROUP_WRITABLE, _MODE_BLOB_EXECUTABLE):
                    perm = 0o555 if mode == _MODE_BLOB_EXECUTABLE else 0o444
                    fd = os.open(path, flags, perm)
                    try:
                        view = memoryview(entry.data)
                        while view:
                            view = view[os.write(fd, view) :]
                    finally:
                        os.close(fd)
                elif mode == _MODE_LINK:
                    target = entry.data
                    if target and b"\x00" not in target:
                        os.symlink(os.fsdecode(target), path)
            except FileExistsError:
                continue  # a crafted tree with a duplicate name; the first entry wins
    return dirs


def _remove_tree(path: Path) -> None:
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
