"""The ack path: verify a Slack request, decide whether it is a question we may answer, queue it once."""

from __future__ import annotations

import base64
import hmac
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from codeask.botconfig import BotConfig, Refusal
from codeask.job import Job
from codeask.state import StateStore

_MENTION_RE = re.compile(r"<@[UW][A-Z0-9]+(?:\|[^>]*)?>")
_TS_RE = re.compile(r"[0-9]{1,12}")  # ASCII digits only, used with fullmatch


class AckOutcome(StrEnum):
    """What became of one Slack request; the ack's log line and metrics are keyed by it."""

    QUEUED = "queued"
    DUPLICATE = "duplicate"
    IGNORED = "ignored"
    REFUSED = "refused"
    VOTE = "vote"
    UNAUTHORIZED = "unauthorized"
    ERROR = "error"
    URL_VERIFICATION = "url_verification"


@dataclass
class Ack:
    status: int
    outcome: AckOutcome
    body: str = ""
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "text/plain"})
    job: Job | None = None
    refusal: Refusal | None = None  # why, when REFUSED
    ignored: str | None = None  # which filter let it go, when IGNORED (for the log)
    vote: str | None = None  # "up" or "down", when VOTE


def _ignored(why: str, status: int = 200, body: str = "") -> Ack:
    return Ack(status, AckOutcome.IGNORED, body, ignored=why)


def raw_body(event: dict[str, Any]) -> bytes:
    """The exact bytes Slack signed, from an API Gateway HTTP API (v2) event."""
    body = event.get("body") or ""
    if event.get("isBase64Encoded"):
        return base64.b64decode(body)
    return body.encode("utf-8") if isinstance(body, str) else bytes(body)


def verify_signature(secret: str, headers: dict[str, str], body: bytes, now: float) -> bool:
    """Slack's v0 signature over the raw body; anything odd about the request is simply invalid."""
    try:
        from slack_sdk.signature import SignatureVerifier

        ts = headers.get("x-slack-request-timestamp", "")
        sig = headers.get("x-slack-signature", "")
        if not _TS_RE.fullmatch(ts) or not sig.isascii() or not sig.startswith("v0="):
            return False
        if abs(now - int(ts)) > 300:
            return False
        expected = SignatureVerifier(secret).generate_signature(timestamp=ts, body=body)
        return expected is not None and hmac.compare_digest(expected, sig)
    except Exception:  # noqa: BLE001 - a request we cannot check is an unauthorised one, never a 500
        return False


def verified_body(event: dict[str, Any], signing_secret: str, now: float) -> bytes | Ack:
    """The request's raw body when Slack signed it; otherwise the 401 to answer with."""
    headers = {str(k).lower(): str(v) for k, v in (event.get("headers") or {}).items()}
    try:
        body = raw_body(event)
    except (ValueError, TypeError):
        return Ack(401, AckOutcome.UNAUTHORIZED, "invalid request")
    if not verify_signature(signing_secret, headers, body, now):
        return Ack(401, AckOutcome.UNAUTHORIZED, "invalid signature")
    return body


def handle(
    event: dict[str, Any],
    *,
    signing_secret: str,
    config: BotConfig,
    store: StateStore,
    enqueue: Callable[[Job], None],
    refuse: Callable[[Refusal, dict[str, Any]], None] | None = None,
    now: Callable[[], float] = time.time,
) -> Ack:
    """Everything between Slack's HTTP request and a queued job; returns what to answer Slack."""
    body = verified_body(event, signing_secret, now())
    if isinstance(body, Ack):
        return body
    try:
        payload = json.loads(body)
    except (UnicodeDecodeError, ValueError):
        return _ignored("not-json", 400, "body is not JSON")
    if not isinstance(payload, dict):
        return _ignored("not-json", 400, "body is not a JSON object")
    if payload.get("type") == "url_verification":
        return Ack(
            200,
            AckOutcome.URL_VERIFICATION,
            json.dumps({"challenge": payload.get("challenge", "")}),
            {"content-type": "application/json"},
        )
    if payload.get("type") != "event_callback" or not isinstance(payload.get("event"), dict):
        return _ignored("not-an-event")
    return _event(payload, config, store, enqueue, refuse, now)


def _bot_user(payload: dict[str, Any]) -> str | None:
    for auth in payload.get("authorizations") or []:
        if isinstance(auth, dict) and auth.get("is_bot") and auth.get("user_id"):
            return str(auth["user_id"])
    return None


def _strip_mention(text: str, bot_user: str | None) -> str:
    """The question without the bot's own mention; other people's mentions are part of it."""
    if bot_user:
        return re.sub(rf"<@{re.escape(bot_user)}(?:\|[^>]*)?>", "", text).strip()
    return _MENTION_RE.sub("", text).strip()


