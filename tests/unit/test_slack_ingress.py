"""The ack path: a Slack request in, at most one queued question out, and who may ask at all.

Real pieces throughout: Slack's v0 signatures (events/sign.py), a StateStore on a real DynamoDB
table in moto on 127.0.0.1, and an `enqueue` that records what SQS would have been sent.
"""

from __future__ import annotations

import base64
import json
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from codeask.botconfig import BotConfig
from codeask.job import Job
from codeask.slack_ingress import Ack, handle, handle_interaction
from codeask.state import StateStore

EVENTS = Path(__file__).resolve().parents[2] / "events"
sys.path.insert(0, str(EVENTS))
import sign  # noqa: E402

SECRET = "unit-signing-secret-" + "fedcba9876543210"
T0 = 1_800_000_000  # the wall clock of every test, in epoch seconds
TEAM = sign.TEAM
CHANNEL = sign.CHANNEL
BOT = sign.BOT_USER
HUMAN = "U0HUMAN"
QUESTION_TS = "1799999990.000100"
QUESTION = "where do we retry failed jobs?"

CONFIG = BotConfig.from_dict(
    {
        "repos": {"billing": {"url": "https://git.example.invalid/billing.git", "branch": "main"}},
        "channels": {CHANNEL: ["billing"]},
    }
)


# -- building Slack's requests ---------------------------------------------------------------


def mention(**fields: Any) -> dict[str, Any]:
    """An app_mention event from a human in the configured channel; `fields` override or add."""
    ev = {
        "type": "app_mention",
        "user": HUMAN,
        "text": f"<@{BOT}> {QUESTION}",
        "ts": QUESTION_TS,
        "channel": CHANNEL,
        "event_ts": QUESTION_TS,
        "team": TEAM,
    }
    ev.update(fields)
    return {k: v for k, v in ev.items() if v is not None}


def message(**fields: Any) -> dict[str, Any]:
    """A plain `message` event (message.channels / message.im); `fields` override or add."""
    return mention(**{"type": "message", "text": QUESTION, **fields})


def envelope(ev: dict[str, Any], event_id: str = "Ev0QUESTION1", **extra: Any) -> dict[str, Any]:
    """Slack's event_callback wrapper around `ev`, as the Events API posts it."""
    payload = {
        "token": "unused-verification-token",
        "team_id": TEAM,
        "api_app_id": "A0CODEASK",
        "event": ev,
        "type": "event_callback",
        "event_id": event_id,
        "event_time": 1799999990,
        "authorizations": [
            {"enterprise_id": None, "team_id": TEAM, "user_id": BOT, "is_bot": True}
        ],
        "is_ext_shared_channel": False,
    }
    payload.update(extra)
    return {k: v for k, v in payload.items() if v is not None}


def request(
    payload: dict[str, Any] | str | bytes,
    *,
    at: float = T0,
    secret: str = SECRET,
    retry: int | None = None,
) -> dict[str, Any]:
    """An API Gateway HTTP API v2 event carrying `payload`, signed by Slack at `at`."""
    if isinstance(payload, dict):
        body: str | bytes = json.dumps(payload, separators=(",", ":"))
    else:
        body = payload
    if isinstance(body, bytes):
        event = sign.http_event(base64.b64encode(body).decode(), "0", "")
        event["isBase64Encoded"] = True
    else:
        event = sign.http_event(body, "0", "")
    if retry is not None:
        event["headers"]["x-slack-retry-num"] = str(retry)
        event["headers"]["x-slack-retry-reason"] = "http_timeout"
    return sign.signed(event, secret, at)


# -- the ack under test, wired to a real table ------------------------------------------------


@dataclass
class Ingress:
    store: StateStore
    config: BotConfig = CONFIG
    queued: list[Job] = field(default_factory=list)
    refusals: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    sqs_down: bool = False

    def enqueue(self, job: Job) -> None:
        if self.sqs_down:
            raise ConnectionError("SQS unreachable")
        # What the worker gets back is what went over the wire.
        self.queued.append(Job.from_json(job.to_json()))

    def refuse(self, reason: str, ev: dict[str, Any]) -> None:
        self.refusals.append((reason, ev))

    def deliver(self, event: dict[str, Any], *, now: float = T0) -> Ack:
        return handle(
            event,
            signing_secret=SECRET,
            config=self.config,
            store=self.store,
            enqueue=self.enqueue,
            refuse=self.refuse,
            now=lambda: now,
        )


