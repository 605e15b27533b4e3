"""A question asked while the bot's snapshot disk is full: one clear failure reply, no retry, logs say why."""

from __future__ import annotations

import json
import logging

import pytest

from fakes.disk import SmallDisk
from fakes.messages_api import Reply, text
from fakes.stack import CHANNEL, Context, Stack, event, load_handler


def test_a_full_disk_gets_a_clear_failure_reply_in_the_thread(
    stack: Stack, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a bot whose snapshot disk has no room left, and a model that would answer
    disk = SmallDisk(stack.tmp / "snapshots", 0).install(monkeypatch)
    stack.model.script = lambda body: Reply([text("It lives in `billing/worker.py:6`.")])

    # When someone asks a question
    ack = load_handler("slack_events")(event("app_mention"), Context(remaining_ms=3000))
    assert ack["statusCode"] == 200
    with caplog.at_level(logging.ERROR):
        result = load_handler("answer_worker")(
            {"Records": stack.queued()}, Context(remaining_ms=120_000)
        )

    # Then the job is finished, not handed back to the queue to fail again, and the thread holds
    # one reply that says the bot's disk is full, without the bot's paths or an exception
    assert result == {"batchItemFailures": []}
    assert disk.refused >= 1
    replies = [m for m in stack.slack.messages(CHANNEL, "1764430000.000100") if m.get("bot_id")]
    assert len(replies) == 1
    shown = json.dumps(replies[0]["blocks"]) + replies[0].get("text", "")
    assert "disk is full" in shown
    assert str(stack.tmp) not in shown and "OSError" not in shown and "Errno" not in shown
    # and the model was never asked, while the logs carry the one-line reason for an admin
    assert stack.model.requests == []
    assert any(
        "no space left under" in r.getMessage() or "no space left under" in str(r.exc_info)
        for r in caplog.records
    )
