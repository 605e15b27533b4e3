"""The worker's promises under redelivery: one reply per question, edited in place, never doubled."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from codeask import clients
from codeask.state import AnswerStatus, StateStore
from fakes.messages_api import Reply, text
from fakes.stack import BOT_TOKEN, CHANNEL, Context, Stack, event, load_handler, state_clock

THREAD = "1764430000.000100"
KEY = f"{CHANNEL}:{THREAD}"
LONG = "\n\n".join(f"Step {i}: see `billing/worker.py:6`. " + "x" * 2500 for i in range(12))


def ack(ev: dict[str, Any]) -> dict[str, Any]:
    return load_handler("slack_events")(ev, Context(remaining_ms=3000))


def work(records: list[dict[str, Any]], remaining_ms: int = 120_000) -> dict[str, Any]:
    return load_handler("answer_worker")({"Records": records}, Context(remaining_ms=remaining_ms))


def store() -> StateStore:
    return StateStore(os.environ["TABLE_NAME"], clients.aws("dynamodb"))


def bot_replies(stack: Stack) -> list[dict[str, Any]]:
    return [m for m in stack.slack.messages(CHANNEL, THREAD) if m.get("bot_id")]


def post(stack: Stack, body: str) -> str:
    """A message the bot posts in the thread (what an earlier worker left behind)."""
    slack = clients.slack(BOT_TOKEN, stack.slack.base_url)
    return str(slack.chat_postMessage(channel=CHANNEL, thread_ts=THREAD, text=body)["ts"])


def earlier_worker(stack: Stack, *, age_s: float, continuations: int = 0) -> list[str]:
    """A worker that took the job `age_s` ago, posted its placeholder (and continuation messages),
    recorded them, and has not finished: the placeholder's ts first."""
    with state_clock(age_s):
        assert store().start_answer(KEY, "earlier-worker", stale_after_s=600) is not None
    placeholder = post(stack, "⏳ Looking into it…")
    posted = [post(stack, f"earlier attempt, part {i}") for i in range(continuations)]
    store().record_posts(KEY, placeholder, posted)
    return [placeholder, *posted]


def test_a_worker_that_died_after_posting_does_not_post_again(stack: Stack) -> None:
    stack.model.script = [Reply([text("Retries: `billing/worker.py:6`.")])]
    ack(event("app_mention"))
    records = stack.queued()
    # Given a worker that posted its placeholder an hour ago and died before answering
    [placeholder] = earlier_worker(stack, age_s=3600)
    posts_before = len(stack.slack.calls_to("chat.postMessage"))
    # When SQS redelivers the job
    assert work(records) == {"batchItemFailures": []}
    # Then the redelivery took the job over: the dead worker's message holds the answer, or
    # (when the answer was streamed) gave its place to the stream's message; never a second post
    assert len(stack.slack.calls_to("chat.postMessage")) == posts_before
    replies = bot_replies(stack)
    assert len(replies) == 1 and "Retries:" in json.dumps(replies[0]["blocks"])
    if replies[0]["ts"] != placeholder:
        assert [c.args["ts"] for c in stack.slack.calls_to("chat.delete")] == [placeholder]
        assert len(stack.slack.calls_to("chat.startStream")) == 1
    state = store().get_answer(KEY)
    assert state is not None and state.status == AnswerStatus.ANSWERED


def test_a_live_workers_job_is_not_taken_over_by_a_redelivery(stack: Stack) -> None:
    stack.model.script = [Reply([text("Retries: `billing/worker.py:6`.")])]
    ack(event("app_mention"))
    records = stack.queued()
    # Given a worker that took the job a few seconds ago and is still answering it
    [placeholder] = earlier_worker(stack, age_s=5)
    posts_before = len(stack.slack.calls_to("chat.postMessage"))
    # When SQS delivers the same job again (a visibility timeout ran out early)
    assert work(records) == {"batchItemFailures": []}
    # Then the redelivery leaves it alone: no second placeholder, no edit, the model not asked
    assert len(stack.slack.calls_to("chat.postMessage")) == posts_before
    assert [m["ts"] for m in bot_replies(stack)] == [placeholder]
    for method in ("chat.update", "chat.startStream", "chat.delete"):
        assert stack.slack.calls_to(method) == [], method
    assert stack.model.requests == []
    state = store().get_answer(KEY)
    assert state is not None
    assert (state.status, state.owner) == (AnswerStatus.WORKING, "earlier-worker")