@pytest.fixture
def dynamodb(moto: Any) -> Any:
    import boto3

    return boto3.client(
        "dynamodb",
        endpoint_url=moto.url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


@pytest.fixture
def store(dynamodb: Any) -> Iterator[StateStore]:
    table = f"ack-{uuid.uuid4().hex[:12]}"
    dynamodb.create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    yield StateStore(table, dynamodb)
    dynamodb.delete_table(TableName=table)


@pytest.fixture
def ingress(store: StateStore) -> Ingress:
    return Ingress(store)


def assert_nothing_happened(ingress: Ingress) -> None:
    assert ingress.queued == []
    assert ingress.refusals == []


# -- 1. a valid question ----------------------------------------------------------------------


def test_a_signed_mention_is_acknowledged_and_queued_once(ingress: Ingress) -> None:
    # Given a correctly signed app_mention in a configured channel
    event = request(envelope(mention()))

    # When the ack handles it (how fast is `make bench`'s business)
    ack = ingress.deliver(event)

    # Then Slack gets a 200, and exactly one job is queued
    assert (ack.status, ack.outcome) == (200, "queued")
    assert len(ingress.queued) == 1
    job = ingress.queued[0]
    # ...carrying the question without the bot's mention, answered in a new thread on it
    assert job.text == QUESTION
    assert job.message_ts == QUESTION_TS
    assert job.thread_ts == QUESTION_TS
    assert (job.channel, job.user, job.team_id) == (CHANNEL, HUMAN, TEAM)
    assert job.event_id == "Ev0QUESTION1"
    assert job.repos == ("billing",)
    assert job.received_at == T0
    assert ingress.refusals == []


def test_a_mention_inside_a_thread_is_answered_in_that_thread(ingress: Ingress) -> None:
    # Given a mention posted as a reply in an existing thread
    parent = "1799999900.000001"
    event = request(envelope(mention(thread_ts=parent)))

    # When it is handled
    ack = ingress.deliver(event)

    # Then the job answers in the existing thread, not under the reply
    assert ack.outcome == "queued"
    [job] = ingress.queued
    assert (job.message_ts, job.thread_ts) == (QUESTION_TS, parent)


def test_only_the_bots_own_mention_is_removed_from_the_question(ingress: Ingress) -> None:
    # Given a question that mentions the bot (with a display-name suffix) and a colleague
    text = f"<@{BOT}|codeask> why did <@U0ALICE> change the retry policy?"
    event = request(envelope(mention(text=text)))

    # When it is handled
    ingress.deliver(event)

    # Then the colleague's mention is still part of the question
    [job] = ingress.queued
    assert job.text == "why did <@U0ALICE> change the retry policy?"


def test_without_authorizations_the_leading_mention_is_still_removed(ingress: Ingress) -> None:
    # Given an envelope that does not say which user is the bot (no authorizations)
    event = request(envelope(mention(), authorizations=None))

    # When it is handled
    ingress.deliver(event)

    # Then the question is queued without the mention in front of it
    [job] = ingress.queued
    assert job.text == QUESTION


def test_an_event_without_a_channel_is_ignored_as_incomplete(ingress: Ingress) -> None:
    # Given a mention whose event lacks its channel
    event = request(envelope(mention(channel=None)))

    # When it is handled
    ack = ingress.deliver(event)

    # Then it is ignored (and the log says why), and nothing is queued
    assert (ack.status, ack.outcome, ack.ignored) == (200, "ignored", "incomplete")
    assert_nothing_happened(ingress)


# -- 2. the body is exactly what Slack signed ---------------------------------------------------


def test_a_body_changed_by_one_byte_is_rejected_and_nothing_is_queued(ingress: Ingress) -> None:
    # Given a signed request whose body is altered by one byte after signing
    event = request(envelope(mention()))
    body = event["body"]
    i = body.index("retry")
    event["body"] = body[:i] + "R" + body[i + 1 :]

    # When it is handled
    ack = ingress.deliver(event)

    # Then it is unauthorised and nothing is queued
    assert (ack.status, ack.outcome) == (401, "unauthorized")
    assert_nothing_happened(ingress)


def test_reserialised_json_with_the_same_data_is_rejected(ingress: Ingress) -> None:
    # Given a signed request whose JSON is re-serialised (same data, other whitespace)
    event = request(envelope(mention()))
    event["body"] = json.dumps(json.loads(event["body"]), indent=2)

    # When it is handled
    ack = ingress.deliver(event)

    # Then the signature no longer matches: 401, nothing queued
    assert (ack.status, ack.outcome) == (401, "unauthorized")
    assert_nothing_happened(ingress)


def test_a_rejected_request_leaves_no_trace_so_the_genuine_one_still_counts(
    ingress: Ingress,
) -> None:
    # Given a forged copy (wrong secret) of a question arrived first
    forged = request(envelope(mention()), secret="not-the-signing-secret")
    assert ingress.deliver(forged).status == 401

    # When the genuine request arrives
    ack = ingress.deliver(request(envelope(mention())))

    # Then it is queued: the forgery claimed nothing
    assert ack.outcome == "queued"
    assert len(ingress.queued) == 1


# -- 3. the five-minute window ----------------------------------------------------------------


@pytest.mark.parametrize(
    "age", [301, -301, 3600, -86400], ids=["301s-old", "301s-new", "1h-old", "1d-new"]
)
def test_a_timestamp_outside_five_minutes_is_rejected(ingress: Ingress, age: int) -> None:
    # Given a correctly signed request stamped `age` seconds before now
    event = request(envelope(mention()), at=T0 - age)

    # When it is handled at T0
    ack = ingress.deliver(event, now=T0)

    # Then it is rejected as a possible replay
    assert (ack.status, ack.outcome) == (401, "unauthorized")
    assert_nothing_happened(ingress)


@pytest.mark.parametrize("age", [300, 299, 0, -299, -300])
def test_a_timestamp_just_inside_five_minutes_is_accepted(ingress: Ingress, age: int) -> None:
    # Given a correctly signed request stamped `age` seconds before now (within 5 minutes)
    event = request(envelope(mention()), at=T0 - age)

    # When it is handled at T0
    ack = ingress.deliver(event, now=T0)

    # Then it is accepted and queued
    assert (ack.status, ack.outcome) == (200, "queued")
    assert len(ingress.queued) == 1


# -- 4. malformed requests are 401, never an exception ----------------------------------------


def _with_timestamp(ts: str) -> dict[str, Any]:
    """A request stamped `ts` and signed over exactly that stamp: only its format is wrong."""
    event = request(envelope(mention()))
    body = event["body"].encode()
    event["headers"]["x-slack-request-timestamp"] = ts
    event["headers"]["x-slack-signature"] = sign.signature(SECRET, ts, body)
    return event


@pytest.mark.parametrize(
    "ts",
    [
        "abc",
        "",
        "1e9",
        f" {T0}",
        f"{T0} ",
        f"{T0}\n",
        f"+{T0}",
        f"{T0}.0",
        str(T0).translate(str.maketrans("0123456789", "０１２３４５６７８９")),  # fullwidth digits
    ],
    ids=["abc", "empty", "1e9", "leading-space", "trailing-space", "trailing-newline", "plus",
         "decimal", "fullwidth-digits"],
)  # fmt: skip
def test_a_malformed_timestamp_is_unauthorised(ingress: Ingress, ts: str) -> None:
    # Given a request whose timestamp header is not plain ASCII digits (even when signed over it)
    event = _with_timestamp(ts)

    # When it is handled
    ack = ingress.deliver(event)

    # Then it is a 401, not an exception or a 500
    assert (ack.status, ack.outcome) == (401, "unauthorized")
    assert_nothing_happened(ingress)


def _good() -> dict[str, Any]:
    return request(envelope(mention()))


def _sig_non_ascii() -> dict[str, Any]:
    event = _good()
    event["headers"]["x-slack-signature"] = "v0=" + "é" * 64
    return event


def _sig_valid_plus_non_ascii() -> dict[str, Any]:
    event = _good()
    event["headers"]["x-slack-signature"] += "ü"
    return event


def _sig_without_prefix() -> dict[str, Any]:
    event = _good()
    event["headers"]["x-slack-signature"] = event["headers"]["x-slack-signature"][3:]
    return event


def _sig_other_version() -> dict[str, Any]:
    event = _good()
    event["headers"]["x-slack-signature"] = "v1=" + event["headers"]["x-slack-signature"][3:]
    return event


def _sig_uppercase_hex() -> dict[str, Any]:
    event = _good()
    event["headers"]["x-slack-signature"] = (
        "v0=" + event["headers"]["x-slack-signature"][3:].upper()
    )
    return event


def _sig_empty() -> dict[str, Any]:
    event = _good()
    event["headers"]["x-slack-signature"] = ""
    return event


def _no_signature() -> dict[str, Any]:
    event = _good()
    del event["headers"]["x-slack-signature"]
    return event


def _no_timestamp() -> dict[str, Any]:
    event = _good()
    del event["headers"]["x-slack-request-timestamp"]
    return event


def _no_headers() -> dict[str, Any]:
    event = _good()
    del event["headers"]
    return event


def _null_headers() -> dict[str, Any]:
    event = _good()
    event["headers"] = None
    return event


def _no_body() -> dict[str, Any]:
    event = _good()
    del event["body"]
    return event


def _non_utf8_body() -> dict[str, Any]:
    # Correctly signed over the raw bytes, which are not UTF-8
    return request(b'{"type":"event_callback","event":{"text":"\xff\xfe caf\xe9"}}')


def _bad_base64_body() -> dict[str, Any]:
    event = _good()
    event["isBase64Encoded"] = True
    event["body"] = "not base64 at all!"
    return event


def _empty_event() -> dict[str, Any]:
    return {}


@pytest.mark.parametrize(
    "make",
    [
        _sig_non_ascii,
        _sig_valid_plus_non_ascii,
        _sig_without_prefix,
        _sig_other_version,
        _sig_uppercase_hex,
        _sig_empty,
        _no_signature,
        _no_timestamp,
        _no_headers,
        _null_headers,
        _no_body,
        _non_utf8_body,
        _bad_base64_body,
        _empty_event,
    ],
    ids=lambda f: f.__name__.strip("_"),
)
def test_a_malformed_request_is_unauthorised_never_an_error(
    ingress: Ingress, make: Callable[[], dict[str, Any]]
) -> None:
    # Given a request that is odd in one way
    event = make()

    # When it is handled
    ack = ingress.deliver(event)

    # Then it is a 401 (no exception escapes, no 500) and nothing is queued
    assert (ack.status, ack.outcome) == (401, "unauthorized")
    assert_nothing_happened(ingress)


def test_headers_are_matched_case_insensitively(ingress: Ingress) -> None:
    # Given a correctly signed request whose header names arrive in mixed case
    event = request(envelope(mention()))
    headers = event["headers"]
    event["headers"] = {
        "X-Slack-Request-Timestamp": headers.pop("x-slack-request-timestamp"),
        "X-SLACK-SIGNATURE": headers.pop("x-slack-signature"),
        **headers,
    }

    # When it is handled
    ack = ingress.deliver(event)

    # Then it is verified like any other and queued
    assert (ack.status, ack.outcome) == (200, "queued")
    assert len(ingress.queued) == 1


def test_mixed_case_headers_with_a_bad_signature_are_still_unauthorised(ingress: Ingress) -> None:
    # Given mixed-case headers carrying a signature made with the wrong secret
    event = request(envelope(mention()), secret="wrong-secret")
    headers = event["headers"]
    event["headers"] = {
        "X-Slack-Request-Timestamp": headers.pop("x-slack-request-timestamp"),
        "X-Slack-Signature": headers.pop("x-slack-signature"),
    }

    # When it is handled
    ack = ingress.deliver(event)

    # Then it is a 401
    assert (ack.status, ack.outcome) == (401, "unauthorized")
    assert_nothing_happened(ingress)


def test_a_base64_encoded_body_signed_over_its_bytes_is_accepted(ingress: Ingress) -> None:
    # Given API Gateway passes the body base64-encoded (valid UTF-8 inside)
    body = json.dumps(envelope(mention(text=f"<@{BOT}> où est le café?")), ensure_ascii=False)
    event = request(body.encode("utf-8"))

    # When it is handled
    ack = ingress.deliver(event)

    # Then the signature is checked over the decoded bytes and the question is queued
    assert ack.outcome == "queued"
    assert ingress.queued[0].text == "où est le café?"


# -- url_verification ---------------------------------------------------------------------------


def test_url_verification_answers_the_challenge(ingress: Ingress) -> None:
    # Given Slack's signed url_verification handshake
    payload = {
        "token": "unused",
        "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY",
        "type": "url_verification",
    }
    event = request(payload)

    # When it is handled
    ack = ingress.deliver(event)

    # Then the challenge is echoed back as JSON, and nothing is queued
    assert ack.status == 200
    assert ack.headers["content-type"] == "application/json"
    assert json.loads(ack.body) == {"challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY"}
    assert_nothing_happened(ingress)


def test_url_verification_without_a_challenge_echoes_an_empty_one(ingress: Ingress) -> None:
    # Given a signed url_verification that carries no challenge
    event = request({"type": "url_verification"})

    # When it is handled
    ack = ingress.deliver(event)

    # Then the answer is still a JSON object with a (blank) string challenge, never null
    assert ack.status == 200
    assert json.loads(ack.body) == {"challenge": ""}
    assert_nothing_happened(ingress)


@pytest.mark.parametrize(
    ("body", "text"),
    [("{not json", "body is not JSON"), ('["a", "list"]', "body is not a JSON object")],
    ids=["not-json", "json-list"],
)
def test_a_signed_body_that_is_not_a_json_object_is_a_400_saying_so(
    ingress: Ingress, body: str, text: str
) -> None:
    # Given a correctly signed request whose body is not a JSON object
    event = request(body)

    # When it is handled
    ack = ingress.deliver(event)

    # Then Slack gets a 400 that says what was wrong, and nothing is queued
    assert (ack.status, ack.outcome, ack.body) == (400, "ignored", text)
    assert_nothing_happened(ingress)


def test_a_bad_signature_is_answered_with_a_plain_reason(ingress: Ingress) -> None:
    # Given a request signed with another secret
    ack = ingress.deliver(request(envelope(mention()), secret="someone-else"))

    # Then the 401 says why in plain words
    assert (ack.status, ack.body) == (401, "invalid signature")


def test_an_unsigned_url_verification_is_rejected(ingress: Ingress) -> None:
    # Given a url_verification signed with another secret
    event = request({"challenge": "x", "type": "url_verification"}, secret="someone-else")

    # When it is handled
    ack = ingress.deliver(event)

    # Then the challenge is not echoed
    assert ack.status == 401
    assert "challenge" not in ack.body


# -- 5, 6, 8. deliveries and retries ------------------------------------------------------------


def test_the_same_event_delivered_ten_times_at_once_is_queued_once(ingress: Ingress) -> None:
    # Given ten simultaneous deliveries of one signed event
    event = request(envelope(mention()))
    start = threading.Barrier(10)
    acks: list[Ack] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def deliver() -> None:
        try:
            start.wait()
            ack = ingress.deliver(json.loads(json.dumps(event)))
            with lock:
                acks.append(ack)
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    # When all ten are handled concurrently
    threads = [threading.Thread(target=deliver) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)

    # Then all are acknowledged with 200, and exactly one job is queued
    assert errors == []
    assert len(acks) == 10 and all(a.status == 200 for a in acks)
    assert sorted(a.outcome for a in acks) == ["duplicate"] * 9 + ["queued"]
    assert len(ingress.queued) == 1


def test_one_message_arriving_under_two_event_ids_at_once_is_queued_once(store: StateStore) -> None:
    # Given a message delivered at once under two event ids (the bot's user id not known, so the
    # `message` copy of a mention cannot be told apart from the app_mention by its text)
    ingress = Ingress(store)
    parent = "1799999900.000001"
    store.add_turn(CHANNEL, parent, {"q": "earlier question", "a": "earlier answer"})
    copies = [
        request(envelope(mention(thread_ts=parent), "Ev0MENTION", authorizations=None)),
        request(envelope(message(thread_ts=parent, text=f"<@{BOT}> {QUESTION}"), "Ev0MESSAGE",
                         authorizations=None)),
    ] * 5  # fmt: skip
    start = threading.Barrier(len(copies))
    outcomes: list[str] = []

    def deliver(ev: dict[str, Any]) -> None:
        start.wait()
        outcomes.append(ingress.deliver(ev).outcome)

    # When all are handled concurrently
    threads = [threading.Thread(target=deliver, args=(ev,)) for ev in copies]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)

    # Then one job is queued for the message
    assert outcomes.count("queued") == 1
    assert len(ingress.queued) == 1
    assert ingress.queued[0].dedupe_key == f"{CHANNEL}:{QUESTION_TS}"


