"""Answers streamed into their Slack thread, end to end: a signed event in, through the ack, SQS
(moto) and the worker, the model streaming from the fake Messages API, the fake Slack recording
every state the thread went through. What a reader could have seen is checked at every step."""

from __future__ import annotations

import json
import re
import threading
import time
from typing import Any

import pytest

from codeask import clients, lambdas
from codeask.state import StateStore, StreamRecord
from fakes.messages_api import Cut, Reply, text, tokens_of, tool_use
from fakes.stack import CHANNEL, Context, Stack, event, load_handler, state_clock

THREAD = "1764430000.000100"
KEY = f"{CHANNEL}:{THREAD}"
ANSWER = (
    "Failed jobs are retried by `retry_job` in `billing/worker.py:6`, up to "
    "`RetryPolicy.max_attempts` times.\n\n"
    "- `billing/worker.py:6-11` — the loop\n"
    "- `billing/policy.py:4-5` — the backoff, 2^attempt seconds"
)
# The repo's remote is a local path here, so citations are checked but not linked (no web host).
LINK = "`billing/worker.py:6`,"
_PING = re.compile(
    r"<\s*!\s*(?:channel|here|everyone|subteam)|(?<![\w@])@(?:channel|here|everyone)\b", re.I
)


def ack(ev: dict[str, Any]) -> dict[str, Any]:
    return load_handler("slack_events")(ev, Context(remaining_ms=3000))


def stream_record(stack: Stack) -> tuple[str | None, StreamRecord | None]:
    """The job's state as the store reads it: the message the answer goes in, and its stream."""
    state = StateStore(stack.table, clients.aws("dynamodb")).get_answer(KEY)
    return (state.placeholder_ts, state.stream) if state else (None, None)


def work(records: list[dict[str, Any]], remaining_ms: int = 120_000) -> dict[str, Any]:
    return load_handler("answer_worker")({"Records": records}, Context(remaining_ms=remaining_ms))


