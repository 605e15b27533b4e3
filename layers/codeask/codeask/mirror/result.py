"""What a sync hands back: the snapshot and its commit, and why it may be stale."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from codeask.snapshot import Snapshot


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
