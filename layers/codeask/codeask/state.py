"""DynamoDB state: event deduplication for the ack, answered-state and thread memory for the worker."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from codeask.errors import ConfigError

DEDUPE_TTL_S = 3 * 24 * 3600  # Slack retries for about an hour; a late retry is still caught
ANSWER_TTL_S = 14 * 24 * 3600
THREAD_TTL_S = 30 * 24 * 3600
MAX_TURNS = 4  # earlier turns carried into a follow-up; older ones drop off
MAX_TURN_CHARS = 3000
MAX_SHOWN_CHARS = 40_000  # a streamed answer's text is kept whole (items hold up to 400 KB)
# Two Lambda instances' clocks (started_at is written by one and read by another) disagree by
# far less than this; a lease outlives its worker's timeout by it.
CLOCK_SKEW_S = 30.0


def lease_s(worker_timeout_s: float) -> float:
    """How long a "working" record stays its worker's (`start_answer`'s `stale_after_s`).

    Lambda ends an invocation at its function's timeout, and a worker takes its job after its
    invocation began, so once a record is older than the timeout its worker is gone: before
    that, however close to its end, a worker may still be posting its answer."""
    return worker_timeout_s + CLOCK_SKEW_S


def check_worker_timeout(worker_timeout_s: float, remaining_s: float) -> None:
    """Fail at the start of an invocation that could outlive the timeout the leases assume, so
    a live worker is never taken for a dead one (CODEASK_WORKER_TIMEOUT_S set too short)."""
    if remaining_s > worker_timeout_s + 1:
        raise ConfigError(
            f"CODEASK_WORKER_TIMEOUT_S is {worker_timeout_s:g} s but this invocation may run "
            f"{remaining_s:.0f} s: set it to the answer worker's Timeout (template.yaml passes "
            "WorkerTimeoutSeconds), or a job could be taken from a worker still answering it"
        )


class AnswerStatus(StrEnum):
    """Where a job's answer stands, as stored in the table."""

    WORKING = "working"  # a worker has it
    RETRY = "retry"  # given back after a caught failure, for the redelivery to take at once
    ANSWERED = "answered"


class StreamMode(StrEnum):
    """How an answer is shown while it is written."""

    STREAM = "stream"  # chat.startStream / appendStream / stopStream: a message of its own
    EDITS = "edits"  # throttled chat.update of the placeholder


class StreamStatus(StrEnum):
    STARTING = "starting"  # chat.startStream was called; its message is not known yet
    STREAMING = "streaming"
    STOPPED = "stopped"  # ended as planned; the answer replaces what was streamed
    CUT = "cut"  # ended early (a Slack error): a closing line says so


@dataclass
class StreamRecord:
    """An answer shown while it was written: where, how far, and how it ended."""

    mode: StreamMode
    status: StreamStatus
    ts: str | None = None  # the message it streams into
    replaced: str | None = None  # the placeholder a new stream message took the place of
    shown: str = ""  # what had been shown when this was recorded (markdown, as sent)
    note: str | None = None  # why it ended early

    def to_json(self) -> str:
        return json.dumps(
            {"mode": self.mode, "status": self.status, "ts": self.ts, "replaced": self.replaced,
             "shown": self.shown[:MAX_SHOWN_CHARS], "note": self.note}
        )  # fmt: skip

    @classmethod
    def from_json(cls, raw: str) -> StreamRecord:
        data = json.loads(raw)
        return cls(
            mode=StreamMode(data["mode"]),
            status=StreamStatus(data["status"]),
            ts=data.get("ts"),
            replaced=data.get("replaced"),
            shown=data.get("shown") or "",
            note=data.get("note"),
        )


@dataclass
class AnswerState:
    status: AnswerStatus
    owner: str
    started_at: float
    placeholder_ts: str | None = None  # the message the answer goes in (a stream's, once one is)
    posted_ts: list[str] = field(default_factory=list)  # continuation messages after the first
    stream: StreamRecord | None = None


def _conditional_failed(e: Exception) -> bool:
    code = getattr(e, "response", {}).get("Error", {}).get("Code")
    return code == "ConditionalCheckFailedException"