def test_a_failed_enqueue_is_a_500_and_slacks_retry_is_then_queued(ingress: Ingress) -> None:
    # Given SQS is down when the question first arrives
    ingress.sqs_down = True
    first = ingress.deliver(request(envelope(mention())))
    assert (first.status, first.outcome) == (500, "error")
    assert ingress.queued == []

    # When SQS is back and Slack's retry #1 (same event_id) arrives a minute later
    ingress.sqs_down = False
    retry = ingress.deliver(request(envelope(mention()), at=T0 + 60, retry=1), now=T0 + 60)

    # Then the retry is processed, not dropped as a retry, and queued once
    assert (retry.status, retry.outcome) == (200, "queued")
    assert len(ingress.queued) == 1
    assert ingress.queued[0].event_id == "Ev0QUESTION1"

    # And a further retry is a duplicate
    again = ingress.deliver(request(envelope(mention()), at=T0 + 120, retry=2), now=T0 + 120)
    assert (again.status, again.outcome) == (200, "duplicate")
    assert len(ingress.queued) == 1


def test_a_retry_arriving_hours_later_is_still_deduplicated(ingress: Ingress) -> None:
    # Given a question that was queued
    assert ingress.deliver(request(envelope(mention()))).outcome == "queued"

    # When Slack's retry of the same event arrives two hours later, freshly signed
    later = T0 + 2 * 3600
    ack = ingress.deliver(request(envelope(mention()), at=later, retry=3), now=later)

    # Then it is acknowledged and dropped: still one job
    assert (ack.status, ack.outcome) == (200, "duplicate")
    assert len(ingress.queued) == 1


