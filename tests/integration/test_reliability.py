"""A burst of questions through the whole local chain with faults injected at every hop: none lost, none doubled."""

from __future__ import annotations

import json
import os
import random
import threading
from pathlib import Path
from typing import Any

import boto3

from fakes.messages_api import Fail, Reply, text, tool_use
from fakes.stack import CHANNEL, Context, Stack, event, load_handler

QUESTIONS = 100
FINAL_MARK = "Retries live in"


def _payload_ts(i: int) -> str:
    return f"17644{30000 + i:05d}.000100"


def _mention(i: int, *, retry: bool = False) -> dict[str, Any]:
    ts = _payload_ts(i)
    ev = event(
        "slack_retry" if retry else "app_mention",
        **{
            "event_id": f"Ev0BURST{i:04d}",
            "event.ts": ts,
            "event.event_ts": ts,
            "event.text": f"<@U0BOT> q{i}: where do we retry failed jobs?",
        },
    )
    return ev


def test_burst_with_faults_is_answered_exactly_once_each(stack: Stack) -> None:
    rng = random.Random(20261129)
    ack = load_handler("slack_events")
    worker = load_handler("answer_worker")
    stats = {k: 0 for k in ("deliveries", "acks_500", "duplicates_at_once", "slack_retries",
                            "failed_enqueues", "sqs_duplicates", "crash_before_post",
                            "crash_after_post", "model_529", "slack_429", "worker_runs",
                            "redeliveries")}  # fmt: skip

    # The model: one search, then an answer; some questions see a 529 first.
    overloaded = {i for i in range(QUESTIONS) if rng.random() < 0.1}
    seen_529: set[str] = set()
    lock = threading.Lock()

    def model(body: dict[str, Any]) -> Any:
        first = body["messages"][0]["content"]
        question = json.dumps(first)
        tag = question.split("Question: ")[-1].split(":")[0]
        with lock:
            if tag in {f"q{i}" for i in overloaded} and tag not in seen_529:
                seen_529.add(tag)
                stats["model_529"] += 1
                return Fail(529)
        has_result = any(
            isinstance(b, dict) and b.get("type") == "tool_result"
            for m in body["messages"]
            for b in (m["content"] if isinstance(m["content"], list) else [])
        )
        if has_result:
            return Reply([text(f"{FINAL_MARK} `billing/worker.py:6-11` ({tag}).")])
        return Reply([tool_use("search_code", {"pattern": "def retry_job"})])

    stack.model.script = model

    # -- the ack side: duplicates at once, Slack retries, failed enqueues ----------------------
    records: list[dict[str, Any]] = []
    sqs = stack.sqs()
    queue_name = stack.queue_url.rsplit("/", 1)[-1]

    def deliver(ev: dict[str, Any]) -> int:
        with lock:
            stats["deliveries"] += 1
        status = int(ack(ev, Context(remaining_ms=3000))["statusCode"])
        if status == 500:
            with lock:
                stats["acks_500"] += 1
        return status

    for i in range(QUESTIONS):
        roll = rng.random()
        if roll < 0.1:
            # the first delivery cannot be queued: Slack gets a 500 and retries
            stats["failed_enqueues"] += 1
            records += stack.queued()
            sqs.delete_queue(QueueUrl=stack.queue_url)
            assert deliver(_mention(i)) == 500
            sqs.create_queue(QueueName=queue_name)
            assert deliver(_mention(i, retry=True)) == 200
        elif roll < 0.3:
            # Slack's fast retry: the same event twice, at the same moment
            stats["duplicates_at_once"] += 1
            threads = [threading.Thread(target=deliver, args=(_mention(i),)) for _ in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        else:
            assert deliver(_mention(i)) == 200
        if rng.random() < 0.2:
            stats["slack_retries"] += 1
            assert deliver(_mention(i, retry=True)) == 200
    records += stack.queued()
    assert len(records) == QUESTIONS, "each question must be queued exactly once"

    # -- the worker side: SQS duplicates, crashes before and after posting, Slack 429s --------
    ddb = boto3.client("dynamodb")
    pending = [(r, 1) for r in records]
    crashed_after: set[str] = set()
    while pending:
        record, receives = pending.pop(0)
        job = json.loads(record["body"])
        record = {
            **record,
            "attributes": {**record["attributes"], "ApproximateReceiveCount": str(receives)},
        }
        roll = rng.random()
        if receives == 1 and roll < 0.08:
            stats["crash_before_post"] += 1
            stack.slack.fail("chat.postMessage", "fatal_error", times=1)
        elif roll < 0.13:
            stats["slack_429"] += 1
            stack.slack.rate_limit("chat.update", times=1, retry_after=1)
        stats["worker_runs"] += 1
        result = worker({"Records": [record]}, Context(remaining_ms=120_000))
        if result["batchItemFailures"]:
            stats["redeliveries"] += 1
            pending.append((record, receives + 1))
            continue
        key = f"answer#{job['channel']}:{job['message_ts']}"
        if job["message_ts"] not in crashed_after and rng.random() < 0.08:
            # the worker posted, then died before recording it: the job comes back
            stats["crash_after_post"] += 1
            crashed_after.add(job["message_ts"])
            ddb.update_item(
                TableName=stack.table,
                Key={"pk": {"S": key}},
                UpdateExpression="SET #s = :w, started_at = :t",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={":w": {"S": "working"}, ":t": {"N": "1"}},
            )
            pending.append((record, receives + 1))
            stats["redeliveries"] += 1
        elif rng.random() < 0.15:
            stats["sqs_duplicates"] += 1
            pending.append((record, receives + 1))
            stats["redeliveries"] += 1

    # -- what must hold: every question exactly one reply, and it is the answer -----------------
    lost, doubled, not_answers = [], [], []
    for i in range(QUESTIONS):
        replies = [m for m in stack.slack.messages(CHANNEL, _payload_ts(i)) if m.get("bot_id")]
        if not replies:
            lost.append(i)
        elif len(replies) > 1:
            doubled.append(i)
        elif FINAL_MARK not in json.dumps(replies[0]["blocks"]) or f"q{i})" not in json.dumps(
            replies[0]["blocks"]
        ):
            not_answers.append(i)
    stats.update(questions=QUESTIONS, lost=len(lost), doubled=len(doubled), wrong=len(not_answers),
                 bot_messages=len([m for m in stack.slack.messages(CHANNEL) if m.get("bot_id")]))  # fmt: skip
    report = os.environ.get("CODEASK_RELIABILITY_REPORT")
    if report:
        Path(report).write_text(json.dumps(stats, indent=2) + "\n")
    assert (lost, doubled, not_answers) == ([], [], []), stats
    assert stats["bot_messages"] == QUESTIONS  # one placeholder each, edited into the answer
    assert min(stats[k] for k in ("failed_enqueues", "duplicates_at_once", "crash_before_post",
                                  "crash_after_post", "model_529", "slack_429", "sqs_duplicates")) > 0  # fmt: skip