def _event(
    payload: dict[str, Any],
    config: BotConfig,
    store: StateStore,
    enqueue: Callable[[Job], None],
    refuse: Callable[[Refusal, dict[str, Any]], None] | None,
    now: Callable[[], float],
) -> Ack:
    ev: dict[str, Any] = payload["event"]
    kind = ev.get("type")
    bot_user = _bot_user(payload)
    if ev.get("bot_id") or ev.get("subtype") or ev.get("bot_profile"):
        return _ignored("bot-or-subtype")
    user = ev.get("user")
    if not user or user == bot_user:
        return _ignored("self")
    if kind not in ("app_mention", "message"):
        return _ignored("event-type")
    channel = str(ev.get("channel") or "")
    ts = str(ev.get("ts") or "")
    thread_ts = str(ev.get("thread_ts") or ts)
    if not channel or not ts:
        return _ignored("incomplete")
    is_dm = ev.get("channel_type") in ("im", "mpim") or channel.startswith("D")
    if kind == "message" and not is_dm:
        # A plain message is a question only as a follow-up in a thread the bot answered in,
        # and a message that mentions the bot also arrives as app_mention: that one is used.
        if not ev.get("thread_ts") or (bot_user and f"<@{bot_user}" in str(ev.get("text"))):
            return _ignored("not-a-question")
        if store.thread_turns(channel, thread_ts) is None:
            return _ignored("not-our-thread")
    event_id = str(payload.get("event_id") or f"{channel}:{ts}")
    if not store.claim(f"event#{event_id}"):
        return Ack(200, AckOutcome.DUPLICATE)
    claims = [f"event#{event_id}"]
    try:
        return _claimed(payload, ev, config, store, enqueue, refuse, now, claims, bot_user, is_dm)
    except Exception:  # noqa: BLE001 - whatever failed, the claims go and Slack retries
        # Nothing may be lost: whatever failed after the claim, forget the claims and answer 500,
        # so Slack's retry brings the event back instead of being dropped as a duplicate.
        for key in reversed(claims):
            store.release(key)
        return Ack(500, AckOutcome.ERROR, "could not queue the question")


def _claimed(
    payload: dict[str, Any],
    ev: dict[str, Any],
    config: BotConfig,
    store: StateStore,
    enqueue: Callable[[Job], None],
    refuse: Callable[[Refusal, dict[str, Any]], None] | None,
    now: Callable[[], float],
    claims: list[str],
    bot_user: str | None,
    is_dm: bool,
) -> Ack:
    channel, ts, user = str(ev["channel"]), str(ev["ts"]), str(ev["user"])
    thread_ts = str(ev.get("thread_ts") or ts)
    team = str(payload.get("team_id") or "")
    asker_team = str(ev.get("user_team") or ev.get("team") or team)
    expected_team = config.team_id or team
    reason: Refusal | None = None
    if is_dm:
        reason = Refusal.DM
    elif payload.get("is_ext_shared_channel") or ev.get("is_ext_shared_channel"):
        reason = Refusal.SHARED
    elif not asker_team or asker_team != expected_team:
        reason = Refusal.TEAM
    elif config.repos_for(channel) is None:
        reason = Refusal.CHANNEL
    if reason is not None:
        if refuse is not None:
            try:
                refuse(reason, ev)
            except Exception:  # noqa: BLE001 - the refusal stands even if telling them fails
                pass
        return Ack(200, AckOutcome.REFUSED, refusal=reason)
    if not store.claim(f"msg#{channel}#{ts}"):
        return Ack(200, AckOutcome.DUPLICATE)
    claims.append(f"msg#{channel}#{ts}")
    job = Job(
        event_id=claims[0].removeprefix("event#"),
        team_id=team,
        channel=channel,
        user=user,
        text=_strip_mention(str(ev.get("text") or ""), bot_user),
        message_ts=ts,
        thread_ts=thread_ts,
        event_time=float(payload.get("event_time") or ev.get("event_ts") or now()),
        repos=tuple(r.name for r in config.repos_for(channel) or []),
        received_at=now(),
    )
    enqueue(job)  # a failure here is caught by the caller, which releases the claims
    return Ack(200, AckOutcome.QUEUED, job=job)


def handle_interaction(
    event: dict[str, Any],
    *,
    signing_secret: str,
    config: BotConfig,
    store: StateStore,
    actions: dict[str, str],
    now: Callable[[], float] = time.time,
) -> Ack:
    """A button press (Slack interactivity): verified like an event, then a 👍/👎 is recorded."""
    from urllib.parse import parse_qs

    body = verified_body(event, signing_secret, now())
    if isinstance(body, Ack):
        return body
    try:
        payload = json.loads(parse_qs(body.decode("utf-8")).get("payload", ["{}"])[0])
    except (UnicodeDecodeError, ValueError):
        return _ignored("not-json", 400, "payload is not JSON")
    if not isinstance(payload, dict) or payload.get("type") != "block_actions":
        return _ignored("not-a-button")
    team = str((payload.get("team") or {}).get("id") or "")
    user = str((payload.get("user") or {}).get("id") or "")
    if not user or team != (config.team_id or team) or not team:
        return Ack(200, AckOutcome.REFUSED, refusal=Refusal.TEAM)
    for action in payload.get("actions") or []:
        vote = actions.get(str(action.get("action_id")))
        key = str(action.get("value") or "")
        if vote and key:
            info = store.record_vote(key, user, vote)
            if info is None:
                return _ignored("unknown-answer")
            return Ack(200, AckOutcome.VOTE, vote=vote)
    return _ignored("not-a-vote")