def test_a_first_delivery_with_a_retry_header_is_processed(ingress: Ingress) -> None:
    # Given the only delivery we ever see carries x-slack-retry-num (the first was lost in transit)
    event = request(envelope(mention()), retry=1)

    # When it is handled
    ack = ingress.deliver(event)

    # Then it is queued: retries are deduplicated by event, not by header
    assert ack.outcome == "queued"
    assert len(ingress.queued) == 1


@pytest.mark.parametrize("mention_first", [True, False], ids=["mention-first", "message-first"])
def test_app_mention_and_message_for_the_same_top_level_post_make_one_job(
    ingress: Ingress, mention_first: bool
) -> None:
    # Given a top-level post that mentions the bot arrives as both app_mention and message
    as_mention = request(envelope(mention(), "Ev0MENTION"))
    as_message = request(envelope(message(text=f"<@{BOT}> {QUESTION}"), "Ev0MESSAGE"))
    order = [as_mention, as_message] if mention_first else [as_message, as_mention]

    # When both are handled
    for ev in order:
        assert ingress.deliver(ev).status == 200

    # Then one job is queued
    [job] = ingress.queued
    assert job.text == QUESTION and job.message_ts == QUESTION_TS


@pytest.mark.parametrize("mention_first", [True, False], ids=["mention-first", "message-first"])
def test_app_mention_and_message_for_the_same_thread_reply_make_one_job(
    ingress: Ingress, store: StateStore, mention_first: bool
) -> None:
    # Given a reply that mentions the bot, in a thread the bot answered in, arrives twice
    parent = "1799999900.000001"
    store.add_turn(CHANNEL, parent, {"q": "earlier question", "a": "earlier answer"})
    as_mention = request(envelope(mention(thread_ts=parent), "Ev0MENTION"))
    as_message = request(
        envelope(message(thread_ts=parent, text=f"<@{BOT}> {QUESTION}"), "Ev0MESSAGE")
    )
    order = [as_mention, as_message] if mention_first else [as_message, as_mention]

    # When both are handled
    for ev in order:
        assert ingress.deliver(ev).status == 200

    # Then one job is queued, in the thread
    [job] = ingress.queued
    assert (job.text, job.thread_ts) == (QUESTION, parent)