@pytest.fixture
def streaming(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> Stack:
    """The stack with a model that writes at a pace and a worker that sends often."""
    monkeypatch.setenv("CODEASK_STREAM_APPEND_S", "0.02")
    monkeypatch.setenv("CODEASK_STREAM_EDIT_S", "0.02")
    lambdas.reset_settings()
    stack.model.tokens_per_s = 150
    return stack


def model_answers(stack: Stack, answer: str, **reply: Any) -> None:
    """One search, then `answer` (streamed); `reply` goes to the answer's Reply (a Cut, …)."""

    def script(body: dict[str, Any]) -> Reply:
        searched = any(
            isinstance(b, dict) and b.get("type") == "tool_result"
            for m in body["messages"]
            for b in (m["content"] if isinstance(m["content"], list) else [])
        )
        if searched:
            return Reply([text(answer)], **reply)
        return Reply([tool_use("search_code", {"pattern": "def retry_job"})])

    stack.model.script = script


def shown(message: dict[str, Any]) -> str:
    """What a message shows: its markdown blocks, else its (streamed) text."""
    blocks = message.get("blocks") or []
    parts = [b["text"] for b in blocks if b.get("type") == "markdown"]
    return "\n\n".join(parts) if parts else str(message.get("text") or "")


def bot(state: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in state if m.get("bot_id")]


def ask_once(stack: Stack, remaining_ms: int = 120_000) -> dict[str, Any]:
    assert ack(event("app_mention"))["statusCode"] == 200
    return work(stack.queued(), remaining_ms)


def final_body(stack: Stack) -> tuple[dict[str, Any], str]:
    [answer] = bot(stack.slack.messages(CHANNEL, THREAD))
    return answer, shown(answer)


def streamed_states(stack: Stack, ts: str) -> list[str]:
    """What the answer's message showed while it streamed, in order (before its final edit)."""
    states = []
    for state in stack.slack.thread_states(CHANNEL, THREAD):
        msg = next((m for m in state if m["ts"] == ts), None)
        if msg is not None and msg.get("blocks") is None:
            states.append(str(msg["text"]))
    return states


def test_an_answer_streams_in_its_own_message_and_ends_as_the_posted_answer(
    streaming: Stack,
) -> None:
    stack = streaming
    model_answers(stack, ANSWER)
    # When a question is asked in a workspace that streams
    assert ask_once(stack) == {"batchItemFailures": []}
    # Then the thread holds one reply, the stream's message, with the answer in it as
    # render.py posts it: markdown body, footer, feedback buttons
    answer, body = final_body(stack)
    kinds = [b["type"] for b in answer["blocks"]]
    assert kinds[0] == "markdown" and kinds[-2:] == ["context", "actions"]
    assert LINK in body and "Could not verify" not in json.dumps(answer["blocks"])
    assert [c.args["ts"] for c in stack.slack.calls_to("chat.stopStream")] == [answer["ts"]]
    # and it got there in several steps, each one growing what the reader saw, never changing it
    states = streamed_states(stack, answer["ts"])
    assert len(states) >= 3
    for before, after in zip(states, states[1:], strict=False):
        assert after.startswith(before)
    assert all(body.startswith(s) for s in states)
    # with the path cut across tokens (`billing/wor` | `ker.py:6`) never shown half-way
    for state in states:
        assert "billing/wor" not in state.replace("billing/worker.py", "")
    # and the placeholder, whose place the stream took, is gone; only one post was made
    assert len(stack.slack.calls_to("chat.postMessage")) == 1
    assert len(stack.slack.calls_to("chat.startStream")) == 1
    # and the job's state says where the answer is and what was streamed
    placeholder, record = stream_record(stack)
    assert record is not None and placeholder == answer["ts"] == record.ts
    assert record.mode == "stream" and record.status == "stopped"
    assert body.startswith(record.shown) and record.shown


def test_a_streamed_answer_ends_exactly_as_the_same_answer_posted_without_streaming(
    streaming: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack = streaming
    model_answers(stack, "The ledger is in `billing/ledger.py:12`; " + ANSWER)
    # Given the same question asked with streaming, and (in another thread) without
    ask_once(stack)
    streamed, _ = final_body(stack)
    monkeypatch.setenv("CODEASK_STREAM", "off")
    lambdas.reset_settings()
    other = "1764430099.000100"
    assert ack(event("app_mention", **{"event_id": "Ev0PLAIN01", "event.ts": other,
                                        "event.event_ts": other}))["statusCode"] == 200  # fmt: skip
    work(stack.queued())
    [posted] = bot(stack.slack.messages(CHANNEL, other))
    assert not any(
        c.args.get("thread_ts") == other for c in stack.slack.calls_to("chat.startStream")
    )

    # Then both end the same: text, body, warning and buttons (the footer's seconds aside)
    def same(m: dict[str, Any]) -> list[dict[str, Any]]:
        blocks = [b for b in m["blocks"] if b["type"] != "context"]
        return json.loads(json.dumps(blocks).replace(THREAD, "T").replace(other, "T"))

    assert same(streamed) == same(posted) and streamed["text"] == posted["text"]
    assert [b["type"] for b in streamed["blocks"]] == [b["type"] for b in posted["blocks"]]


def test_an_invented_path_is_never_shown_without_its_mark_in_any_state(streaming: Stack) -> None:
    stack = streaming
    model_answers(stack, "The ledger is posted in `billing/ledger.py:12`, next to " + ANSWER)
    ask_once(stack)
    answer, body = final_body(stack)
    assert "`billing/ledger.py:12` (⚠️ unverified)" in body
    # In every state of the thread, wherever the invented path shows, its mark follows it
    for state in stack.slack.thread_states(CHANNEL, THREAD):
        for msg in bot(state):
            seen = shown(msg)
            for hit in re.finditer(r"billing/ledger\.py", seen):
                assert seen[hit.end() :].startswith(":12` (⚠️ unverified)"), seen
    assert "Could not verify 1 reference" in json.dumps(answer["blocks"])


def test_mass_mentions_split_across_tokens_stay_inert_in_every_state(streaming: Stack) -> None:
    stack = streaming
    model_answers(stack, "Heads up <!channel> and @here, <!here|here>: " + ANSWER + " @everyone")
    ask_once(stack)
    states = stack.slack.thread_states(CHANNEL, THREAD)
    assert len(states) > 3
    for state in states:
        for msg in bot(state):
            assert not _PING.search(json.dumps(msg, ensure_ascii=True)), msg


def test_where_streaming_is_refused_the_placeholder_is_edited_as_it_is_written(
    streaming: Stack,
) -> None:
    stack = streaming
    # Given a workspace where chat.startStream is not available
    stack.model.tokens_per_s = 80
    stack.slack.fail("chat.startStream", "not_allowed_token_type")
    model_answers(stack, ANSWER)
    ask_once(stack)
    # Then the placeholder itself showed the answer growing, then became the answer
    [placeholder] = [c.args["ts"] for c in stack.slack.calls_to("chat.update")][:1]
    answer, body = final_body(stack)
    assert answer["ts"] == placeholder and LINK in body
    writing = [
        shown(m)
        for state in stack.slack.thread_states(CHANNEL, THREAD)
        for m in state
        if m["ts"] == placeholder and "still writing" in json.dumps(m["blocks"])
    ]
    assert len(writing) >= 2 and all(body.startswith(w) for w in writing)
    assert not stack.slack.calls_to("chat.appendStream")


def test_a_stream_slack_stops_taking_ends_with_a_closing_line_and_the_answer_still_lands(
    streaming: Stack,
) -> None:
    stack = streaming
    # Given a Slack that refuses the stream after its first append
    stack.model.tokens_per_s = 100
    stack.slack.fail("chat.appendStream", "message_not_in_streaming_state", after=1)
    model_answers(stack, ANSWER)
    ask_once(stack)
    answer, body = final_body(stack)
    # Then the stream ended with a line saying why, right when it happened
    versions = [v["text"] for v in stack.slack.versions(CHANNEL, answer["ts"])]
    closing = "_(Slack stopped taking this answer here: `message_not_in_streaming_state`.)_"
    assert any(v.endswith(closing) for v in versions)
    # and the finished answer then replaced it in the same message (one reply in the thread)
    assert LINK in body and closing not in body
    # and the job's state records the cut and what had been shown
    _, record = stream_record(stack)
    assert record is not None
    assert record.status == "cut" and record.note == "message_not_in_streaming_state"
    assert body.startswith(record.shown)


def test_a_stream_still_going_at_the_deadline_ends_there_with_a_closing_line(
    streaming: Stack,
) -> None:
    stack = streaming
    # Given a model writing slowly, and a Lambda with 32 s left (20 s margin: 12 s to answer)
    stack.model.tokens_per_s = 30
    model_answers(stack, ANSWER + "\n\n" + "More on the backoff in `billing/policy.py:4`. " * 40)
    assert ask_once(stack, remaining_ms=32_000) == {"batchItemFailures": []}
    # Then the answer is what was written by the deadline, and says it was cut off there
    answer, body = final_body(stack)
    assert body.rstrip().endswith(
        "_The answer was cut off here: the time for this answer ran out._"
    )
    assert "stopped early" in json.dumps(answer["blocks"])
    for s in streamed_states(stack, answer["ts"]):
        assert body.startswith(s)


def test_a_job_redelivered_after_a_crash_mid_stream_finishes_that_message(
    streaming: Stack,
) -> None:
    stack = streaming
    # Given a worker whose model goes quiet half-way through the answer (then its Lambda dies)
    half = len(tokens_of(ANSWER[: ANSWER.index("- `billing/policy")]))
    model_answers(stack, ANSWER, cut=Cut(half, hang=True))
    assert ack(event("app_mention"))["statusCode"] == 200
    records = stack.queued()
    crashed = threading.Thread(target=work, args=(records,), daemon=True)
    # (it took the job an hour ago, as far as the store can tell: its record reads as one a dead
    # worker left, taken over on the next delivery)
    with state_clock(3600):
        crashed.start()
        for _ in range(200):
            _, record = stream_record(stack)
            if record is not None and record.status == "streaming":
                break
            time.sleep(0.05)
    assert record is not None and record.ts is not None
    streamed_ts = record.ts
    assert stack.slack.is_streaming(CHANNEL, streamed_ts)
    # When SQS delivers the job again and the model answers this time
    model_answers(stack, ANSWER)
    assert work(records) == {"batchItemFailures": []}
    # Then the thread has still one reply: the message the first attempt streamed into, which
    # was stopped and now holds the whole answer; no second stream, no second post
    replies = bot(stack.slack.messages(CHANNEL, THREAD))
    assert [m["ts"] for m in replies] == [streamed_ts]
    assert LINK in shown(replies[0]) and not stack.slack.is_streaming(CHANNEL, streamed_ts)
    assert len(stack.slack.calls_to("chat.startStream")) == 1
    assert len(stack.slack.calls_to("chat.postMessage")) == 1
    # (the dead worker's thread is let go here, so nothing of it outlives the test)
    stack.model.stop()
    crashed.join(30)


def test_a_stream_whose_start_was_never_recorded_is_found_and_finished(stack: Stack) -> None:
    from codeask.job import Job
    from codeask.slack_stream import SlackStream
    from codeask.state import StreamMode, StreamStatus
    from fakes.stack import BOT_TOKEN, sqs_job_event

    # Given a worker that posted its placeholder, recorded that a stream was starting, started
    # it, and died before it could record the stream's message
    job = Job.from_json(sqs_job_event()["Records"][0]["body"])
    slack = clients.slack(BOT_TOKEN, stack.slack.base_url)
    store = StateStore(stack.table, clients.aws("dynamodb"))
    stack.slack.add_thread_message(CHANNEL, THREAD, "where do we retry failed jobs?")
    placeholder = str(slack.chat_postMessage(channel=CHANNEL, thread_ts=THREAD, text="…")["ts"])
    assert store.start_answer(job.dedupe_key, "dead", stale_after_s=60) is not None
    store.record_posts(job.dedupe_key, placeholder, [])
    store.record_stream(
        job.dedupe_key,
        StreamRecord(StreamMode.STREAM, StreamStatus.STARTING, replaced=placeholder),
    )
    orphan = str(
        slack.chat_startStream(channel=CHANNEL, thread_ts=THREAD, recipient_user_id=job.user,
                               recipient_team_id=job.team_id, markdown_text="Failed jobs")["ts"]
    )  # fmt: skip
    # When the next attempt picks the job up
    state = store.get_answer(job.dedupe_key)
    assert state is not None and state.stream is not None
    stream = SlackStream(slack, store, job, placeholder, previous=state.stream)
    stream.recover()
    # Then it adopts that stream's message: stopped, the answer's from now on, the placeholder gone
    assert stream.answer_ts == orphan and not stack.slack.is_streaming(CHANNEL, orphan)
    assert [m["ts"] for m in bot(stack.slack.messages(CHANNEL, THREAD))] == [orphan]
    after = store.get_answer(job.dedupe_key)
    assert after is not None and after.placeholder_ts == orphan
