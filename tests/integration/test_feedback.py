"""👍/👎 on answers: buttons on every answer, votes signature-checked and stored, 👎 exported as eval cases."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

from fakes.messages_api import Reply, text, tool_use
from fakes.stack import CHANNEL, Context, Stack, click, event, load_handler

KEY = f"{CHANNEL}:1764430000.000100"


def vote(action: str, user: str, **kw: Any) -> dict[str, Any]:
    return click(action, user, KEY, **kw)


def answered(stack: Stack) -> dict[str, Any]:
    stack.model.script = [
        Reply([tool_use("search_code", {"pattern": "def retry_job"})]),
        Reply([text("Retries are in `billing/worker.py:6`.")]),
    ]
    load_handler("slack_events")(event("app_mention"), Context(remaining_ms=3000))
    load_handler("answer_worker")({"Records": stack.queued()}, Context())
    return [m for m in stack.slack.messages(CHANNEL, "1764430000.000100") if m.get("bot_id")][0]


def test_answers_carry_buttons_and_votes_are_stored_and_exported(stack: Stack) -> None:
    reply = answered(stack)
    buttons = [b for b in reply["blocks"] if b["type"] == "actions"][0]["elements"]
    assert [(b["action_id"], b["value"]) for b in buttons] == [
        ("codeask_feedback_up", KEY), ("codeask_feedback_down", KEY)]  # fmt: skip
    ack = load_handler("slack_events")
    assert ack(vote("codeask_feedback_down", "U0ALICE"), Context())["statusCode"] == 200
    assert ack(vote("codeask_feedback_down", "U0BOB"), Context())["statusCode"] == 200
    assert ack(vote("codeask_feedback_up", "U0CAROL"), Context())["statusCode"] == 200
    # a forged click is refused and stores nothing
    assert (
        ack(vote("codeask_feedback_down", "U0MALLORY", secret="wrong"), Context())["statusCode"]
        == 401
    )
    env = {k: v for k, v in os.environ.items()}
    done = subprocess.run([sys.executable, "-m", "codeask.cli", "feedback", "export"],
                          capture_output=True, text=True, env=env, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(rows) == 1
    case = rows[0]
    assert case["question"] == "where do we retry failed jobs?" and case["repo"] == "billing"
    assert case["down_votes"] == 2 and sorted(case["voters"]) == ["U0ALICE", "U0BOB"]
    assert case["sha"] == stack.repo.head() and "billing/worker.py:6" in case["answer"]
    assert case["expected"] == []


def test_a_changed_mind_counts_once_as_its_last_vote(stack: Stack) -> None:
    answered(stack)
    ack = load_handler("slack_events")
    ack(vote("codeask_feedback_down", "U0ALICE"), Context())
    time.sleep(0.01)
    ack(vote("codeask_feedback_up", "U0ALICE"), Context())
    from codeask import clients
    from codeask.feedback import export_cases
    from codeask.settings import Settings
    from codeask.state import StateStore

    votes = StateStore(stack.table, clients.aws("dynamodb")).votes()
    assert [v["vote"] for v in votes] == ["up"]
    config = Settings.from_env().bot_config
    assert config is not None and export_cases(votes, config) == []