# -- 7. bots and noise ----------------------------------------------------------------------------

PARENT = "1799999900.000001"


@pytest.mark.parametrize(
    "ev",
    [
        message(thread_ts=PARENT, bot_id="B0OTHER", subtype="bot_message", user=None),
        message(thread_ts=PARENT, bot_id="B0OTHER"),
        message(thread_ts=PARENT, bot_profile={"id": "B0OTHER", "name": "otherbot"}),
        message(thread_ts=PARENT, user=BOT),
        message(thread_ts=PARENT, user=BOT, bot_id="B0CODEASK"),
        mention(thread_ts=PARENT, bot_id="B0OTHER"),
        mention(bot_profile={"id": "B0OTHER", "name": "otherbot"}),
        mention(user=BOT),
        message(thread_ts=PARENT, subtype="message_changed",
                message={"type": "message", "user": HUMAN, "text": QUESTION, "ts": QUESTION_TS}),
        message(thread_ts=PARENT, subtype="message_deleted", deleted_ts=QUESTION_TS),
        message(subtype="channel_join", text=f"<@{HUMAN}> has joined the channel"),
        message(thread_ts=PARENT, subtype="thread_broadcast", bot_id="B0OTHER"),
    ],
    ids=["bot_message", "bot_id", "bot_profile", "own-user", "own-bot-id", "bot-mentions-us",
         "bot-profile-mention", "own-user-mention", "message_changed", "message_deleted",
         "channel_join", "bot-broadcast"],
)  # fmt: skip
def test_bot_and_housekeeping_messages_are_ignored(
    ingress: Ingress, store: StateStore, ev: dict[str, Any]
) -> None:
    # Given a thread the bot answered in (so a human's reply there would be a follow-up)
    store.add_turn(CHANNEL, PARENT, {"q": "earlier question", "a": "earlier answer"})

    # When a bot's or the bot's own post, or an edit/delete/join, arrives there
    ack = ingress.deliver(request(envelope(ev)))

    # Then it is acknowledged and ignored: nothing queued, nobody told off
    assert ack.status == 200
    assert ack.outcome == "ignored" and ack.ignored
    assert_nothing_happened(ingress)


