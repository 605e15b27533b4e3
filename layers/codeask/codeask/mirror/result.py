"""What a sync hands back: the snapshot at its commit, why it may be stale, what it left out or rebuilt."""

from __future__ import annotations

from collections.abc import Callable
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


@dataclass(frozen=True)
class UncommittedNote:
    """A work tree read at its last commit while it holds changes the answer does not see."""

    repo: str
    sha: str
    changed: int  # tracked files modified, added, deleted or renamed, staged or not
    untracked: int  # untracked files and directories, not counting ignored ones
    error: str | None = None  # why the work tree could not be checked, when it could not

    def message(self) -> str:
        if self.error is not None:
            return (
                f"{self.repo}: the working tree could not be checked for uncommitted changes "
                f"({self.error}); any there are not included, this reads commit {self.sha[:7]}"
            )
        what = [f"{n} {label}" for n, label in (
            (self.changed, "changed file" if self.changed == 1 else "changed files"),
            (self.untracked, "untracked"),
        ) if n]  # fmt: skip
        return (
            f"{self.repo}: uncommitted changes in the working tree ({', '.join(what)}) are not "
            f"included; this reads commit {self.sha[:7]}"
        )


@dataclass
class SyncResult:
    snapshot: Snapshot
    sha: str
    branch: str  # the resolved branch name
    fetched: bool  # whether a fetch happened
    stale: StaleNote | None
    timings_ms: dict[str, float] = field(default_factory=dict)
    uncommitted: UncommittedNote | None = None  # a local work tree with changes not included


@dataclass(frozen=True)
class Repair:
    """Damage a sync found in what codeask keeps on disk for a repository, and rebuilt."""

    repo: str  # the repository's name
    what: str  # "mirror", "snapshot", "lock file" or "state file"
    reason: str  # what was wrong, in one line

    def message(self) -> str:
        return f"{self.repo}: the {self.what} was damaged ({self.reason}) and has been rebuilt"


OnRepair = Callable[[Repair], None]
