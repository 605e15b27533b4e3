"""Write the example events, signed like Slack signs them; re-run to refresh their timestamps.

    python events/sign.py [SIGNING_SECRET]

Slack rejects (and so does codeask) a request more than five minutes old, so before
`sam local invoke -e events/app_mention.json` run this with your app's signing secret.
Tests call `signed()` to re-sign an event with their own secret and the current time.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
LOCAL_SECRET = "codeask-local-signing-secret"
TEAM = "T0001"
CHANNEL = "C0123ABCD"
BOT_USER = "U0BOT"


def http_event(
    body: str, ts: str, signature: str, extra_headers: dict[str, str] | None = None
) -> dict[str, Any]:
    """An API Gateway HTTP API (payload format 2.0) event, as the ack function receives it."""
    return {
        "version": "2.0",
        "routeKey": "POST /slack/events",
        "rawPath": "/slack/events",
        "rawQueryString": "",
        "headers": {
            "content-type": "application/json",
            "user-agent": "Slackbot 1.0 (+https://api.slack.com/robots)",
            "x-slack-request-timestamp": ts,
            "x-slack-signature": signature,
            **(extra_headers or {}),
        },
        "requestContext": {
            "http": {"method": "POST", "path": "/slack/events", "protocol": "HTTP/1.1",
                     "sourceIp": "127.0.0.1", "userAgent": "Slackbot 1.0"},
            "routeKey": "POST /slack/events", "stage": "$default", "requestId": "local",
            "timeEpoch": int(ts) * 1000,
        },
        "body": body,
        "isBase64Encoded": False,
    }  # fmt: skip


def signature(secret: str, ts: str, body: bytes) -> str:
    base = b"v0:" + ts.encode() + b":" + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def signed(event: dict[str, Any], secret: str, now: float | None = None) -> dict[str, Any]:
    """The same event and body, re-signed with `secret` at `now`."""
    out = json.loads(json.dumps(event))
    body = base64.b64decode(out["body"]) if out.get("isBase64Encoded") else out["body"].encode()
    ts = str(int(time.time() if now is None else now))
    out["headers"]["x-slack-request-timestamp"] = ts
    out["headers"]["x-slack-signature"] = signature(secret, ts, body)
    return out


def _callback(event: dict[str, Any], event_id: str, **envelope: Any) -> dict[str, Any]:
    return {
        "token": "unused-verification-token",
        "team_id": TEAM,
        "api_app_id": "A0CODEASK",
        "event": event,
        "type": "event_callback",
        "event_id": event_id,
        "event_time": 1764430000,
        "authorizations": [{"enterprise_id": None, "team_id": TEAM, "user_id": BOT_USER,
                            "is_bot": True, "is_enterprise_install": False}],
        "is_ext_shared_channel": False,
        **envelope,
    }  # fmt: skip


def payloads() -> dict[str, tuple[dict[str, Any], dict[str, str]]]:
    mention = {"type": "app_mention", "user": "U0HUMAN", "text": f"<@{BOT_USER}> where do we retry failed jobs?",
               "ts": "1764430000.000100", "channel": CHANNEL, "event_ts": "1764430000.000100", "team": TEAM}  # fmt: skip
    return {
        "url_verification": ({"token": "unused", "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", "type": "url_verification"}, {}),
        "app_mention": (_callback(mention, "Ev0MENTION01"), {}),
        "slack_retry": (_callback(mention, "Ev0MENTION01"), {"x-slack-retry-num": "1", "x-slack-retry-reason": "http_timeout"}),
        "dm": (_callback({"type": "message", "channel_type": "im", "user": "U0HUMAN", "text": "where is the billing worker?",
                          "ts": "1764430001.000200", "channel": "D0DIRECT1", "event_ts": "1764430001.000200", "team": TEAM}, "Ev0DIRECT01"), {}),
        "bot_message": (_callback({"type": "message", "subtype": "bot_message", "bot_id": "B0OTHER", "text": "beep",
                                   "ts": "1764430002.000300", "channel": CHANNEL, "thread_ts": "1764430000.000100"}, "Ev0BOTMSG01"), {}),
        "slack_connect": (_callback({**mention, "ts": "1764430003.000400", "event_ts": "1764430003.000400"}, "Ev0SHARED01",
                                    is_ext_shared_channel=True), {}),
    }  # fmt: skip


def sqs_job_event() -> dict[str, Any]:
    job = {"version": 1, "event_id": "Ev0MENTION01", "team_id": TEAM, "channel": CHANNEL, "user": "U0HUMAN",
           "text": "where do we retry failed jobs?", "message_ts": "1764430000.000100",
           "thread_ts": "1764430000.000100", "event_time": 1764430000.0, "repos": ["billing"],
           "received_at": 1764430000.2}  # fmt: skip
    return {"Records": [{
        "messageId": "2e1424d4-f796-459a-8184-9c92662be6da", "receiptHandle": "local-receipt-handle",
        "body": json.dumps(job, separators=(",", ":"), sort_keys=True),
        "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "1764430000200",
                       "SenderId": "AIDAEXAMPLE", "ApproximateFirstReceiveTimestamp": "1764430000300"},
        "messageAttributes": {}, "md5OfBody": "", "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:codeask-jobs", "awsRegion": "us-east-1",
    }]}  # fmt: skip


def schedule_event() -> dict[str, Any]:
    return {"version": "0", "id": "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa", "detail-type": "Scheduled Event",
            "source": "aws.events", "account": "123456789012", "time": "2026-11-29T15:00:00Z",
            "region": "us-east-1", "resources": ["arn:aws:events:us-east-1:123456789012:rule/codeask-warm"],
            "detail": {}}  # fmt: skip


def main(secret: str = LOCAL_SECRET) -> None:
    now = str(int(time.time()))
    for name, (payload, extra) in payloads().items():
        body = json.dumps(payload, separators=(",", ":"))
        event = http_event(body, now, signature(secret, now, body.encode()), extra)
        (HERE / f"{name}.json").write_text(json.dumps(event, indent=2) + "\n")
    (HERE / "sqs_job.json").write_text(json.dumps(sqs_job_event(), indent=2) + "\n")
    (HERE / "schedule.json").write_text(json.dumps(schedule_event(), indent=2) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:2])
