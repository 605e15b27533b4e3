"""A signed Slack event in, a verified answer out in the right thread: every hop real, on loopback."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from codeask.errors import ConfigError
from fakes.messages_api import Fail, Reply, text, tool_use
from fakes.stack import CHANNEL, EVENTS, Context, Stack, event, load_handler, sqs_job_event

ANSWER = "Failed jobs are retried by `retry_job` (`billing/worker.py:6-11`), backing off 2^attempt s (`billing/policy.py:4-5`)."


def ack(ev: dict[str, Any]) -> dict[str, Any]:
    return load_handler("slack_events")(ev, Context(remaining_ms=3000))


def work(records: list[dict[str, Any]], remaining_ms: int = 120_000) -> dict[str, Any]:
    return load_handler("answer_worker")({"Records": records}, Context(remaining_ms=remaining_ms))


def model_answers(stack: Stack) -> None:
    stack.model.script = lambda body: (
        Reply([text(ANSWER)])
        if any(
            b.get("type") == "tool_result"
            for m in body["messages"]
            for b in m["content"]
            if isinstance(b, dict)
        )
        else Reply([tool_use("search_code", {"pattern": "def retry_job"})])
    )


def bot_replies(stack: Stack, thread_ts: str) -> list[dict[str, Any]]:
    return [m for m in stack.slack.messages(CHANNEL, thread_ts) if m.get("bot_id")]


def test_url_verification_is_answered(stack: Stack) -> None:
    resp = ack(event("url_verification"))
    assert resp["statusCode"] == 200
    assert json.loads(resp["body"])["challenge"].startswith("3eZbrw1aBm2")


def test_mention_becomes_one_verified_answer_in_its_thread(stack: Stack) -> None:
    model_answers(stack)
    # Given a signed app_mention
    resp = ack(event("app_mention"))
    # Then Slack gets a 200 and exactly one job is queued
    assert resp["statusCode"] == 200
    records = stack.queued()
    assert len(records) == 1
    # When the worker takes it
    result = work(records)
    # Then nothing failed, and the thread holds one reply: the answer, with links at the SHA
    assert result == {"batchItemFailures": []}
    replies = bot_replies(stack, "1764430000.000100")
    assert len(replies) == 1
    blob = json.dumps(replies[0]["blocks"])
    assert "retry_job" in blob and stack.repo.head()[:7] in blob
    assert "Could not verify" not in blob
    # a placeholder was posted first and then replaced, with unfurling off
    posts = stack.slack.calls_to("chat.postMessage")
    assert len(posts) == 1 and posts[0].args["unfurl_links"] is False
    assert stack.slack.calls_to("chat.update")


def test_tampered_or_stale_requests_are_401_and_queue_nothing(stack: Stack) -> None:
    good = event("app_mention")
    tampered = json.loads(json.dumps(good))
    tampered["body"] = tampered["body"].replace("retry", "retrx")
    assert ack(tampered)["statusCode"] == 401
    wrong_secret = event("app_mention", secret="not-the-secret")
    assert ack(wrong_secret)["statusCode"] == 401
    for ts in ("abc", "", "1e9", str(10**9)):
        bad = json.loads(json.dumps(good))
        bad["headers"]["x-slack-request-timestamp"] = ts
        assert ack(bad)["statusCode"] == 401
    assert stack.queued() == []


def test_slack_retry_of_a_queued_event_is_not_queued_twice(stack: Stack) -> None:
    assert ack(event("app_mention"))["statusCode"] == 200
    assert ack(event("slack_retry"))["statusCode"] == 200
    assert len(stack.queued()) == 1


def test_a_failed_enqueue_is_500_and_slacks_retry_is_processed(stack: Stack) -> None:
    sqs = stack.sqs()
    name = stack.queue_url.rsplit("/", 1)[-1]
    sqs.delete_queue(QueueUrl=stack.queue_url)
    assert ack(event("app_mention"))["statusCode"] == 500
    sqs.create_queue(QueueName=name)
    assert ack(event("slack_retry"))["statusCode"] == 200
    assert len(stack.queued()) == 1


def test_dm_shared_channel_bots_and_unconfigured_channels_queue_nothing(stack: Stack) -> None:
    assert ack(event("dm"))["statusCode"] == 200
    assert ack(event("slack_connect"))["statusCode"] == 200
    assert ack(event("bot_message"))["statusCode"] == 200
    other = event("app_mention", **{"event_id": "Ev0OTHER01", "event.channel": "C0NOTCONF1"})
    assert ack(other)["statusCode"] == 200
    assert stack.queued() == []
    # the DM got a polite reply in the DM, the others an ephemeral note to the asker
    dm_posts = [
        c for c in stack.slack.calls_to("chat.postMessage") if c.args["channel"] == "D0DIRECT1"
    ]
    assert len(dm_posts) == 1 and "direct messages" in dm_posts[0].args["text"]
    assert len(stack.slack.calls_to("chat.postEphemeral")) == 2


def test_the_same_job_delivered_twice_is_answered_once(stack: Stack) -> None:
    model_answers(stack)
    ack(event("app_mention"))
    records = stack.queued()
    work(records)
    work(records)  # SQS redelivers the same message
    assert len(bot_replies(stack, "1764430000.000100")) == 1
    assert len(stack.slack.calls_to("chat.postMessage")) == 1


def test_model_overloaded_until_the_deadline_gives_a_labelled_search_only_answer(
    stack: Stack,
) -> None:
    stack.model.script = lambda body: Fail(529)
    ack(event("app_mention"))
    work(stack.queued(), remaining_ms=28_000)  # 28 s minus the 20 s margin: 8 s for the model
    replies = bot_replies(stack, "1764430000.000100")
    assert len(replies) == 1
    blob = json.dumps(replies[0]["blocks"])
    assert "Search-only answer" in blob and "model was unavailable" in blob


def test_sqs_job_event_file_drives_the_worker(stack: Stack) -> None:
    model_answers(stack)
    ev = sqs_job_event()
    assert work(ev["Records"]) == {"batchItemFailures": []}
    assert len(bot_replies(stack, "1764430000.000100")) == 1


def test_the_delivery_the_queue_would_dead_letter_posts_a_failure_instead(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codeask import lambdas

    # Given a queue that dead-letters a job after two deliveries (the template sets this)
    monkeypatch.setenv("CODEASK_MAX_RECEIVES", "2")
    lambdas.reset_settings()
    model_answers(stack)
    record = sqs_job_event()["Records"][0]

    def deliver(receives: int) -> dict[str, Any]:
        # and a Slack that fails the first post of each delivery
        stack.slack.fail("chat.postMessage", "fatal_error", times=1)
        attributes = {**record["attributes"], "ApproximateReceiveCount": str(receives)}
        return work([{**record, "attributes": attributes}])

    # When the first delivery fails, it goes back to the queue, and the thread is still empty
    assert deliver(1) == {"batchItemFailures": [{"itemIdentifier": record["messageId"]}]}
    assert bot_replies(stack, "1764430000.000100") == []
    # When the last one fails the same way, it is not handed back: the thread is told instead
    assert deliver(2) == {"batchItemFailures": []}
    replies = bot_replies(stack, "1764430000.000100")
    assert len(replies) == 1 and "something went wrong" in json.dumps(replies[0]["blocks"])


def test_an_unknown_job_version_is_reported_as_a_failed_record(stack: Stack) -> None:
    ev = sqs_job_event()
    body = json.loads(ev["Records"][0]["body"])
    body["version"] = 99
    ev["Records"][0]["body"] = json.dumps(body)
    result = work(ev["Records"])
    assert result == {"batchItemFailures": [{"itemIdentifier": ev["Records"][0]["messageId"]}]}
    assert stack.slack.calls_to("chat.postMessage") == []


def test_schedule_event_warms_every_repo_and_survives_a_broken_one(
    stack: Stack, monkeypatch: Any
) -> None:
    from codeask import lambdas

    config = {
        "repos": {
            "billing": {"url": str(stack.repo.path)},
            "gone": {"url": str(stack.tmp / "nope")},
        },
        "channels": {CHANNEL: ["billing"]},
    }
    monkeypatch.setenv("CODEASK_CONFIG", json.dumps(config))
    lambdas.reset_settings()
    result = load_handler("mirror_warmer")(
        json.loads((EVENTS / "schedule.json").read_text()), Context()
    )
    assert result["repos"]["billing"] == stack.repo.head()
    assert result["failed"] == ["gone"]


def test_progress_shows_as_assistant_status_or_else_as_placeholder_edits(stack: Stack) -> None:
    model_answers(stack)
    ack(event("app_mention"))
    work(stack.queued())
    assert any("search" in s["status"] for s in stack.slack.statuses)
    # where the workspace refuses statuses, the placeholder is edited instead (throttled)
    stack.slack.fail("assistant.threads.setStatus", "not_allowed", times=100)
    edits_before = len(stack.slack.calls_to("chat.update"))
    ack(event("app_mention", **{"event_id": "Ev0SECOND01", "event.ts": "1764430100.000100"}))
    work(stack.queued())
    edits = stack.slack.calls_to("chat.update")[edits_before:]
    assert len(edits) >= 2  # at least one progress edit, then the answer
    assert edits[0].args["text"].startswith("⏳")


def test_a_follow_up_in_the_thread_carries_the_earlier_turn(stack: Stack) -> None:
    model_answers(stack)
    ack(event("app_mention"))
    work(stack.queued())
    # a reply in the thread without a mention
    follow = event(
        "app_mention",
        **{"event_id": "Ev0FOLLOW01", "event.type": "message", "event.channel_type": "channel",
           "event.text": "and how long does it wait between tries?", "event.ts": "1764430200.000100",
           "event.thread_ts": "1764430000.000100"},
    )  # fmt: skip
    assert ack(follow)["statusCode"] == 200
    records = stack.queued()
    assert len(records) == 1
    work(records)
    body = stack.model.requests[-1].body
    assert body["messages"][0]["content"] == "Question: where do we retry failed jobs?"
    assert "how long does it wait" in json.dumps(body["messages"][-3:])
    assert len(bot_replies(stack, "1764430000.000100")) == 2
    # a plain message in a thread the bot never answered in is not a question
    other = event("app_mention", **{"event_id": "Ev0OTHERTHREAD", "event.type": "message",
                                     "event.ts": "1764430300.000100", "event.thread_ts": "1764439999.000100"})  # fmt: skip
    assert ack(other)["statusCode"] == 200 and stack.queued() == []


def test_secrets_put_in_after_the_first_request_are_picked_up_at_once(stack: Stack) -> None:
    import boto3
    from aws_lambda_powertools.utilities import parameters

    from codeask import lambdas

    sm = boto3.client("secretsmanager")
    arn = os.environ["SECRETS_ARN"]
    parameters.clear_caches()  # a fresh container: nothing read yet
    # Given a deploy whose secret is still the empty placeholder when Slack first calls
    sm.put_secret_value(
        SecretId=arn, SecretString=json.dumps({"SLACK_SIGNING_SECRET": "", "SLACK_BOT_TOKEN": ""})
    )
    lambdas.reset_settings()
    with pytest.raises(ConfigError, match="SLACK_SIGNING_SECRET"):  # Lambda answers Slack 5xx
        ack(event("url_verification"))
    # When the secrets are put in
    from fakes.stack import BOT_TOKEN, SIGNING_SECRET

    sm.put_secret_value(SecretId=arn, SecretString=json.dumps(
        {"SLACK_SIGNING_SECRET": SIGNING_SECRET, "SLACK_BOT_TOKEN": BOT_TOKEN}))  # fmt: skip
    # Then the very next request works, without waiting for a new container
    assert ack(event("url_verification"))["statusCode"] == 200


def test_a_diagram_is_verified_checked_and_linked_to_an_editor(stack: Stack) -> None:
    from codeask import diagram

    chart = (
        "flowchart TD\n"
        '  A["retry_job billing/worker.py:6"] --> B["RetryPolicy.backoff billing/policy.py:4"]\n'
        '  B --> C["sleep utils/clock.py:12"]'
    )
    stack.model.script = [Reply([text(f"The retry flow:\n\n```mermaid\n{chart}\n```")])]
    ack(event("app_mention", **{"event.text": "<@U0BOT> draw the retry flow"}))
    work(stack.queued())
    blob = json.dumps(bot_replies(stack, "1764430000.000100")[0]["blocks"])
    # the source is in the reply, the invented node is flagged like any citation
    assert "flowchart TD" in blob
    assert "utils/clock.py" in blob and "Could not verify" in blob
    assert "billing/worker.py:6" not in blob.split("Could not verify", 1)[1]
    # and the editor link carries exactly that diagram, which parses
    link = blob.split("<https://mermaid.live/edit#pako:", 1)[1].split("|", 1)[0]
    source = diagram.decode_link("https://mermaid.live/edit#pako:" + link)
    assert source == chart and diagram.validate(source) == []
