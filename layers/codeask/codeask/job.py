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
        # Checked, not coerced: str() would turn None into the question "None" and a string of
        # repos into its characters.
        texts = ("event_id", "team_id", "channel", "user", "text", "message_ts", "thread_ts")
        wrong = [n for n in texts if not isinstance(data[n], str)]
        wrong += [
            n
            for n in ("event_time", "received_at")
            if isinstance(data[n], bool) or not isinstance(data[n], int | float)
        ]
        repos = data["repos"]
        if not isinstance(repos, list) or not all(isinstance(r, str) for r in repos):
            wrong.append("repos")
        if wrong:
            raise JobRejected(f"job fields have the wrong type: {sorted(wrong)}")
        times: dict[str, float] = {}
        for n in ("event_time", "received_at"):
            try:
                times[n] = float(data[n])
            except OverflowError:
                raise JobRejected(f"job field {n!r} is out of range") from None
        return cls(
            event_id=data["event_id"],
            team_id=data["team_id"],
            channel=data["channel"],
            user=data["user"],
            text=data["text"],
            message_ts=data["message_ts"],
            thread_ts=data["thread_ts"],
            event_time=times["event_time"],
            repos=tuple(repos),
            received_at=times["received_at"],
            version=JOB_VERSION,
        )
