"""The JSON file beside each mirror: when each branch last agreed with the remote, and the last error."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from codeask.errors import CodeaskError
from codeask.mirror.lock import locked
from codeask.mirror.materialise import remove_tree
from codeask.mirror.spec import RepoSpec, redact_url

_REFRESH_S = 60.0  # how stale "as of" may be before an unchanged sync rewrites the file
_MAX_BYTES = 1 << 20  # a state file is a few hundred bytes; a huge one is damage, not state
# O_NONBLOCK: a FIFO in its place must not hang the read; O_NOFOLLOW: nor a symlink lead elsewhere.
_READ = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK

# When this process last wrote "as of" for (mirror, branch), to skip rewriting it every question.
_confirmed: dict[tuple[Path, str], float] = {}

# Told (what, why) when something beside the mirror was unusable and has been replaced.
Replaced = Callable[[str, str], None]


class Ledger:
    """A mirror's sync record; the refs are the truth, this only dates them for stale notes."""

    def __init__(self, mdir: Path, on_replaced: Replaced | None = None) -> None:
        self.mdir = mdir
        self.path = mdir.with_name(mdir.name + ".json")
        self.on_replaced = on_replaced

    def read(self) -> dict[str, Any]:
        """The state record() wrote; a file of any other shape reads as no state at all."""
        return self._read()[0]

    def _read(self) -> tuple[dict[str, Any], str | None]:
        """(the state, why the file is unusable if it is there but unusable)."""
        try:
            fd = os.open(self.path, _READ)
        except FileNotFoundError:
            return {}, None
        except OSError as exc:
            return {}, (exc.strerror or "unreadable").lower()
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return {}, "not a regular file"
            raw = os.read(fd, _MAX_BYTES + 1)
        except OSError as exc:
            return {}, (exc.strerror or "unreadable").lower()
        finally:
            os.close(fd)
        if len(raw) > _MAX_BYTES:
            return {}, "larger than any state file"
        try:
            data = json.loads(raw.decode("utf-8"))
        except (ValueError, RecursionError):  # RecursionError: arrays nested thousands deep
            return {}, "not JSON"
        state = _shaped(data)
        return state, None if state == data else "not the expected JSON shape"

    def _write(self, state: dict[str, Any], damaged: str | None) -> None:
        tmp = self.path.with_name(f".{self.path.name}.{uuid.uuid4().hex[:8]}.tmp")
        try:
            tmp.write_text(json.dumps(state, indent=1, sort_keys=True), encoding="utf-8")
            try:
                os.replace(tmp, self.path)
            except IsADirectoryError:
                # A directory in its place: move it aside whole, then put the file there.
                trash = self.path.with_name(f".trash-{self.path.name}-{uuid.uuid4().hex[:8]}")
                os.rename(self.path, trash)
                remove_tree(trash)
                os.replace(tmp, self.path)
        except OSError:
            # The state only dates stale notes; the refs are the truth, so a full or read-only
            # disk here must not fail a sync that already has its commit.
            with contextlib.suppress(OSError):
                tmp.unlink()
            return
        if damaged is not None and self.on_replaced is not None:
            self.on_replaced("state file", damaged)

    def record(self, spec: RepoSpec, branch: str, sha: str) -> None:
        """Note a successful sync; the caller holds the mirror lock."""
        state, damaged = self._read()
        state["url"] = redact_url(spec.url)
        if spec.branch is None:
            state["default_branch"] = branch
        branches = state.setdefault("branches", {})
        branches[branch] = {"sha": sha, "synced_at": datetime.now(UTC).isoformat()}
        state.setdefault("last_error", None)
        self._write(state, damaged)
        _confirmed[(self.mdir, branch)] = time.monotonic()

    def confirm(self, spec: RepoSpec, branch: str, sha: str) -> None:
        """Refresh "as of" after an unchanged check, at most once a minute per process.

        Writing state costs several metadata operations on a network filesystem, and a stale
        note only needs minute precision; a busy lock means someone else is recording anyway.
        """
        last = _confirmed.get((self.mdir, branch))
        if last is not None and time.monotonic() - last < _REFRESH_S:
            return
        with self._lock() as held:
            if held:
                self.record(spec, branch, sha)

    def note_error(self, reason: str, *, holding_lock: bool) -> None:
        entry = {"at": datetime.now(UTC).isoformat(), "message": reason}
        # Without the lock, a busy mirror means a sync is running that will write its own outcome.
        hold = contextlib.nullcontext(True) if holding_lock else self._lock()
        with hold as held:
            if held:
                state, damaged = self._read()
                state["last_error"] = entry
                self._write(state, damaged)

    @contextlib.contextmanager
    def _lock(self) -> Iterator[bool]:
        """The mirror's lock if it is free now; a lock that cannot be made counts as busy here,
        since the state only dates stale notes and the sync itself reports the lock's trouble."""
        on_replaced = self.on_replaced
        report = (lambda why: on_replaced("lock file", why)) if on_replaced else None
        with contextlib.ExitStack() as stack:
            try:
                held = stack.enter_context(locked(self.mdir, 0, report))
            except CodeaskError:
                held = False
            yield held


def _shaped(data: object) -> dict[str, Any]:
    """The parts of `data` that have the shape record() writes; the rest is dropped."""
    if not isinstance(data, dict):
        return {}
    out: dict[str, Any] = {}
    for key in ("url", "default_branch"):
        if isinstance(data.get(key), str):
            out[key] = data[key]
    branches = data.get("branches")
    if isinstance(branches, dict):
        out["branches"] = {
            name: {"sha": entry["sha"], "synced_at": entry["synced_at"]}
            for name, entry in branches.items()
            if isinstance(entry, dict)
            and isinstance(entry.get("sha"), str)
            and isinstance(entry.get("synced_at"), str)
        }
    error = data.get("last_error")
    if error is None and "last_error" in data:
        out["last_error"] = None
    elif isinstance(error, dict) and all(isinstance(error.get(k), str) for k in ("at", "message")):
        out["last_error"] = {"at": error["at"], "message": error["message"]}
    return out


def synced_at(state: dict[str, Any], branch: str | None) -> datetime | None:
    """When `branch` last agreed with the remote, per a state read with Ledger.read()."""
    entry = (state.get("branches") or {}).get(branch) if branch else None
    return _parse_time(entry.get("synced_at")) if isinstance(entry, dict) else None


def _parse_time(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
