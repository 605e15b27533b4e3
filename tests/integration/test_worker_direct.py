"""The worker called directly (no handler, no queue) on the loopback stack: each path of one job,
what it leaves in the thread and in the job's answer state."""

from __future__ import annotations

import json
import os
import time
from dataclasses import replace
from typing import Any

import pytest

from codeask import clients, lambdas, worker
from codeask.job import Job
from codeask.mirror import MirrorStore
from codeask.model import make_client
from codeask.settings import Settings
from codeask.state import CLOCK_SKEW_S, AnswerStatus, StateStore
from codeask.worker import Outcome, OutcomeStatus
from fakes.messages_api import Reply, text, tool_use
from fakes.stack import BOT_TOKEN, CHANNEL, Stack, state_clock

THREAD = "1764430000.000100"
KEY = f"{CHANNEL}:{THREAD}"
ANSWER = "Failed jobs are retried by `retry_job` in `billing/worker.py:6`."


def store() -> StateStore:
    return StateStore(os.environ["TABLE_NAME"], clients.aws("dynamodb"))


def job(text: str = "Where are failed jobs retried?", repos: tuple[str, ...] = ("billing",)) -> Job:
    return Job(event_id="Ev0DIRECT01", team_id="T0TEAM0001", channel=CHANNEL, user="U0HUMAN",
               text=text, message_ts=THREAD, thread_ts=THREAD, event_time=time.time(),
               repos=repos, received_at=time.time())  # fmt: skip


def settings(monkeypatch: pytest.MonkeyPatch, config: dict[str, Any] | None = None,
             **env: str) -> Settings:  # fmt: skip
    """The stack's settings, with `config` as CODEASK_CONFIG and `env` set."""
    if config is not None:
        monkeypatch.setenv("CODEASK_CONFIG", json.dumps(config))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    lambdas.reset_settings()
    return lambdas.settings()


def answer(s: Settings, the_job: Job, *, owner: str = "this-worker", **kwargs: Any) -> Outcome:
    """`the_job` through worker.answer_job, with the stack's Slack, model, state and mirrors."""
    assert s.slack_bot_token is not None and s.table_name is not None
    return worker.answer_job(
        the_job,
        settings=s,
        store=store(),
        slack=clients.slack(s.slack_bot_token, s.slack_api_url),
        mirrors=MirrorStore.from_settings(s),
        deadline=kwargs.pop("deadline", time.monotonic() + 100),
        owner=owner,
        model_client=lambda: make_client(s),
        stream_slack=clients.slack(s.slack_bot_token, s.slack_api_url, wait_out_429=False),
        **kwargs,
    )


def bot_replies(stack: Stack) -> list[dict[str, Any]]:
    return [m for m in stack.slack.messages(CHANNEL, THREAD) if m.get("bot_id")]


def post(stack: Stack, body: str) -> str:
    slack = clients.slack(BOT_TOKEN, stack.slack.base_url)
    return str(slack.chat_postMessage(channel=CHANNEL, thread_ts=THREAD, text=body)["ts"])


def dead_worker(stack: Stack, continuations: int) -> list[str]:
    """A worker that took the job an hour ago, posted its placeholder and `continuations` more
    messages, recorded them and died: their ts, the placeholder's first."""
    with state_clock(3600):
        assert store().start_answer(KEY, "dead-worker", stale_after_s=600) is not None
    placeholder = post(stack, "⏳ Looking into it…")
    posted = [post(stack, f"earlier attempt, part {i}") for i in range(continuations)]
    store().record_posts(KEY, placeholder, posted)
    return [placeholder, *posted]


