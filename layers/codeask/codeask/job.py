"""The job: the contract between the ack function and the worker, serialised into SQS."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from typing import Any

from codeask.errors import CodeaskError

JOB_VERSION = 1


class JobRejected(CodeaskError):
    """A queued message that is not a job this worker understands; it is not guessed at."""

    exit_code = 2


@dataclass(frozen=True)
class Job:
    """One accepted question, everything the worker needs to answer it in its thread."""

    event_id: str
    team_id: str
    channel: str
    user: str
    text: str  # the question, the bot's mention removed
    message_ts: str  # the asking message
    thread_ts: str  # the thread the answer goes to
    event_time: float  # when Slack says the event happened (epoch seconds): end-to-end latency
    repos: tuple[str, ...]  # names from CODEASK_CONFIG this channel may read
    received_at: float  # when the ack function accepted it
    version: int = JOB_VERSION

    @property
    def dedupe_key(self) -> str:
        """One answer per asking message, whichever event (app_mention or message) delivered it."""
        return f"{self.channel}:{self.message_ts}"

    def to_json(self) -> str:
        body = asdict(self)
        body["repos"] = list(self.repos)
        return json.dumps(body, separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_json(cls, raw: str | bytes) -> Job:
        try:
            data: Any = json.loads(raw)
        except (ValueError, TypeError) as e:
            raise JobRejected(f"job is not JSON: {e}") from None
        if not isinstance(data, dict):
            raise JobRejected("job is not a JSON object")
        version = data.get("version")
        if version != JOB_VERSION:
            raise JobRejected(
                f"job version {version!r} is not supported (this worker reads version {JOB_VERSION})"
            )
        names = {f.name for f in fields(cls)}
        missing = sorted(names - set(data) - {"version"})
        unknown = sorted(set(data) - names)
        if missing or unknown:
            raise JobRejected(f"job fields wrong: missing {missing}, unknown {unknown}")
        try:
            return cls(
                event_id=str(data["event_id"]),
                team_id=str(data["team_id"]),
                channel=str(data["channel"]),
                user=str(data["user"]),
                text=str(data["text"]),
                message_ts=str(data["message_ts"]),
                thread_ts=str(data["thread_ts"]),
                event_time=float(data["event_time"]),
                repos=tuple(str(r) for r in data["repos"]),
                received_at=float(data["received_at"]),
                version=JOB_VERSION,
            )
        except (TypeError, ValueError) as e:
            raise JobRejected(f"job field has the wrong type: {e}") from None