def test_two_bots_in_one_thread_cannot_loop(ingress: Ingress, store: StateStore) -> None:
    # Given the bot answered in a thread, and another bot replies to every post there
    store.add_turn(CHANNEL, PARENT, {"q": "earlier question", "a": "earlier answer"})
    posts = [
        # our own answer, echoed back by Slack
        message(thread_ts=PARENT, ts="1799999991.000001", user=BOT, bot_id="B0CODEASK",
                text="The retry lives in billing/worker.py:6"),
        # the other bot answers it, mentioning us
        mention(thread_ts=PARENT, ts="1799999992.000001", user="U0OTHERBOT", bot_id="B0OTHER",
                text=f"<@{BOT}> thanks! what else?"),
        message(thread_ts=PARENT, ts="1799999992.000001", user="U0OTHERBOT", bot_id="B0OTHER",
                text=f"<@{BOT}> thanks! what else?"),
        message(thread_ts=PARENT, ts="1799999993.000001", user="U0OTHERBOT",
                bot_profile={"id": "B0OTHER"}, text="and another thing"),
    ]  # fmt: skip

    # When each post arrives
    for n, ev in enumerate(posts):
        assert ingress.deliver(request(envelope(ev, f"Ev0LOOP{n}"))).status == 200

    # Then none of them becomes a question
    assert_nothing_happened(ingress)


# -- follow-ups -------------------------------------------------------------------------------------


def test_a_follow_up_in_a_thread_the_bot_answered_is_queued(
    ingress: Ingress, store: StateStore
) -> None:
    # Given the bot answered in a thread
    store.add_turn(CHANNEL, PARENT, {"q": "where do we retry?", "a": "billing/worker.py:6"})

    # When a human replies there without mentioning the bot
    follow_up = message(thread_ts=PARENT, ts="1799999995.000300", text="and the backoff?")
    ack = ingress.deliver(request(envelope(follow_up, "Ev0FOLLOWUP")))

    # Then it is queued as a question in that thread
    assert ack.outcome == "queued"
    [job] = ingress.queued
    assert (job.text, job.message_ts, job.thread_ts) == (
        "and the backoff?",
        "1799999995.000300",
        PARENT,
    )


def test_a_reply_in_a_thread_the_bot_never_answered_is_ignored(
    ingress: Ingress, store: StateStore
) -> None:
    # Given the bot answered in one thread
    store.add_turn(CHANNEL, PARENT, {"q": "where do we retry?", "a": "billing/worker.py:6"})

    # When a human replies in another thread, and posts at top level, without a mention
    other = message(thread_ts="1799999800.000009", ts="1799999995.000300", text="lunch?")
    top = message(ts="1799999996.000400", text="anyone around?")
    acks = [
        ingress.deliver(request(envelope(ev, f"Ev0CHAT{i}"))) for i, ev in enumerate([other, top])
    ]

    # Then neither is a question
    assert [a.status for a in acks] == [200, 200]
    assert all(a.outcome == "ignored" and a.ignored for a in acks)
    assert_nothing_happened(ingress)


# -- 9. who may ask: DMs and unconfigured channels ------------------------------------------------


@pytest.mark.parametrize(
    "ev",
    [
        message(channel="D0DIRECT1", channel_type="im"),
        message(channel="D0DIRECT1", channel_type="im", text=f"<@{BOT}> {QUESTION}"),
        message(channel="G0GROUPDM1", channel_type="mpim"),
        message(channel="C0GROUPDM2", channel_type="mpim", text=f"<@{BOT}> {QUESTION}"),
        mention(channel="D0DIRECT1"),
    ],
    ids=["im", "im-with-mention", "mpim", "mpim-with-mention", "mention-in-D-channel"],
)
def test_direct_and_group_messages_are_refused_once(ingress: Ingress, ev: dict[str, Any]) -> None:
    # Given a question asked in a DM or a group DM
    event = request(envelope(ev))

    # When it is handled
    ack = ingress.deliver(event)

    # Then it is refused as a DM, the refusal is sent once, and nothing is queued
    assert (ack.status, ack.outcome, ack.refusal) == (200, "refused", "dm")
    assert [(reason, e["channel"]) for reason, e in ingress.refusals] == [("dm", ev["channel"])]
    assert ingress.queued == []