def test_a_job_whose_repos_the_channel_may_no_longer_read_is_refused_in_its_placeholder(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a job queued for a repo the channel may not read (any more)
    s = settings(monkeypatch)
    # When the worker takes it
    outcome = answer(s, job(repos=("payroll",)))
    # Then the thread has one message, the placeholder turned into the refusal, and that is all
    [reply] = bot_replies(stack)
    assert "may no longer read" in reply["text"] and "Looking into it" not in json.dumps(reply)
    assert (outcome.status, outcome.posted_ts) == (OutcomeStatus.REFUSED, [reply["ts"]])
    assert stack.model.requests == [] and stack.slack.calls_to("chat.delete") == []
    state = store().get_answer(KEY)
    assert state is not None
    assert (state.status, state.placeholder_ts, state.posted_ts) == (
        AnswerStatus.ANSWERED, reply["ts"], [])  # fmt: skip
    # and a redelivery of it changes nothing
    assert answer(s, job(repos=("payroll",)), owner="later").status == OutcomeStatus.SKIPPED
    assert bot_replies(stack) == [reply]


def test_a_refusal_after_a_dead_workers_long_answer_replaces_it_and_removes_the_rest(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a dead worker that had posted its placeholder and two continuation messages
    earlier = dead_worker(stack, continuations=2)
    # When the redelivery finds the channel may not read the job's repo
    outcome = answer(settings(monkeypatch), job(repos=("payroll",)))
    # Then the earlier placeholder holds the refusal, and the continuations are gone
    [reply] = bot_replies(stack)
    assert reply["ts"] == earlier[0] and "may no longer read" in reply["text"]
    assert {c.args["ts"] for c in stack.slack.calls_to("chat.delete")} == set(earlier[1:])
    assert (outcome.status, outcome.posted_ts) == (OutcomeStatus.REFUSED, earlier[:1])
    state = store().get_answer(KEY)
    assert state is not None and (state.status, state.posted_ts) == (AnswerStatus.ANSWERED, [])


def test_an_empty_question_is_answered_with_a_note_and_nothing_is_read(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcome = answer(settings(monkeypatch), job(text="  \n "))
    [reply] = bot_replies(stack)
    assert (outcome.status, outcome.posted_ts) == (OutcomeStatus.ANSWERED, [reply["ts"]])
    assert "Looking into it" not in json.dumps(reply) and "question" in reply["text"].lower()
    assert stack.model.requests == []
    state = store().get_answer(KEY)
    assert state is not None and state.status == AnswerStatus.ANSWERED


def test_a_failure_before_the_last_attempt_hands_the_job_back_and_the_retry_edits_its_message(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given answers shown only when finished, and a Slack that fails the first edit
    s = settings(monkeypatch, CODEASK_STREAM="off")
    stack.model.script = lambda body: Reply([text(ANSWER)])
    stack.slack.fail("chat.update", "fatal_error", times=1)
    # When a worker not told that this is the last attempt fails on it
    with pytest.raises(Exception, match="fatal_error"):
        answer(s, job())
    # Then the job goes back (no failure message), released for the redelivery at once
    [placeholder] = bot_replies(stack)
    assert "something went wrong" not in json.dumps(placeholder)
    state = store().get_answer(KEY)
    assert state is not None and state.status == AnswerStatus.RETRY
    assert state.placeholder_ts == placeholder["ts"]
    # and the redelivery answers in that same message instead of posting a second one
    outcome = answer(s, job(), owner="redelivery")
    assert outcome.status == OutcomeStatus.ANSWERED
    [reply] = bot_replies(stack)
    assert reply["ts"] == placeholder["ts"] and "retry_job" in json.dumps(reply["blocks"])
    assert len(stack.slack.calls_to("chat.postMessage")) == 1


def test_progress_edits_of_the_placeholder_show_the_step_in_its_blocks(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a workspace that refuses the assistant status, and an answer shown only when finished
    s = settings(monkeypatch, CODEASK_STREAM="off")
    stack.slack.fail("assistant.threads.setStatus", "not_allowed", times=100)
    stack.model.script = [Reply([tool_use("search_code", {"pattern": "def retry_job"})]),
                          Reply([text(ANSWER)])]  # fmt: skip
    assert answer(s, job()).status == OutcomeStatus.ANSWERED
    # Then the placeholder was edited with the progress line, in its text and its blocks alike:
    # Slack shows the blocks, so an edit of the text alone would leave "Looking into it" showing
    [reply] = bot_replies(stack)
    progress = [v for v in stack.slack.versions(CHANNEL, reply["ts"])
                if v["text"].startswith("⏳")]  # fmt: skip
    assert progress, "no progress edit of the placeholder"
    for version in progress:
        assert shown(version) == version["text"]


def shown(message: dict[str, Any]) -> str:
    """What Slack shows of a message: its blocks' text where it has blocks, else its text."""
    if not message.get("blocks"):
        return str(message["text"])
    parts = []
    for block in message["blocks"]:
        if block["type"] == "context":
            parts += [e.get("text", "") for e in block["elements"]]
        elif block["type"] in ("section", "header"):
            parts.append(block["text"]["text"])
        elif block["type"] == "markdown":
            parts.append(block["text"])
    return "\n".join(parts)


def test_a_repo_configured_under_its_own_name_is_answered_under_that_name(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the billing repository configured under another name than its path's
    config = {"repos": {"ledger": {"url": str(stack.repo.path)}}, "channels": {CHANNEL: ["ledger"]}}
    s = settings(monkeypatch, config, CODEASK_STREAM="off")
    stack.model.script = lambda body: Reply([text(ANSWER)])
    # When the worker answers a question about it
    outcome = answer(s, job(repos=("ledger",)))
    # Then the answer names the repo as configured, and its citation is verified
    assert outcome.status == OutcomeStatus.ANSWERED and outcome.answer is not None
    assert outcome.answer.snapshot.repo.name == "ledger"
    assert outcome.answer.verification.unverified == []
    [reply] = bot_replies(stack)
    assert "ledger@" in json.dumps(reply["blocks"]) and "billing@" not in json.dumps(reply)
    turns = store().thread_turns(CHANNEL, THREAD)
    assert turns is not None and [t["repos"] for t in turns] == ["ledger"]


def test_releasing_a_job_another_worker_has_taken_over_leaves_it_with_that_worker(
    stack: Stack,
) -> None:
    # Given a job taken over from a worker that seemed dead, and the new owner still on it
    with state_clock(3600):
        assert store().start_answer(KEY, "slow-worker", stale_after_s=600) is not None
    assert store().start_answer(KEY, "new-owner", stale_after_s=600) is not None
    # When the slow worker fails after all and gives the job back
    store().release_answer(KEY, "slow-worker")
    # Then nothing changed: the new owner keeps it, and a redelivery still may not take it
    state = store().get_answer(KEY)
    assert state is not None and (state.status, state.owner) == (AnswerStatus.WORKING, "new-owner")
    assert store().start_answer(KEY, "redelivery", stale_after_s=600) is None


def test_a_live_worker_near_its_timeout_keeps_its_job_and_a_dead_one_loses_it(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a worker Lambda with a 300 s timeout, and a job taken 290 s ago by a worker that is
    # still within its invocation (its own deadline long past, still posting its answer)
    s = settings(monkeypatch, CODEASK_WORKER_TIMEOUT_S="300", CODEASK_STREAM="off")
    stack.model.script = lambda body: Reply([text(ANSWER)])
    with state_clock(290):
        assert store().start_answer(KEY, "live-worker", stale_after_s=600) is not None
    # When a redelivery of the job reaches another worker, this one with little time left
    outcome = answer(s, job(), owner="redelivery", deadline=time.monotonic() + 30)
    # Then it leaves the job alone
    assert outcome.status == OutcomeStatus.SKIPPED and bot_replies(stack) == []
    state = store().get_answer(KEY)
    assert state is not None and state.owner == "live-worker"
    # But once the record is older than the timeout and the clocks' skew, its worker is gone
    store().db.delete_item(TableName=store().table, Key={"pk": {"S": "answer#" + KEY}})
    with state_clock(300 + CLOCK_SKEW_S + 1):
        assert store().start_answer(KEY, "dead-worker", stale_after_s=600) is not None
    assert answer(s, job(), owner="redelivery").status == OutcomeStatus.ANSWERED


def test_releasing_an_answered_job_leaves_it_answered(stack: Stack) -> None:
    assert store().start_answer(KEY, "worker", stale_after_s=600) is not None
    store().finish_answer(KEY, [])
    store().release_answer(KEY, "worker")
    state = store().get_answer(KEY)
    assert state is not None and state.status == AnswerStatus.ANSWERED
    assert store().start_answer(KEY, "redelivery", stale_after_s=600) is None


def test_the_owner_releasing_its_job_lets_the_redelivery_take_it_at_once(stack: Stack) -> None:
    assert store().start_answer(KEY, "worker", stale_after_s=600) is not None
    assert store().start_answer(KEY, "redelivery", stale_after_s=600) is None  # still live
    store().release_answer(KEY, "worker")
    state = store().start_answer(KEY, "redelivery", stale_after_s=600)
    assert state is not None and state.owner == "redelivery"


def test_votes_on_an_answer_are_stored_with_what_it_was_about(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an answer the worker posted
    s = settings(monkeypatch, CODEASK_STREAM="off")
    stack.model.script = lambda body: Reply([text(ANSWER)])
    assert answer(s, job()).status == OutcomeStatus.ANSWERED
    # When two people vote on it, one of them twice, and someone votes on an unknown answer
    about = store().record_vote(KEY, "U0ALICE", "up")
    store().record_vote(KEY, "U0BOB", "down")
    store().record_vote(KEY, "U0ALICE", "down")
    assert store().record_vote(f"{CHANNEL}:1764439999.000100", "U0ALICE", "up") is None
    # Then each vote names the question, the answer, the repo and the commit it was about
    assert about is not None
    assert (about["question"], about["repos"], about["sha"]) == (
        "Where are failed jobs retried?", "billing", stack.repo.head())  # fmt: skip
    assert "retry_job" in about["answer"]
    # and the export holds one vote per person, the latest
    votes = sorted(store().votes(), key=lambda v: v["user"])
    assert [(v["user"], v["vote"], v["key"]) for v in votes] == [
        ("U0ALICE", "down", KEY), ("U0BOB", "down", KEY)]  # fmt: skip
    assert all(v["sha"] == stack.repo.head() and v["voted_at"] > 0 for v in votes)


def logged(caplog: pytest.LogCaptureFixture, message: str) -> list[dict[str, Any]]:
    """The fields of each log record with this message (what its JSON log line holds)."""
    return [vars(r) for r in caplog.records if r.getMessage() == message]


def test_the_workers_log_lines_name_the_job_by_its_ids_and_never_quote_it(
    stack: Stack, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a job answered, and one that fails
    s = settings(monkeypatch, CODEASK_STREAM="off")
    stack.model.script = lambda body: Reply([text(ANSWER)])
    assert answer(s, job()).status == OutcomeStatus.ANSWERED
    stack.slack.fail("chat.update", "fatal_error", times=1)
    failing = replace(job(), message_ts="1764430200.000100", event_id="Ev0DIRECT02")
    with pytest.raises(Exception, match="fatal_error"):
        answer(s, failing)
    # Then the logs name each by its ids (README: Logs), and never hold the question or answer
    [done] = logged(caplog, "answered")
    assert {k: done.get(k) for k in ("event_id", "channel", "thread_ts", "repo", "sha")} == {
        "event_id": "Ev0DIRECT01", "channel": CHANNEL, "thread_ts": THREAD, "repo": "billing",
        "sha": stack.repo.head()}  # fmt: skip
    [failed] = logged(caplog, "answer failed")
    assert (failed.get("event_id"), failed.get("channel")) == ("Ev0DIRECT02", CHANNEL)
    fields = json.dumps([{k: str(v) for k, v in r.items()} for r in (done, failed)])
    assert "failed jobs retried" not in fields and "retry_job" not in fields


def test_a_repo_that_cannot_be_read_ends_the_job_with_a_failure_that_says_why(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a configured repo whose location is gone
    config = {"repos": {"billing": {"url": str(stack.tmp / "gone")}},
              "channels": {CHANNEL: ["billing"]}}  # fmt: skip
    outcome = answer(settings(monkeypatch, config), job())
    # Then the job ends (no redelivery would help): its placeholder says what went wrong
    assert outcome.status == OutcomeStatus.FAILED
    [reply] = bot_replies(stack)
    assert "something went wrong" in shown(reply) and "is not an existing local path" in shown(
        reply
    )
    # named by its last name only: where the bot keeps things is for its logs
    assert "'…/gone'" in shown(reply) and str(stack.tmp) not in json.dumps(reply)
    assert stack.model.requests == []
    state = store().get_answer(KEY)
    assert state is not None and state.status == AnswerStatus.ANSWERED
