"""Behaviour of the fake Slack Web API, driven through the real slack_sdk WebClient."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler
from slack_sdk.models.blocks import DividerBlock, SectionBlock

from fakes.slack_api import MAX_BLOCKS, MAX_TEXT_OBJECT_CHARS, Call, Channel, FakeSlack

CHANNEL = "C0GENERAL"


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    with FakeSlack() as running:
        running.channels[CHANNEL] = Channel(id=CHANNEL)
        yield running


@pytest.fixture
def client(fake: FakeSlack) -> WebClient:
    # No retry handlers: each test that wants retries attaches them itself.
    return WebClient(token="xoxb-test", base_url=fake.base_url, timeout=5, retry_handlers=[])


def error_of(excinfo: pytest.ExceptionInfo[SlackApiError]) -> str:
    return str(excinfo.value.response["error"])


# -- messages ----------------------------------------------------------------------------------


def test_post_then_update_is_read_back_as_the_current_text(
    fake: FakeSlack, client: WebClient
) -> None:
    # Given a message the bot posted
    posted = client.chat_postMessage(
        channel=CHANNEL, text="thinking…", unfurl_links=False, unfurl_media=False
    )

    # When the bot edits it twice
    client.chat_update(channel=CHANNEL, ts=posted["ts"], text="draft")
    updated = client.chat_update(channel=CHANNEL, ts=posted["ts"], text="final answer")

    # Then messages() shows one message with the latest text, and every edit is on record
    assert posted["channel"] == CHANNEL
    assert posted["message"]["text"] == "thinking…"
    assert posted["message"]["bot_id"] == "B0BOT"
    assert updated["ts"] == posted["ts"] and updated["text"] == "final answer"
    assert fake.messages(CHANNEL) == [
        {
            "ts": posted["ts"],
            "channel": CHANNEL,
            "thread_ts": None,
            "text": "final answer",
            "blocks": None,
            "user": "U0BOT",
            "bot_id": "B0BOT",
            "unfurl_links": False,
            "unfurl_media": False,
        }
    ]
    assert len(fake.calls_to("chat.update")) == 2
    assert [v["text"] for v in fake.versions(CHANNEL, posted["ts"])] == [
        "thinking…",
        "draft",
        "final answer",
    ]


def test_ts_values_are_unique_and_increasing(fake: FakeSlack, client: WebClient) -> None:
    # Given/When three posts in a row
    stamps = [client.chat_postMessage(channel=CHANNEL, text=str(i))["ts"] for i in range(3)]

    # Then each ts looks like Slack's and sorts after the previous one
    assert len(set(stamps)) == 3
    assert stamps == sorted(stamps, key=lambda ts: tuple(map(int, ts.split("."))))
    assert all(len(ts.split(".")[1]) == 6 for ts in stamps)


def test_update_of_unknown_ts_is_message_not_found(client: WebClient) -> None:
    with pytest.raises(SlackApiError) as excinfo:
        client.chat_update(channel=CHANNEL, ts="1600000000.000100", text="x")
    assert error_of(excinfo) == "message_not_found"


def test_update_without_blocks_keeps_the_old_blocks(fake: FakeSlack, client: WebClient) -> None:
    # Given a message with blocks
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "*old*"}}]
    ts = client.chat_postMessage(channel=CHANNEL, text="old", blocks=blocks)["ts"]

    # When only the text is updated, and then the blocks are cleared with an empty array
    client.chat_update(channel=CHANNEL, ts=ts, text="new")
    kept = fake.messages(CHANNEL)[0]["blocks"]
    client.chat_update(channel=CHANNEL, ts=ts, text="new", blocks=[])

    # Then Slack's rule holds: omitted blocks are retained, [] removes them
    assert kept == blocks
    assert fake.messages(CHANNEL)[0]["blocks"] is None


def test_delete_removes_the_message(fake: FakeSlack, client: WebClient) -> None:
    ts = client.chat_postMessage(channel=CHANNEL, text="oops")["ts"]

    client.chat_delete(channel=CHANNEL, ts=ts)

    assert fake.messages(CHANNEL) == []


def test_bot_cannot_edit_a_human_message(fake: FakeSlack, client: WebClient) -> None:
    ts = fake.add_thread_message(CHANNEL, None, "mine")

    with pytest.raises(SlackApiError) as excinfo:
        client.chat_update(channel=CHANNEL, ts=ts, text="hijacked")

    assert error_of(excinfo) == "cant_update_message"


# -- threads -----------------------------------------------------------------------------------


def test_thread_replies_come_back_parent_first(fake: FakeSlack, client: WebClient) -> None:
    # Given a human question whose ts is the one the event carried, plus a follow-up
    question_ts = "1700000000.000500"
    assert fake.add_thread_message(CHANNEL, question_ts, "where is billing?") == question_ts
    follow_up = fake.add_thread_message(CHANNEL, question_ts, "the retry part")

    # When the bot answers in the thread and reads the thread back
    answer = client.chat_postMessage(
        channel=CHANNEL, thread_ts=question_ts, text="billing/retry.py:12"
    )
    replies = client.conversations_replies(channel=CHANNEL, ts=question_ts, limit=50)

    # Then the parent comes first, then replies oldest first, each with Slack's thread fields
    texts = [m["text"] for m in replies["messages"]]
    assert texts == ["where is billing?", "the retry part", "billing/retry.py:12"]
    assert replies["has_more"] is False
    parent, *rest = replies["messages"]
    assert parent["reply_count"] == 2 and parent["thread_ts"] == question_ts
    assert all(m["thread_ts"] == question_ts for m in rest)
    assert rest[1]["bot_id"] == "B0BOT" and "bot_id" not in rest[0]
    assert follow_up < answer["ts"]
    assert [m["text"] for m in fake.messages(CHANNEL, thread_ts=question_ts)] == [
        "the retry part",
        "billing/retry.py:12",
    ]


def test_replies_of_unknown_thread_is_thread_not_found(client: WebClient) -> None:
    with pytest.raises(SlackApiError) as excinfo:
        client.conversations_replies(channel=CHANNEL, ts="1600000000.000100")
    assert error_of(excinfo) == "thread_not_found"


def test_replies_paginate_with_a_cursor(fake: FakeSlack, client: WebClient) -> None:
    root = fake.add_thread_message(CHANNEL, None, "q")
    for i in range(4):
        fake.add_thread_message(CHANNEL, root, f"r{i}")

    # The SDK's iterator reuses one response object, so read each page while it is current.
    pages = [
        [m["text"] for m in page["messages"]]
        for page in client.conversations_replies(channel=CHANNEL, ts=root, limit=2)
    ]

    assert pages == [
        ["q", "r0"],
        ["r1", "r2"],
        ["r3"],
    ]


# -- ephemeral, blocks, reactions, status ------------------------------------------------------


def test_ephemeral_is_recorded_but_not_a_channel_message(
    fake: FakeSlack, client: WebClient
) -> None:
    sent = client.chat_postEphemeral(channel=CHANNEL, user="U0HUMAN", text="only you see this")

    assert sent["message_ts"]
    assert fake.messages(CHANNEL) == []
    assert fake.ephemerals == [
        {
            "message_ts": sent["message_ts"],
            "channel": CHANNEL,
            "user": "U0HUMAN",
            "thread_ts": None,
            "text": "only you see this",
            "blocks": None,
        }
    ]


def test_blocks_round_trip_from_sdk_models_and_from_form_strings(
    fake: FakeSlack, client: WebClient
) -> None:
    # Given blocks sent as SDK model objects (JSON body) and as a JSON string (form body)
    expected = [
        {"type": "section", "text": {"type": "mrkdwn", "text": "*hi*"}},
        {"type": "divider"},
    ]
    via_json = client.chat_postMessage(
        channel=CHANNEL,
        text="hi",
        blocks=[SectionBlock(text={"type": "mrkdwn", "text": "*hi*"}), DividerBlock()],
    )
    via_form = client.api_call(
        "chat.postMessage",
        params={"channel": CHANNEL, "text": "hi", "blocks": json.dumps(expected)},
    )

    # Then both store and record the same list of block objects
    stored = {m["ts"]: m["blocks"] for m in fake.messages(CHANNEL)}
    assert stored[via_json["ts"]] == expected
    assert stored[via_form["ts"]] == expected
    assert via_json["message"]["blocks"] == expected
    assert [c.args["blocks"] for c in fake.calls_to("chat.postMessage")] == [expected, expected]


@pytest.mark.parametrize(
    "blocks",
    [
        [{"text": "no type"}],
        [{"type": "divider"}] * (MAX_BLOCKS + 1),
        "not json",
        [{"type": "section", "text": {"type": "mrkdwn", "text": "x" * (MAX_TEXT_OBJECT_CHARS + 1)}}],
        [{"type": "context", "elements": [{"type": "mrkdwn", "text": "x" * 3_001}]}],
        [{"type": "context", "elements": [{"type": "mrkdwn", "text": "x"}] * 11}],
        [{"type": "context", "elements": []}],
    ],
    ids=["missing-type", "too-many", "not-json", "long-section", "long-context", "wide-context",
         "empty-context"],
)  # fmt: skip
def test_malformed_blocks_are_invalid_blocks(client: WebClient, blocks: object) -> None:
    params = {
        "channel": CHANNEL,
        "text": "x",
        "blocks": blocks if isinstance(blocks, str) else json.dumps(blocks),
    }
    with pytest.raises(SlackApiError) as excinfo:
        client.api_call("chat.postMessage", params=params)
    assert error_of(excinfo) == "invalid_blocks"


def test_texts_at_the_limits_are_accepted(client: WebClient) -> None:
    full = "x" * MAX_TEXT_OBJECT_CHARS
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": full}},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": full}] * 10},
        {"type": "markdown", "text": "y" * 6_000},
        {"type": "markdown", "text": "y" * 6_000},
    ]
    assert client.chat_postMessage(channel=CHANNEL, text="x", blocks=blocks)["ok"]


def test_markdown_blocks_over_twelve_thousand_chars_together_are_too_long(
    client: WebClient,
) -> None:
    blocks = [{"type": "markdown", "text": "y" * 6_000}, {"type": "markdown", "text": "y" * 6_001}]
    with pytest.raises(SlackApiError) as excinfo:
        client.chat_postMessage(channel=CHANNEL, text="x", blocks=blocks)
    assert error_of(excinfo) == "msg_blocks_too_long"


def test_text_over_forty_thousand_chars_is_msg_too_long(client: WebClient) -> None:
    with pytest.raises(SlackApiError) as excinfo:
        client.chat_postMessage(channel=CHANNEL, text="x" * 40_001)
    assert error_of(excinfo) == "msg_too_long"


def test_reaction_on_a_seeded_message(fake: FakeSlack, client: WebClient) -> None:
    ts = fake.add_thread_message(CHANNEL, None, "@codeask where is X?")

    client.reactions_add(channel=CHANNEL, timestamp=ts, name="eyes")
    with pytest.raises(SlackApiError) as excinfo:
        client.reactions_add(channel=CHANNEL, timestamp=ts, name="eyes")

    assert fake.reactions == [
        {"channel": CHANNEL, "timestamp": ts, "name": "eyes", "user": "U0BOT"}
    ]
    assert error_of(excinfo) == "already_reacted"


def test_set_status_is_recorded(fake: FakeSlack, client: WebClient) -> None:
    fake.channels["D0DM"] = Channel(id="D0DM", is_im=True)

    client.assistant_threads_setStatus(
        channel_id="D0DM", thread_ts="1700000000.000100", status="is searching the code…"
    )
    client.assistant_threads_setStatus(channel_id="D0DM", thread_ts="1700000000.000100", status="")

    assert [s["status"] for s in fake.statuses] == ["is searching the code…", ""]
    assert fake.calls_to("assistant.threads.setStatus")[0].args == {
        "channel_id": "D0DM",
        "thread_ts": "1700000000.000100",
        "status": "is searching the code…",
    }


# -- conversations.info ------------------------------------------------------------------------


def test_slack_connect_channel_reports_ext_shared(fake: FakeSlack, client: WebClient) -> None:
    fake.channels["C0SHARED"] = Channel(
        id="C0SHARED", name="acme-vendor", is_ext_shared=True, is_shared=True
    )

    info = client.conversations_info(channel="C0SHARED")["channel"]

    assert info["id"] == "C0SHARED"
    assert info["is_ext_shared"] is True and info["is_shared"] is True
    assert info["is_channel"] is True and info["is_im"] is False
    assert info["context_team_id"] == "T0001"


def test_dm_info_is_an_im(fake: FakeSlack, client: WebClient) -> None:
    fake.channels["D0DM"] = Channel(id="D0DM", is_im=True)

    info = client.conversations_info(channel="D0DM")["channel"]

    assert info["is_im"] is True and "name" not in info


# -- errors ------------------------------------------------------------------------------------


def test_unknown_channel_is_channel_not_found(client: WebClient) -> None:
    for call in (
        lambda: client.chat_postMessage(channel="C0NOPE", text="hi"),
        lambda: client.conversations_info(channel="C0NOPE"),
    ):
        with pytest.raises(SlackApiError) as excinfo:
            call()
        assert error_of(excinfo) == "channel_not_found"


def test_channel_without_the_bot_is_not_in_channel(fake: FakeSlack, client: WebClient) -> None:
    fake.channels["C0OUT"] = Channel(id="C0OUT", name="random", is_member=False)

    with pytest.raises(SlackApiError) as excinfo:
        client.chat_postMessage(channel="C0OUT", text="hi")

    assert error_of(excinfo) == "not_in_channel"
    assert fake.messages("C0OUT") == []


def test_wrong_or_missing_token(fake: FakeSlack) -> None:
    wrong = WebClient(token="xoxb-wrong", base_url=fake.base_url, retry_handlers=[])
    missing = WebClient(base_url=fake.base_url, retry_handlers=[])

    with pytest.raises(SlackApiError) as wrong_info:
        wrong.chat_postMessage(channel=CHANNEL, text="hi")
    with pytest.raises(SlackApiError) as missing_info:
        missing.auth_test()

    assert error_of(wrong_info) == "invalid_auth"
    assert error_of(missing_info) == "not_authed"
    assert [c.token for c in fake.calls] == ["xoxb-wrong", None]
    assert fake.messages(CHANNEL) == []


def test_scripted_failure_then_success(fake: FakeSlack, client: WebClient) -> None:
    fake.fail("chat.postMessage", "fatal_error")

    with pytest.raises(SlackApiError) as excinfo:
        client.chat_postMessage(channel=CHANNEL, text="hi")
    client.chat_postMessage(channel=CHANNEL, text="hi")

    assert error_of(excinfo) == "fatal_error"
    assert excinfo.value.response.status_code == 200
    assert len(fake.messages(CHANNEL)) == 1


def test_unimplemented_method_is_unknown_method(client: WebClient) -> None:
    with pytest.raises(SlackApiError) as excinfo:
        client.api_call("users.lookupByEmail", params={"email": "a@example.invalid"})
    assert error_of(excinfo) == "unknown_method"


# -- rate limits -------------------------------------------------------------------------------


def test_rate_limit_is_waited_out_by_the_sdk_retry_handler(fake: FakeSlack) -> None:
    # Given one 429 with Retry-After: 1 and a client that retries 429s once
    fake.rate_limit("chat.postMessage", times=1, retry_after=1)
    client = WebClient(
        token="xoxb-test",
        base_url=fake.base_url,
        retry_handlers=[RateLimitErrorRetryHandler(max_retry_count=1)],
    )

    # When the bot posts
    posted = client.chat_postMessage(channel=CHANNEL, text="eventually")

    # Then two attempts reached Slack, the second at least Retry-After later, and one message exists
    first, second = fake.calls_to("chat.postMessage")
    assert (first.status, second.status) == (429, 200)
    assert second.at - first.at >= 1.0
    assert second.args == first.args
    assert [m["ts"] for m in fake.messages(CHANNEL)] == [posted["ts"]]


def test_rate_limit_without_retry_handler_raises_with_retry_after(
    fake: FakeSlack, client: WebClient
) -> None:
    fake.rate_limit("conversations.replies", retry_after=7)

    with pytest.raises(SlackApiError) as excinfo:
        client.conversations_replies(channel=CHANNEL, ts="1700000000.000100")

    response = excinfo.value.response
    assert response.status_code == 429
    assert response["error"] == "ratelimited"
    assert response.headers["Retry-After"] == "7"
    assert [c.status for c in fake.calls] == [429]


# -- auth.test and recording -------------------------------------------------------------------


def test_auth_test_reports_identity_and_scopes(fake: FakeSlack, client: WebClient) -> None:
    auth = client.auth_test()

    assert (auth["user_id"], auth["bot_id"], auth["team_id"]) == ("U0BOT", "B0BOT", "T0001")
    scopes = auth.headers["x-oauth-scopes"].split(",")
    assert "chat:write" in scopes and "reactions:write" in scopes


def test_custom_scopes_are_reported(fake: FakeSlack) -> None:
    with FakeSlack(scopes=("chat:write",)) as narrow:
        auth = WebClient(token="xoxb-test", base_url=narrow.base_url).auth_test()
    assert auth.headers["x-oauth-scopes"] == "chat:write"


def test_every_call_is_recorded_with_token_and_status(fake: FakeSlack, client: WebClient) -> None:
    client.conversations_info(channel=CHANNEL)

    (call,) = fake.calls
    assert isinstance(call, Call)
    assert (call.method, call.token, call.status) == ("conversations.info", "xoxb-test", 200)
    assert call.args == {"channel": CHANNEL}


# -- streaming ---------------------------------------------------------------------------------


def _thread(fake: FakeSlack) -> str:
    return fake.add_thread_message(CHANNEL, "1764430000.000100", "where is retry?")


def test_a_stream_through_the_sdks_helper_accumulates_and_every_append_is_on_record(
    fake: FakeSlack, client: WebClient
) -> None:
    # Given a question in a thread
    thread = _thread(fake)
    # When the SDK's ChatStream streams three pieces (flushing each) and stops with blocks
    stream = client.chat_stream(
        channel=CHANNEL, thread_ts=thread, recipient_user_id="U0HUMAN",
        recipient_team_id="T0001", buffer_size=1,
    )  # fmt: skip
    for piece in ("Retries ", "live in ", "`worker.py`"):
        stream.append(markdown_text=piece)
    assert stream.ts is not None and fake.is_streaming(CHANNEL, stream.ts)
    stream.stop(blocks=[{"type": "context", "elements": [{"type": "mrkdwn", "text": "footer"}]}])

    # Then the thread holds one reply with the whole text and the blocks at its bottom
    [reply] = fake.messages(CHANNEL, thread)
    assert reply["ts"] == stream.ts and reply["text"] == "Retries live in `worker.py`"
    assert reply["blocks"] == [
        {"type": "context", "elements": [{"type": "mrkdwn", "text": "footer"}]}
    ]
    assert not fake.is_streaming(CHANNEL, stream.ts)
    # and every state it went through is on record, as a reader could have seen it
    assert [v["text"] for v in fake.versions(CHANNEL, stream.ts)] == [
        "Retries ",
        "Retries live in ",
        "Retries live in `worker.py`",
        "Retries live in `worker.py`",
    ]
    assert [[m["text"] for m in state] for state in fake.thread_states(CHANNEL, thread)][:2] == [
        ["Retries "],
        ["Retries live in "],
    ]
    methods = [c.method for c in fake.calls]
    assert methods == ["chat.startStream", "chat.appendStream", "chat.appendStream",
                       "chat.stopStream"]  # fmt: skip


def test_start_stream_in_a_channel_needs_the_recipient(fake: FakeSlack, client: WebClient) -> None:
    thread = _thread(fake)
    with pytest.raises(SlackApiError) as no_user:
        client.chat_startStream(channel=CHANNEL, thread_ts=thread, markdown_text="hi")
    with pytest.raises(SlackApiError) as no_team:
        client.chat_startStream(
            channel=CHANNEL, thread_ts=thread, markdown_text="hi", recipient_user_id="U0HUMAN"
        )
    assert error_of(no_user) == "missing_recipient_user_id"
    assert error_of(no_team) == "missing_recipient_team_id"
    # but a DM needs no recipient
    fake.channels["D0DM"] = Channel(id="D0DM", is_im=True)
    dm_thread = fake.add_thread_message("D0DM", "1764430000.000200", "hi")
    assert client.chat_startStream(channel="D0DM", thread_ts=dm_thread, markdown_text="hi")["ok"]
    assert fake.calls[-1].error is None and fake.calls[0].error == "missing_recipient_user_id"


def test_stream_calls_check_the_message_and_its_state(fake: FakeSlack, client: WebClient) -> None:
    thread = _thread(fake)
    started = client.chat_startStream(
        channel=CHANNEL, thread_ts=thread, recipient_user_id="U0HUMAN", recipient_team_id="T0001"
    )
    ts = started["ts"]
    # an append needs text; a streaming message cannot be edited until it is stopped
    with pytest.raises(SlackApiError) as empty:
        client.chat_appendStream(channel=CHANNEL, ts=ts, markdown_text="")
    with pytest.raises(SlackApiError) as edit:
        client.chat_update(channel=CHANNEL, ts=ts, text="edited")
    with pytest.raises(SlackApiError) as too_long:
        client.chat_appendStream(channel=CHANNEL, ts=ts, markdown_text="x" * 12_001)
    client.chat_stopStream(channel=CHANNEL, ts=ts, markdown_text="done")
    # once stopped it takes no more appends, and is a message like any other
    with pytest.raises(SlackApiError) as stopped:
        client.chat_appendStream(channel=CHANNEL, ts=ts, markdown_text="more")
    client.chat_update(channel=CHANNEL, ts=ts, text="edited")
    human = fake.add_thread_message(CHANNEL, thread, "a human reply")
    with pytest.raises(SlackApiError) as not_ours:
        client.chat_appendStream(channel=CHANNEL, ts=human, markdown_text="x")
    with pytest.raises(SlackApiError) as unknown:
        client.chat_stopStream(channel=CHANNEL, ts="1.000001")
    assert [error_of(e) for e in (empty, edit, too_long, stopped, not_ours, unknown)] == [
        "no_text",
        "cant_update_message",
        "msg_too_long",
        "message_not_in_streaming_state",
        "message_not_owned_by_app",
        "message_not_found",
    ]
    assert fake.messages(CHANNEL, thread)[0]["text"] == "edited"


def test_a_budget_answers_429_with_retry_after_once_the_burst_is_spent(
    fake: FakeSlack, client: WebClient
) -> None:
    # Given chat.update held to 6 a minute with a burst of 2
    fake.limit("chat.update", per_minute=6, burst=2)
    posted = client.chat_postMessage(channel=CHANNEL, text="x")
    # When it is called three times at once
    client.chat_update(channel=CHANNEL, ts=posted["ts"], text="1")
    client.chat_update(channel=CHANNEL, ts=posted["ts"], text="2")
    with pytest.raises(SlackApiError) as limited:
        client.chat_update(channel=CHANNEL, ts=posted["ts"], text="3")
    # Then the third is a 429 saying when one would pass (one call per 10 s)
    assert limited.value.response.status_code == 429
    assert 1 <= int(limited.value.response.headers["Retry-After"]) <= 10
    assert [c.error for c in fake.calls_to("chat.update")] == [None, None, "ratelimited"]
    # and other methods are not held to it
    client.chat_postMessage(channel=CHANNEL, text="y")