def test_a_dm_in_a_channel_id_that_is_configured_is_still_refused(store: StateStore) -> None:
    # Given (by a mistake elsewhere) a group DM whose G… id is listed in the configuration
    config = BotConfig.from_dict(
        {"repos": {"billing": {"url": "https://git.example.invalid/b.git"}},
         "channels": {"G0GROUPDM1": ["billing"]}}
    )  # fmt: skip
    ingress = Ingress(store, config)

    # When a question arrives there flagged as an mpim
    ack = ingress.deliver(request(envelope(message(channel="G0GROUPDM1", channel_type="mpim"))))

    # Then it is refused as a DM
    assert (ack.outcome, ack.refusal) == ("refused", "dm")
    assert ingress.queued == []


def test_an_unconfigured_channel_is_refused(ingress: Ingress) -> None:
    # Given a mention in a channel the configuration does not list
    event = request(envelope(mention(channel="C0ELSEWHERE")))

    # When it is handled
    ack = ingress.deliver(event)

    # Then it is refused for the channel, once, and nothing is queued
    assert (ack.status, ack.outcome, ack.refusal) == (200, "refused", "channel")
    assert [reason for reason, _ in ingress.refusals] == ["channel"]
    assert ingress.refusals[0][1]["channel"] == "C0ELSEWHERE"
    assert ingress.queued == []


@pytest.mark.parametrize(
    ("ev", "reason"),
    [
        (message(channel="D0DIRECT1", channel_type="im"), "dm"),
        (mention(channel="C0ELSEWHERE"), "channel"),
    ],
    ids=["dm", "channel"],
)
def test_the_refusal_is_not_sent_again_for_slacks_retries(
    ingress: Ingress, ev: dict[str, Any], reason: str
) -> None:
    # Given a refused question
    first = ingress.deliver(request(envelope(ev)))
    assert (first.outcome, first.refusal) == ("refused", reason)

    # When Slack retries it, soon and much later
    soon = ingress.deliver(request(envelope(ev), at=T0 + 5, retry=1), now=T0 + 5)
    late = ingress.deliver(request(envelope(ev), at=T0 + 7200, retry=3), now=T0 + 7200)

    # Then the refusal was sent exactly once
    assert (soon.status, soon.outcome) == (200, "duplicate")
    assert (late.status, late.outcome) == (200, "duplicate")
    assert [r for r, _ in ingress.refusals] == [reason]
    assert ingress.queued == []


# -- 10, 12. Slack Connect ------------------------------------------------------------------------


def test_a_slack_connect_channel_is_refused_even_when_configured(ingress: Ingress) -> None:
    # Given a mention in the configured channel, which Slack says is shared with another org
    event = request(envelope(mention(), is_ext_shared_channel=True))

    # When it is handled
    ack = ingress.deliver(event)

    # Then it is refused as shared, once, and nothing is queued
    assert (ack.status, ack.outcome, ack.refusal) == (200, "refused", "shared")
    assert [r for r, _ in ingress.refusals] == ["shared"]
    assert ingress.queued == []


def test_a_shared_flag_on_the_event_alone_is_refused_too(ingress: Ingress) -> None:
    # Given a mention whose event (not its envelope) says the channel is shared
    event = request(envelope(mention(is_ext_shared_channel=True)))

    # When it is handled
    ack = ingress.deliver(event)

    # Then it is refused as shared and nothing is queued
    assert (ack.status, ack.outcome, ack.refusal) == (200, "refused", "shared")
    assert ingress.queued == []


def test_a_channel_that_becomes_shared_refuses_the_next_question(ingress: Ingress) -> None:
    # Given a question in the configured channel was answered while it was internal
    first = ingress.deliver(request(envelope(mention(), "Ev0FIRST")))
    assert first.outcome == "queued"

    # When the channel is then shared and another question arrives there
    second_ev = mention(ts="1799999999.000900", event_ts="1799999999.000900")
    second = ingress.deliver(request(envelope(second_ev, "Ev0SECOND", is_ext_shared_channel=True)))

    # Then the second is refused: the earlier verdict is not reused
    assert (second.outcome, second.refusal) == ("refused", "shared")
    assert len(ingress.queued) == 1
    assert [r for r, _ in ingress.refusals] == ["shared"]


# -- 11. who is asking ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ev", "extra", "config"),
    [
        (mention(user_team="T0FOREIGN"), {}, CONFIG),
        (mention(team="T0FOREIGN"), {}, CONFIG),
        (mention(user_team="T0UNKNOWN", team=None), {}, CONFIG),
        (mention(team=None), {"team_id": None}, CONFIG),
        (mention(team="T0OTHERWS"), {"team_id": "T0OTHERWS"},
         BotConfig(repos=CONFIG.repos, channels=CONFIG.channels, team_id="T0001")),
    ],
    ids=["foreign-user_team", "foreign-team", "unknown-user_team", "no-team-anywhere",
         "other-workspace-asker"],
)  # fmt: skip
def test_an_asker_from_a_foreign_or_unknown_team_is_refused(
    store: StateStore, ev: dict[str, Any], extra: dict[str, Any], config: BotConfig
) -> None:
    # Given a mention in a configured channel whose asker's team is not ours (or not known)
    ingress = Ingress(store, config)
    event = request(envelope(ev, **extra))

    # When it is handled
    ack = ingress.deliver(event)

    # Then it is refused for the team, once, and nothing is queued
    assert (ack.status, ack.outcome, ack.refusal) == (200, "refused", "team")
    assert [r for r, _ in ingress.refusals] == ["team"]
    assert ingress.queued == []


