"""Access at every hop: the worker, follow-ups and the feedback export read only what the channel
may read now, whatever the queued job says."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest

from codeask.job import Job
from fakes.messages_api import Reply, text, tool_use
from fakes.stack import CHANNEL, Context, Stack, click, event, load_handler

THREAD = "1764430000.000100"
PAYROLL = {"payroll/salaries.py": "def pay_salaries():\n    return 'secret payroll formula'\n"}
OTHER_CHANNEL = "C0PAYROLL1"


def reconfigure(monkeypatch: pytest.MonkeyPatch, config: dict[str, Any]) -> None:
    """An admin changes CODEASK_CONFIG; the next invocation reads it (no cached verdict)."""
    from codeask import lambdas

    monkeypatch.setenv("CODEASK_CONFIG", json.dumps(config))
    lambdas.reset_settings()


def with_payroll(stack: Stack, git_repo: Callable[..., Any], channels: dict[str, list[str]]) -> dict[str, Any]:  # fmt: skip
    payroll = git_repo("payroll")
    payroll.commit(PAYROLL)
    return {
        "repos": {"billing": {"url": str(stack.repo.path)}, "payroll": {"url": str(payroll.path)}},
        "channels": channels,
    }


def bot_replies(stack: Stack) -> list[dict[str, Any]]:
    return [m for m in stack.slack.messages(CHANNEL, THREAD) if m.get("bot_id")]


def everything_the_model_saw(stack: Stack) -> str:
    return json.dumps([r.raw.decode() for r in stack.model.requests])


def test_a_permission_removed_between_ack_and_worker_is_refused_politely(
    stack: Stack, git_repo: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a question acknowledged while the channel could read payroll
    config = with_payroll(stack, git_repo, {CHANNEL: ["payroll"]})
    reconfigure(monkeypatch, config)
    stack.model.script = [Reply([tool_use("search_code", {"pattern": "salar"})]),
                          Reply([text("In `payroll/salaries.py:1`.")])]  # fmt: skip
    load_handler("slack_events")(event("app_mention"), Context(remaining_ms=3000))
    records = stack.queued()
    assert json.loads(records[0]["body"])["repos"] == ["payroll"]
    # When the permission is removed before the worker runs
    config["channels"] = {CHANNEL: ["billing"], OTHER_CHANNEL: ["payroll"]}
    reconfigure(monkeypatch, config)
    out = load_handler("answer_worker")({"Records": records}, Context())
    # Then the job is done (not retried), nothing was read, and the thread says why
    assert out == {"batchItemFailures": []}
    assert stack.model.requests == []
    replies = bot_replies(stack)
    assert len(replies) == 1 and "may no longer read" in replies[0]["text"]
    assert "payroll" not in json.dumps(replies)


def test_a_job_naming_another_channels_repo_reads_only_what_this_channel_may(
    stack: Stack, git_repo: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a channel that may read billing, and payroll belonging to another channel
    reconfigure(monkeypatch, with_payroll(stack, git_repo, {CHANNEL: ["billing"], OTHER_CHANNEL: ["payroll"]}))  # fmt: skip
    stack.model.script = [Reply([tool_use("search_code", {"pattern": "retry"})]),
                          Reply([text("Retries are in `billing/worker.py:6`.")])]  # fmt: skip

    def forged(repos: tuple[str, ...], ts: str) -> dict[str, Any]:
        job = Job(event_id=f"Ev{ts}", team_id="T0TEAM0001", channel=CHANNEL, user="U0ALICE",
                  text="how are bills retried?", message_ts=ts, thread_ts=ts, event_time=time.time(),
                  repos=repos, received_at=time.time())  # fmt: skip
        return {"messageId": ts, "receiptHandle": ts, "body": job.to_json(),
                "attributes": {"ApproximateReceiveCount": "1"}, "messageAttributes": {},
                "eventSource": "aws:sqs"}  # fmt: skip

    # When a message put on the queue by something other than the ack names payroll
    worker = load_handler("answer_worker")
    assert worker({"Records": [forged(("payroll",), "1764430500.000100")]}, Context()) == {"batchItemFailures": []}  # fmt: skip
    # Then payroll is never searched, and the asker hears why
    assert stack.model.requests == []
    refused = [m for m in stack.slack.messages(CHANNEL, "1764430500.000100") if m.get("bot_id")]
    assert len(refused) == 1 and "may no longer read" in refused[0]["text"]
    # And when it names both, only billing is read
    assert worker({"Records": [forged(("payroll", "billing"), "1764430600.000100")]}, Context()) == {"batchItemFailures": []}  # fmt: skip
    seen = everything_the_model_saw(stack)
    assert stack.model.requests and "payroll" not in seen and "salaries" not in seen
    answer = [m for m in stack.slack.messages(CHANNEL, "1764430600.000100") if m.get("bot_id")]
    assert "billing/worker.py:6" in json.dumps(answer)


def test_a_follow_up_after_removal_does_not_carry_the_earlier_turn(
    stack: Stack, git_repo: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a thread answered from billing and payroll together
    config = with_payroll(stack, git_repo, {CHANNEL: ["billing", "payroll"]})
    reconfigure(monkeypatch, config)
    stack.model.script = [Reply([tool_use("search_code", {"pattern": "pay_salaries"})]),
                          Reply([text("The formula is in `payroll/payroll/salaries.py:2`.")])]  # fmt: skip
    ack = load_handler("slack_events")
    worker = load_handler("answer_worker")
    ack(event("app_mention"), Context(remaining_ms=3000))
    worker({"Records": stack.queued()}, Context())
    assert len(bot_replies(stack)) == 1
    # When payroll is taken away and someone follows up in the thread
    config["channels"] = {CHANNEL: ["billing"], OTHER_CHANNEL: ["payroll"]}
    reconfigure(monkeypatch, config)
    before = len(stack.model.requests)
    stack.model.script = [Reply([text("Retries are in `billing/worker.py:6`.")])]
    follow = event(
        "app_mention",
        **{"event_id": "Ev0FOLLOW01", "event.type": "message", "event.channel_type": "channel",
           "event.text": "and what does it do with that?", "event.ts": "1764430200.000100",
           "event.thread_ts": THREAD},
    )  # fmt: skip
    assert ack(follow, Context(remaining_ms=3000))["statusCode"] == 200
    worker({"Records": stack.queued()}, Context())
    # Then the follow-up is answered from billing alone, and the earlier payroll answer (which
    # quotes payroll's code) never reaches the model
    later = json.dumps([r.raw.decode() for r in stack.model.requests[before:]])
    assert later and "salaries" not in later and "payroll" not in later
    assert len(bot_replies(stack)) == 2


def test_feedback_export_leaves_out_answers_the_channel_may_no_longer_read(
    stack: Stack, git_repo: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a 👎 on an answer about payroll
    config = with_payroll(stack, git_repo, {CHANNEL: ["payroll"]})
    reconfigure(monkeypatch, config)
    stack.model.script = [Reply([tool_use("search_code", {"pattern": "pay_salaries"})]),
                          Reply([text("In `payroll/salaries.py:2`.")])]  # fmt: skip
    ack = load_handler("slack_events")
    ack(event("app_mention"), Context(remaining_ms=3000))
    load_handler("answer_worker")({"Records": stack.queued()}, Context())
    assert ack(click("codeask_feedback_down", "U0ALICE", f"{CHANNEL}:{THREAD}"), Context())["statusCode"] == 200  # fmt: skip

    def export() -> list[dict[str, Any]]:
        done = subprocess.run([sys.executable, "-m", "codeask.cli", "feedback", "export"],
                              capture_output=True, text=True, env=dict(os.environ), timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stderr
        return [json.loads(line) for line in done.stdout.splitlines()]

    assert [c["repo"] for c in export()] == ["payroll"]
    # When the channel loses payroll, the case (which quotes payroll's code) is no longer exported
    config["channels"] = {CHANNEL: ["billing"], OTHER_CHANNEL: ["payroll"]}
    reconfigure(monkeypatch, config)
    assert export() == []
    # And without CODEASK_CONFIG the export refuses rather than guess
    monkeypatch.delenv("CODEASK_CONFIG")
    done = subprocess.run([sys.executable, "-m", "codeask.cli", "feedback", "export"],
                          capture_output=True, text=True, env=dict(os.environ), timeout=120)  # fmt: skip
    assert done.returncode == 2 and "CODEASK_CONFIG" in done.stderr
