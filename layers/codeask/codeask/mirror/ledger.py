"""The JSON file beside each mirror: when each branch last agreed with the remote, and the last error."""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from codeask.mirror.lock import locked
from codeask.mirror.spec import RepoSpec, redact_url

_REFRESH_S = 60.0  # how stale "as of" may be before an unchanged sync rewrites the file

# When this process last wrote "as of" for (mirror, branch), to skip rewriting it every question.
_confirmed: dict[tuple[Path, str], float] = {}


class Ledger:
    """A mirror's sync record; the refs are the truth, this only dates them for stale notes."""

    def __init__(self, mdir: Path) -> None:
        self.mdir = mdir
        self.path = mdir.with_name(mdir.name + ".json")

    def read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, state: dict[str, Any]) -> None:
        tmp = self.path.with_name(f".{self.path.name}.{uuid.uuid4().hex[:8]}.tmp")
        try:
            tmp.write_text(json.dumps(state, indent=1, sort_keys=True), encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError:
            # The state only dates stale notes; the refs are the truth, so a full or read-only
            # disk here must not fail a sync that already has its commit.
            with contextlib.suppress(OSError):
                tmp.unlink()

    def record(self, spec: RepoSpec, branch: str, sha: str) -> None:
        """Note a successful sync; the caller holds the mirror lock."""
        state = self.read()
        state["url"] = redact_url(spec.url)
        if spec.branch is None:
            state["default_branch"] = branch
        branches = state.setdefault("branches", {})
        branches[branch] = {"sha": sha, "synced_at": datetime.now(UTC).isoformat()}
        state.setdefault("last_error", None)
        self._write(state)
        _confirmed[(self.mdir, branch)] = time.monotonic()

    def confirm(self, spec: RepoSpec, branch: str, sha: str) -> None:
        """Refresh "as of" after an unchanged check, at most once a minute per process.

        Writing state costs several metadata operations on a network filesystem, and a stale
        note only needs minute precision; a busy lock means someone else is recording anyway.
        """
        last = _confirmed.get((self.mdir, branch))
        if last is not None and time.monotonic() - last < _REFRESH_S:
            return
        with locked(self.mdir, 0) as held:
            if held:
                self.record(spec, branch, sha)

    def note_error(self, reason: str, *, holding_lock: bool) -> None:
        entry = {"at": datetime.now(UTC).isoformat(), "message": reason}
        # Without the lock, a busy mirror means a sync is running that will write its own outcome.
        hold = contextlib.nullcontext(True) if holding_lock else locked(self.mdir, 0)
        with hold as held:
            if held:
                state = self.read()
                state["last_error"] = entry
                self._write(state)


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