def test_an_asker_from_the_configured_team_is_accepted(store: StateStore) -> None:
    # Given the configuration names the workspace, and the asker belongs to it
    config = BotConfig(repos=CONFIG.repos, channels=CONFIG.channels, team_id=TEAM)
    ingress = Ingress(store, config)

    # When they ask
    ack = ingress.deliver(request(envelope(mention(user_team=TEAM))))

    # Then the question is queued
    assert ack.outcome == "queued"
    assert ingress.refusals == []


def test_a_failure_after_the_claim_releases_it_so_the_retry_is_processed(ingress: Ingress) -> None:
    # Given an event whose envelope breaks job building (a malformed event_time)
    broken = envelope(mention(), event_time="not-a-time")
    # When it is delivered
    ack = ingress.deliver(request(broken))
    # Then Slack gets a 500 and nothing is queued
    assert ack.status == 500 and ingress.queued == []
    # And Slack's retry of the same event (fixed upstream) is queued, not dropped as a duplicate
    assert ingress.deliver(request(envelope(mention()), retry=1)).status == 200
    assert len(ingress.queued) == 1


# -- 👍/👎 buttons ----------------------------------------------------------------------------------

VOTES = {"codeask_feedback_up": "up", "codeask_feedback_down": "down"}


def press(store: StateStore, payload: dict[str, Any] | str) -> Ack:
    """A signed interactivity request carrying `payload` (form-encoded), as Slack posts it."""
    from urllib.parse import urlencode

    raw = payload if isinstance(payload, str) else json.dumps(payload)
    event = request(urlencode({"payload": raw}))
    return handle_interaction(
        event, signing_secret=SECRET, config=CONFIG, store=store, actions=VOTES, now=lambda: T0
    )


def button(
    *, user: str | None = HUMAN, value: str | None = f"{CHANNEL}:{QUESTION_TS}"
) -> dict[str, Any]:
    action = {"action_id": "codeask_feedback_up", "type": "button", "value": value}
    return {
        "type": "block_actions",
        "team": {"id": TEAM},
        "user": {"id": user} if user else {},
        "actions": [{k: v for k, v in action.items() if v is not None}],
    }


def test_a_button_payload_that_is_not_json_is_a_400_saying_so(store: StateStore) -> None:
    ack = press(store, "{not json")
    assert (ack.status, ack.outcome, ack.body) == (400, "ignored", "payload is not JSON")


def test_a_vote_without_a_user_is_refused(store: StateStore) -> None:
    ack = press(store, button(user=None))
    assert (ack.status, ack.outcome, ack.refusal) == (200, "refused", "team")


def test_a_vote_on_an_answer_never_recorded_is_ignored_as_unknown(store: StateStore) -> None:
    ack = press(store, button())
    assert (ack.status, ack.outcome, ack.ignored) == (200, "ignored", "unknown-answer")
    assert store.votes() == []


def test_a_button_without_a_value_is_not_a_vote(store: StateStore) -> None:
    ack = press(store, button(value=None))
    assert (ack.status, ack.outcome, ack.ignored) == (200, "ignored", "not-a-vote")
    assert store.votes() == []


def test_one_message_under_a_second_event_id_is_acknowledged_as_a_duplicate(
    ingress: Ingress,
) -> None:
    # Given a question queued from its app_mention
    assert ingress.deliver(request(envelope(mention(), "Ev0FIRST"))).outcome == "queued"
    # When the same message arrives later under another event id
    ack = ingress.deliver(request(envelope(mention(), "Ev0SECOND")))
    # Then Slack gets a plain 200 duplicate and nothing more is queued
    assert (ack.status, ack.outcome) == (200, "duplicate")
    assert len(ingress.queued) == 1


def test_a_vote_on_a_recorded_answer_is_acknowledged_as_that_vote_and_stored(
    store: StateStore,
) -> None:
    # Given an answer recorded the way the worker records one
    key = f"{CHANNEL}:{QUESTION_TS}"
    assert store.start_answer(key, "worker-1", stale_after_s=60) is not None
    info = {"question": QUESTION, "answer": "In `billing/worker.py:6`.", "repos": "billing"}
    store.finish_answer(key, ["1799999991.000200"], info)
    # When someone presses 👎 and then 👍 on it
    down = press(store, {**button(), "actions": [{"action_id": "codeask_feedback_down",
                                                  "type": "button", "value": key}]})  # fmt: skip
    up = press(store, button())
    # Then each ack says which vote it was (the log and the FeedbackVotes metric read it)
    assert (down.status, down.outcome, down.vote) == (200, "vote", "down")
    assert (up.status, up.outcome, up.vote) == (200, "vote", "up")
    # and the one person's vote is stored once, as the last one, about that answer
    votes = store.votes()
    assert [(v["user"], v["vote"], v["key"]) for v in votes] == [(HUMAN, "up", key)]