def test_a_re_answer_edits_the_earlier_continuations_instead_of_posting_new_ones(
    stack: Stack,
) -> None:
    stack.model.script = [Reply([text(LONG)])]
    ack(event("app_mention"))
    records = stack.queued()
    # Given a dead worker that had posted its placeholder and more continuations than needed
    earlier = earlier_worker(stack, age_s=3600, continuations=8)
    posts_before = len(stack.slack.calls_to("chat.postMessage"))
    # When the redelivery answers at length
    assert work(records) == {"batchItemFailures": []}
    # Then it posted nothing new: it edited the earlier messages in order and deleted the rest
    assert len(stack.slack.calls_to("chat.postMessage")) == posts_before
    replies = bot_replies(stack)
    assert len(replies) >= 3, "the answer should need at least two continuation messages"
    assert [m["ts"] for m in replies] == earlier[: len(replies)]
    assert all("earlier attempt" not in json.dumps(m) for m in replies)
    deleted = {c.args["ts"] for c in stack.slack.calls_to("chat.delete")}
    assert deleted == set(earlier[len(replies) :])
    state = store().get_answer(KEY)
    assert state is not None and state.posted_ts == earlier[1 : len(replies)]


def test_a_re_answer_edits_its_messages_in_place_and_removes_leftovers(stack: Stack) -> None:
    stack.model.script = [Reply([text("Short: `billing/worker.py:6`.")])]
    ack(event("app_mention"))
    records = stack.queued()
    # Given a dead worker whose long answer had needed continuation messages
    earlier = earlier_worker(stack, age_s=3600, continuations=3)
    # When the redelivery's answer is short
    assert work(records) == {"batchItemFailures": []}
    # Then the first message holds the new answer, and the old continuations are gone
    replies = bot_replies(stack)
    assert [m["ts"] for m in replies] == earlier[:1]
    assert "Short:" in json.dumps(replies[0]["blocks"])
    assert {c.args["ts"] for c in stack.slack.calls_to("chat.delete")} == set(earlier[1:])
    state = store().get_answer(KEY)
    assert state is not None and (state.status, state.posted_ts) == (AnswerStatus.ANSWERED, [])


@pytest.mark.parametrize("receives", [1, 3])
def test_the_last_attempt_turns_its_own_message_into_the_polite_failure(
    stack: Stack, receives: int
) -> None:
    # Given a job on its last delivery (the queue's maxReceiveCount is 3), or on its first
    stack.model.script = [Reply([text("Retries: `billing/worker.py:6`.")])]
    ack(event("app_mention"))
    [record] = stack.queued()
    record["attributes"] = {**record["attributes"], "ApproximateReceiveCount": str(receives)}
    # and a Slack that fails once the answer is written, after the reply was already shown
    stack.slack.fail("chat.update", "fatal_error", times=1)
    result = work([record])
    replies = bot_replies(stack)
    assert len(replies) == 1
    if receives == 1:
        # Then an early attempt goes back to the queue, its message left for the retry to edit
        assert result == {"batchItemFailures": [{"itemIdentifier": record["messageId"]}]}
        assert "something went wrong" not in json.dumps(replies[0])
        return
    # Then the last attempt is not handed back: the reply it showed now says it failed
    assert result == {"batchItemFailures": []}
    assert "something went wrong" in json.dumps(replies[0]["blocks"])
    # and no second message was left: whether the answer streamed into a message of its own (the
    # placeholder then goes) depends on how fast the fake model writes, so count what stayed
    created = len(stack.slack.calls_to("chat.postMessage")) + len(
        stack.slack.calls_to("chat.startStream")
    )
    assert created - len(stack.slack.calls_to("chat.delete")) == 1
    state = store().get_answer(KEY)
    assert state is not None and state.status == AnswerStatus.ANSWERED