class StateStore:
    """All writes that decide "first or not" are conditional writes, never check-then-set."""

    def __init__(self, table_name: str, client: Any) -> None:
        self.table = table_name
        self.db = client

    # -- the ack: one job per Slack event and per asking message -------------------------------

    def claim(self, key: str, *, ttl_s: int = DEDUPE_TTL_S) -> bool:
        """True for the first caller with this key, False for every later one (at once or hours later)."""
        try:
            self.db.put_item(
                TableName=self.table,
                Item={"pk": {"S": key}, "expires_at": {"N": str(int(time.time()) + ttl_s)}},
                ConditionExpression="attribute_not_exists(pk)",
            )
            return True
        except Exception as e:
            if _conditional_failed(e):
                return False
            raise

    def release(self, key: str) -> None:
        """Undo a claim whose job could not be queued, so Slack's retry of it is processed."""
        self.db.delete_item(TableName=self.table, Key={"pk": {"S": key}})

    # -- the worker: answered at most once ------------------------------------------------------

    def start_answer(self, key: str, owner: str, *, stale_after_s: float) -> AnswerState | None:
        """Take the job, or None when it is answered or another live worker has it.

        A "working" record older than `stale_after_s` (`lease_s` of the worker's timeout)
        belongs to a worker that died: it is taken over (conditionally on the record being
        unchanged), keeping its placeholder to edit.
        """
        now = time.time()
        pk = "answer#" + key
        try:
            self.db.put_item(
                TableName=self.table,
                Item={
                    "pk": {"S": pk},
                    "status": {"S": AnswerStatus.WORKING},
                    "owner": {"S": owner},
                    "started_at": {"N": repr(now)},
                    "expires_at": {"N": str(int(now) + ANSWER_TTL_S)},
                },
                ConditionExpression="attribute_not_exists(pk)",
            )
            return AnswerState(AnswerStatus.WORKING, owner, now)
        except Exception as e:
            if not _conditional_failed(e):
                raise
        current = self.get_answer(key)
        if current is None or current.status == AnswerStatus.ANSWERED:
            return None
        live = current.status == AnswerStatus.WORKING and now - current.started_at < stale_after_s
        if current.owner != owner and live:
            return None
        try:
            self.db.update_item(
                TableName=self.table,
                Key={"pk": {"S": pk}},
                UpdateExpression="SET #o = :o, started_at = :t, #s = :working",
                ConditionExpression="#s = :seen_status AND started_at = :seen",
                ExpressionAttributeNames={"#o": "owner", "#s": "status"},
                ExpressionAttributeValues={
                    ":o": {"S": owner},
                    ":t": {"N": repr(now)},
                    ":working": {"S": AnswerStatus.WORKING},
                    ":seen_status": {"S": current.status},
                    ":seen": {"N": repr(current.started_at)},
                },
            )
        except Exception as e:
            if _conditional_failed(e):
                return None
            raise
        current.owner, current.started_at = owner, now
        return current

    def release_answer(self, key: str, owner: str) -> None:
        """Give a job back after a failure we caught, so its redelivery need not wait it out."""
        try:
            self.db.update_item(
                TableName=self.table,
                Key={"pk": {"S": "answer#" + key}},
                UpdateExpression="SET #s = :retry",
                ConditionExpression="#o = :o AND #s = :working",
                ExpressionAttributeNames={"#s": "status", "#o": "owner"},
                ExpressionAttributeValues={
                    ":retry": {"S": AnswerStatus.RETRY},
                    ":o": {"S": owner},
                    ":working": {"S": AnswerStatus.WORKING},
                },
            )
        except Exception as e:
            if not _conditional_failed(e):
                raise

    def get_answer(self, key: str) -> AnswerState | None:
        item = self.db.get_item(
            TableName=self.table, Key={"pk": {"S": "answer#" + key}}, ConsistentRead=True
        ).get("Item")
        if not item:
            return None
        return AnswerState(
            status=AnswerStatus(item["status"]["S"]),
            owner=item.get("owner", {}).get("S", ""),
            started_at=float(item.get("started_at", {}).get("N", "0")),
            placeholder_ts=item.get("placeholder_ts", {}).get("S"),
            posted_ts=[v["S"] for v in item.get("posted_ts", {}).get("L", [])],
            stream=StreamRecord.from_json(item["stream"]["S"]) if "stream" in item else None,
        )

    def record_posts(self, key: str, placeholder_ts: str | None, posted_ts: list[str]) -> None:
        """Remember what was posted, so a redelivery edits those messages instead of posting again."""
        self._record(key, "posted_ts", {"L": [{"S": t} for t in posted_ts]}, placeholder_ts)

    def record_stream(
        self, key: str, stream: StreamRecord, *, placeholder_ts: str | None = None
    ) -> None:
        """Remember a stream as it starts, moves into a message, and ends: a redelivery then
        finishes that message instead of starting another. `placeholder_ts` moves the answer
        to the stream's own message."""
        self._record(key, "stream", {"S": stream.to_json()}, placeholder_ts)

    def _record(
        self, key: str, name: str, value: dict[str, Any], placeholder_ts: str | None
    ) -> None:
        expr = "SET #n = :v"
        values: dict[str, Any] = {":v": value}
        if placeholder_ts:
            expr += ", placeholder_ts = :ph"
            values[":ph"] = {"S": placeholder_ts}
        self.db.update_item(
            TableName=self.table,
            Key={"pk": {"S": "answer#" + key}},
            UpdateExpression=expr,
            ExpressionAttributeNames={"#n": name},
            ExpressionAttributeValues=values,
        )

    def finish_answer(
        self, key: str, posted_ts: list[str], info: dict[str, str] | None = None
    ) -> None:
        """Mark the job answered; `info` (question, answer, repos, sha) is what a vote refers to."""
        values: dict[str, Any] = {
            ":a": {"S": AnswerStatus.ANSWERED},
            ":p": {"L": [{"S": t} for t in posted_ts]},
            ":t": {"N": repr(time.time())},
        }
        expr = "SET #s = :a, posted_ts = :p, answered_at = :t"
        if info:
            expr += ", info = :i"
            values[":i"] = {"S": json.dumps({k: v[:MAX_TURN_CHARS] for k, v in info.items()})}
        self.db.update_item(
            TableName=self.table,
            Key={"pk": {"S": "answer#" + key}},
            UpdateExpression=expr,
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues=values,
        )

    # -- feedback: one vote per person per answer, the latest one counts ----------------------

    def record_vote(self, key: str, user: str, vote: str) -> dict[str, str] | None:
        """Store a 👍/👎 with the question, answer, repos and SHA it was about; None if unknown."""
        item = self.db.get_item(
            TableName=self.table, Key={"pk": {"S": "answer#" + key}}, ConsistentRead=True
        ).get("Item")
        if not item or "info" not in item:
            return None
        info = json.loads(item["info"]["S"])
        self.db.put_item(
            TableName=self.table,
            Item={
                "pk": {"S": f"vote#{key}#{user}"},
                "vote": {"S": vote},
                "user": {"S": user},
                "key": {"S": key},
                "info": {"S": json.dumps(info)},
                "voted_at": {"N": repr(time.time())},
                "expires_at": {"N": str(int(time.time()) + ANSWER_TTL_S)},
            },
        )
        return dict(info)

    def votes(self) -> list[dict[str, Any]]:
        """Every vote in the table (for `codeask feedback export`)."""
        out: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "FilterExpression": "begins_with(pk, :v)",
            "ExpressionAttributeValues": {":v": {"S": "vote#"}},
        }
        while True:
            page = self.db.scan(**kwargs)
            for item in page.get("Items", []):
                out.append({
                    "key": item["key"]["S"], "user": item["user"]["S"], "vote": item["vote"]["S"],
                    "voted_at": float(item["voted_at"]["N"]), **json.loads(item["info"]["S"]),
                })  # fmt: skip
            if "LastEvaluatedKey" not in page:
                return out
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    # -- threads the bot answered in: follow-ups -----------------------------------------------

    def thread_turns(self, channel: str, thread_ts: str) -> list[dict[str, str]] | None:
        """Earlier turns in a thread the bot answered in, or None if it never answered there."""
        item = self.db.get_item(
            TableName=self.table, Key={"pk": {"S": f"thread#{channel}#{thread_ts}"}}
        ).get("Item")
        if not item:
            return None
        return list(json.loads(item.get("turns", {}).get("S", "[]")))

    def add_turn(self, channel: str, thread_ts: str, turn: dict[str, str]) -> None:
        turns = (self.thread_turns(channel, thread_ts) or []) + [
            {k: v[:MAX_TURN_CHARS] for k, v in turn.items()}
        ]
        self.db.put_item(
            TableName=self.table,
            Item={
                "pk": {"S": f"thread#{channel}#{thread_ts}"},
                "turns": {"S": json.dumps(turns[-MAX_TURNS:])},
                "expires_at": {"N": str(int(time.time()) + THREAD_TTL_S)},
            },
        )
