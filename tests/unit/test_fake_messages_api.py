"""The fake Messages API as the real anthropic SDK sees it: replies, errors, validation, caching, Bedrock."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anthropic
import pytest
from anthropic.types import Message, TextBlock, ToolUseBlock

from fakes.messages_api import (
    Cut,
    Fail,
    FakeMessagesAPI,
    Reply,
    estimate_input_tokens,
    estimate_tokens,
    text,
    tokens_of,
    tool_use,
)

MODEL = "claude-sonnet-5-5"
BEDROCK_MODEL = "anthropic.claude-sonnet-5-5-v1:0"
TOOLS: list[Any] = [
    {
        "name": "search_code",
        "description": "Search the repository.",
        "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}},
    },
    {
        "name": "read_file",
        "description": "Read a file.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
]
SYSTEM_TEXT = "You answer questions about a codebase with path:line citations. " * 8
CACHED_SYSTEM: list[dict[str, Any]] = [
    {"type": "text", "text": SYSTEM_TEXT, "cache_control": {"type": "ephemeral"}}
]
EPHEMERAL = {"type": "ephemeral"}


@pytest.fixture
def fake() -> Iterator[FakeMessagesAPI]:
    with FakeMessagesAPI() as server:
        yield server


@pytest.fixture
def client(fake: FakeMessagesAPI) -> Iterator[anthropic.Anthropic]:
    sdk = anthropic.Anthropic(api_key="test", base_url=fake.base_url, max_retries=0)
    yield sdk
    sdk.close()


def ask(client: anthropic.Anthropic, content: str = "Where is X?", **kwargs: Any) -> Message:
    return client.messages.create(
        model=MODEL,
        max_tokens=64,
        messages=kwargs.pop("messages", [{"role": "user", "content": content}]),
        **kwargs,
    )


def usage_sum(message: Message) -> int:
    u = message.usage
    return u.input_tokens + (u.cache_read_input_tokens or 0) + (u.cache_creation_input_tokens or 0)


# -- replies ------------------------------------------------------------------------------------


def test_text_reply_is_parsed_into_sdk_types_with_usage(
    fake: FakeMessagesAPI, client: anthropic.Anthropic
) -> None:
    # Given a script with one text reply
    reply = Reply([text("It lives in codeask/tools.py:12.")])
    fake.script = [reply]

    # When the SDK asks
    message = ask(client)

    # Then the SDK parses the wire JSON into a Message with every usage field filled in
    assert isinstance(message, Message)
    assert message.id.startswith("msg_")
    assert message.model == MODEL
    assert message.role == "assistant"
    assert message.stop_reason == "end_turn"
    assert message.stop_sequence is None
    assert isinstance(message.content[0], TextBlock)
    assert message.content[0].text == "It lives in codeask/tools.py:12."
    body = fake.requests[0].body
    assert message.usage.input_tokens == estimate_input_tokens(body) > 0
    assert message.usage.output_tokens == estimate_tokens(reply.content)
    assert message.usage.cache_creation_input_tokens == 0
    assert message.usage.cache_read_input_tokens == 0
    assert message._request_id is not None and message._request_id.startswith("req_")


def test_tool_use_reply_round_trips_input_and_stops_for_tool_use(
    fake: FakeMessagesAPI, client: anthropic.Anthropic
) -> None:
    # Given a reply that calls a tool with nested input
    call_input = {"query": "def verify", "filters": {"paths": ["layers/", "tests/"], "max": 3}}
    fake.script = [
        Reply([text("Searching."), tool_use("search_code", call_input, id="toolu_fixed")])
    ]

    # When the SDK asks with the tool offered
    message = ask(client, tools=TOOLS)

    # Then the stop reason defaults to tool_use and the block parses with its input intact
    assert message.stop_reason == "tool_use"
    block = message.content[1]
    assert isinstance(block, ToolUseBlock)
    assert (block.id, block.name, block.input) == ("toolu_fixed", "search_code", call_input)


def test_tool_use_ids_are_generated_unique() -> None:
    # Given / When two tool_use blocks built without ids
    first, second = tool_use("read_file", {}), tool_use("read_file", {})

    # Then each gets its own toolu_ id
    assert first["id"].startswith("toolu_")
    assert first["id"] != second["id"]


def test_explicit_stop_reason_and_output_tokens_are_sent_as_given(
    fake: FakeMessagesAPI, client: anthropic.Anthropic
) -> None:
    # Given a reply truncated by max_tokens
    fake.script = [Reply([text("partial")], stop_reason="max_tokens", output_tokens=64)]

    # When the SDK asks
    message = ask(client)

    # Then the scripted values win over the defaults
    assert message.stop_reason == "max_tokens"
    assert message.usage.output_tokens == 64


# -- scripted HTTP errors -----------------------------------------------------------------------


def test_429_raises_rate_limit_error_with_retry_after(
    fake: FakeMessagesAPI, client: anthropic.Anthropic
) -> None:
    # Given a rate limit with a retry-after hint
    fake.script = [Fail(429, message="slow down", retry_after=7)]

    # When the SDK asks
    with pytest.raises(anthropic.RateLimitError) as caught:
        ask(client)

    # Then the exception carries the status, the error body and the header
    err = caught.value
    assert err.status_code == 429
    assert err.response.headers["retry-after"] == "7"
    assert err.type == "rate_limit_error"
    assert err.api_message == "slow down"
    assert err.request_id is not None and err.request_id.startswith("req_")
    assert fake.requests[0].status == 429


def test_529_raises_overloaded_error(fake: FakeMessagesAPI, client: anthropic.Anthropic) -> None:
    # Given the API is overloaded
    fake.script = [Fail(529)]

    # When the SDK asks
    with pytest.raises(anthropic.OverloadedError) as caught:
        ask(client)

    # Then 2.14 raises OverloadedError, which is also an InternalServerError
    assert isinstance(caught.value, anthropic.InternalServerError)
    assert caught.value.status_code == 529
    assert caught.value.type == "overloaded_error"


@pytest.mark.parametrize(
    ("status", "exc_type", "error_type"),
    [
        (500, anthropic.InternalServerError, "api_error"),
        (401, anthropic.AuthenticationError, "authentication_error"),
        (403, anthropic.PermissionDeniedError, "permission_error"),
        (400, anthropic.BadRequestError, "invalid_request_error"),
    ],
)
def test_status_maps_to_sdk_exception_and_default_error_type(
    fake: FakeMessagesAPI,
    client: anthropic.Anthropic,
    status: int,
    exc_type: type[anthropic.APIStatusError],
    error_type: str,
) -> None:
    # Given a scripted failure with no explicit error type
    fake.script = [Fail(status, message=f"scripted {status}")]

    # When the SDK asks
    with pytest.raises(exc_type) as caught:
        ask(client)

    # Then the error body has the real API's shape
    assert caught.value.status_code == status
    assert caught.value.body == {
        "type": "error",
        "error": {"type": error_type, "message": f"scripted {status}"},
        "request_id": caught.value.request_id,
    }


def test_sdk_retries_honour_retry_after_then_succeed(fake: FakeMessagesAPI) -> None:
    # Given an overload followed by a reply, and a client that retries once
    fake.script = [Fail(529, retry_after=0.01), Reply([text("ok")])]
    sdk = anthropic.Anthropic(api_key="test", base_url=fake.base_url, max_retries=1)

    # When the SDK asks
    message = ask(sdk)

    # Then the retry got the reply, and both attempts were recorded
    assert message.content[0].type == "text"
    assert [r.status for r in fake.requests] == [529, 200]
    assert fake.requests[1].headers["x-stainless-retry-count"] == "1"
    sdk.close()


def test_running_out_of_script_is_a_500_naming_the_request(
    fake: FakeMessagesAPI, client: anthropic.Anthropic
) -> None:
    # Given a one-step script
    fake.script = [Reply([text("only one")])]
    ask(client)

    # When a second request arrives
    with pytest.raises(anthropic.InternalServerError) as caught:
        ask(client)

    # Then the message says which request found the script empty
    assert "script exhausted: request #2" in str(caught.value.api_message)


def test_unknown_path_is_a_404_in_the_error_shape(client: anthropic.Anthropic) -> None:
    # Given / When the SDK posts somewhere the fake does not serve
    with pytest.raises(anthropic.NotFoundError) as caught:
        client.post("/v1/complete", body={"prompt": "x"}, cast_to=object)

    # Then it is a not_found_error
    assert caught.value.type == "not_found_error"
    assert "/v1/complete" in str(caught.value.api_message)


# -- request validation -------------------------------------------------------------------------

ASSISTANT_CALLS_TWO = {
    "role": "assistant",
    "content": [
        tool_use("search_code", {"query": "a"}, id="toolu_a"),
        tool_use("read_file", {"path": "b"}, id="toolu_b"),
    ],
}


def tool_result(tool_use_id: str, content: str = "result") -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}


def user(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


VALID: dict[str, Any] = {
    "model": MODEL,
    "max_tokens": 64,
    "messages": [{"role": "user", "content": "hi"}],
}

INVALID_BODIES: dict[str, tuple[dict[str, Any], str]] = {
    "missing model": ({k: v for k, v in VALID.items() if k != "model"}, "model: Field required"),
    "missing max_tokens": (
        {k: v for k, v in VALID.items() if k != "max_tokens"},
        "max_tokens: Field required",
    ),
    "missing messages": (
        {k: v for k, v in VALID.items() if k != "messages"},
        "messages: Field required",
    ),
    "no messages": ({**VALID, "messages": []}, "at least one message is required"),
    "first message from assistant": (
        {**VALID, "messages": [{"role": "assistant", "content": "hi"}]},
        'first message must use the "user" role',
    ),
    "two user messages in a row": (
        {
            **VALID,
            "messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
        },
        'roles must alternate between "user" and "assistant", but messages.0 and messages.1 are both "user"',
    ),
    "a tool_use left unanswered": (
        {
            **VALID,
            "tools": TOOLS,
            "messages": [VALID["messages"][0], ASSISTANT_CALLS_TWO, user(tool_result("toolu_a"))],
        },
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_b",
    ),
    "a tool_result nobody asked for": (
        {
            **VALID,
            "tools": TOOLS,
            "messages": [
                VALID["messages"][0],
                ASSISTANT_CALLS_TWO,
                user(tool_result("toolu_a"), tool_result("toolu_b"), tool_result("toolu_zzz")),
            ],
        },
        "messages.2.content.2: unexpected `tool_use_id` found in `tool_result` blocks: toolu_zzz",
    ),
    "text before the tool results": (
        {
            **VALID,
            "tools": TOOLS,
            "messages": [
                VALID["messages"][0],
                ASSISTANT_CALLS_TWO,
                user(text("here you go"), tool_result("toolu_a"), tool_result("toolu_b")),
            ],
        },
        "`tool_result` blocks must come before any other content",
    ),
    "five cache_control blocks": (
        {
            **VALID,
            "tools": [{**t, "cache_control": EPHEMERAL} for t in TOOLS],
            "system": CACHED_SYSTEM,
            "messages": [
                user(
                    {"type": "text", "text": "a", "cache_control": EPHEMERAL},
                    {"type": "text", "text": "b", "cache_control": EPHEMERAL},
                )
            ],
        },
        "A maximum of 4 blocks with cache_control may be provided. Found 5.",
    ),
    "history calls a tool that is not offered": (
        {
            **VALID,
            "tools": TOOLS[:1],
            "messages": [
                VALID["messages"][0],
                {"role": "assistant", "content": [tool_use("read_file", {}, id="toolu_r")]},
                user(tool_result("toolu_r")),
            ],
        },
        "messages.1.content.0: tool_use block calls tool 'read_file', which is not among the offered tools (search_code)",
    ),
    "history has tool_use but no tools are offered": (
        {
            **VALID,
            "messages": [
                VALID["messages"][0],
                {"role": "assistant", "content": [tool_use("read_file", {}, id="toolu_r")]},
                user(tool_result("toolu_r")),
            ],
        },
        "must define tools",
    ),
    "empty text block": (
        {**VALID, "messages": [user(text(""))]},
        "text content blocks must be non-empty",
    ),
    "stream not a boolean": ({**VALID, "stream": "yes"}, "stream: Input should be a valid boolean"),
}


@pytest.mark.parametrize("case", list(INVALID_BODIES))
def test_invalid_request_is_a_400_with_a_precise_message(
    fake: FakeMessagesAPI, client: anthropic.Anthropic, case: str
) -> None:
    # Given a body the real API would reject
    body, expected = INVALID_BODIES[case]

    # When the SDK posts it as-is (the typed create() would refuse some of them client-side)
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.post("/v1/messages", body=body, cast_to=Message)

    # Then it is an invalid_request_error saying exactly what is wrong
    assert caught.value.type == "invalid_request_error"
    assert expected in str(caught.value.api_message)
    assert fake.requests[-1].status == 400


def _bedrock(fake: FakeMessagesAPI) -> anthropic.AnthropicBedrock:
    return anthropic.AnthropicBedrock(
        aws_access_key="x",
        aws_secret_key="y",
        aws_region="us-east-1",
        base_url=fake.base_url,
        max_retries=0,
    )


ANSWER_TEXT = "Retries live in `billing/worker.py:6`; the backoff is 2^attempt."


def test_a_streamed_reply_sends_every_event_in_order_and_adds_up_to_the_message(
    fake: FakeMessagesAPI, client: anthropic.Anthropic
) -> None:
    # Given a reply with text and a tool call
    fake.script = [Reply([text(ANSWER_TEXT), tool_use("search_code", {"query": "retry_job"})])]

    # When the SDK streams it
    deltas: list[str] = []
    with client.messages.stream(
        model=MODEL, max_tokens=256, tools=TOOLS, messages=[{"role": "user", "content": "Where?"}]
    ) as stream:
        for event in stream:
            if event.type == "text":
                deltas.append(event.text)
        final = stream.get_final_message()

    # Then the text came one token per delta and adds up to the reply, and the tool input
    # (sent as input_json_delta pieces) parses back whole
    assert deltas == tokens_of(ANSWER_TEXT) and "".join(deltas) == ANSWER_TEXT
    assert final.content[0].type == "text" and final.content[0].text == ANSWER_TEXT
    assert final.content[1].type == "tool_use" and final.content[1].input == {"query": "retry_job"}
    assert final.stop_reason == "tool_use"
    # and the events came in the wire order, a ping early, usage like a whole reply's
    sent = [kind for _, kind in fake.requests[0].events]
    assert sent[:3] == ["message_start", "content_block_start", "ping"]
    assert sent[-2:] == ["message_delta", "message_stop"]
    assert sent.count("content_block_start") == sent.count("content_block_stop") == 2
    assert fake.requests[0].streamed and fake.requests[0].body["stream"] is True
    response = fake.requests[0].response
    assert response is not None
    assert final.usage.output_tokens == response["usage"]["output_tokens"]
    assert final.usage.input_tokens == estimate_input_tokens(fake.requests[0].body)


def test_an_error_mid_stream_arrives_after_the_text_already_sent(
    fake: FakeMessagesAPI, client: anthropic.Anthropic
) -> None:
    # Given a reply that breaks after three tokens with an overloaded error
    fake.script = [Reply([text(ANSWER_TEXT)], cut=Cut(3))]

    # When the SDK streams it
    deltas: list[str] = []
    with pytest.raises(anthropic.APIStatusError) as caught:
        with client.messages.stream(
            model=MODEL, max_tokens=256, messages=[{"role": "user", "content": "Where?"}]
        ) as stream:
            for event in stream:
                if event.type == "text":
                    deltas.append(event.text)

    # Then three tokens came, then the error event (the HTTP status was already 200)
    assert deltas == tokens_of(ANSWER_TEXT)[:3]
    assert caught.value.status_code == 200
    assert caught.value.body == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
    }
    assert [kind for _, kind in fake.requests[0].events][-1] == "error"
    # and only what was generated is billed
    assert fake.usage_totals()["output_tokens"] == 3


def test_a_dropped_stream_is_a_broken_connection_not_a_reply(
    fake: FakeMessagesAPI, client: anthropic.Anthropic
) -> None:
    # Given a reply whose connection closes after two tokens
    fake.script = [Reply([text(ANSWER_TEXT)], cut=Cut(2, drop=True))]

    # When the SDK streams it, Then the read fails after those two tokens
    deltas: list[str] = []
    with pytest.raises(Exception) as caught:  # noqa: B017 - the transport's own error type
        with client.messages.stream(
            model=MODEL, max_tokens=256, messages=[{"role": "user", "content": "Where?"}]
        ) as stream:
            for event in stream:
                if event.type == "text":
                    deltas.append(event.text)
    assert deltas == tokens_of(ANSWER_TEXT)[:2]
    assert "incomplete" in str(caught.value) or "closed" in str(caught.value)


def test_a_cut_needs_a_streamed_request(fake: FakeMessagesAPI, client: anthropic.Anthropic) -> None:
    fake.script = [Reply([text("x")], cut=Cut(1))]
    with pytest.raises(anthropic.InternalServerError) as caught:
        ask(client)
    assert "a Cut needs a streamed request" in str(caught.value)


def test_errors_before_a_stream_starts_are_plain_http_errors(
    fake: FakeMessagesAPI, client: anthropic.Anthropic
) -> None:
    # Given an overloaded API
    fake.script = [Fail(529)]
    # When a stream is asked for, Then it fails as a plain HTTP error, no events sent
    with pytest.raises(anthropic.OverloadedError):
        with client.messages.stream(
            model=MODEL, max_tokens=256, messages=[{"role": "user", "content": "Where?"}]
        ) as stream:
            stream.until_done()
    assert fake.requests[0].events == []


def test_a_complete_tool_round_is_accepted(
    fake: FakeMessagesAPI, client: anthropic.Anthropic
) -> None:
    # Given history where every tool_use got its tool_result (in any order), then text
    fake.script = [Reply([text("done")])]
    messages = [
        {"role": "user", "content": "Where is X?"},
        ASSISTANT_CALLS_TWO,
        user(tool_result("toolu_b"), tool_result("toolu_a"), text("Anything else?")),
    ]

    # When the SDK sends it
    message = ask(client, messages=messages, tools=TOOLS)

    # Then the fake answers
    assert message.stop_reason == "end_turn"


def test_rejected_requests_do_not_consume_script_steps(
    fake: FakeMessagesAPI, client: anthropic.Anthropic
) -> None:
    # Given a one-step script
    fake.script = [Reply([text("first step")])]

    # When an invalid request comes before a valid one
    with pytest.raises(anthropic.BadRequestError):
        ask(client, messages=[{"role": "assistant", "content": "hi"}])
    message = ask(client)

    # Then the valid request still gets the first step
    assert message.content[0].type == "text" and message.content[0].text == "first step"
    assert [r.status for r in fake.requests] == [400, 200]


# -- prompt caching -----------------------------------------------------------------------------


def test_second_request_reads_the_shared_tools_and_system_prefix(
    fake: FakeMessagesAPI, client: anthropic.Anthropic
) -> None:
    # Given two questions sharing tools and a system prompt marked for caching
    fake.script = [Reply([text("one")]), Reply([text("two")])]
    prefix = {"tools": TOOLS, "system": SYSTEM_TEXT}
    prefix_tokens = estimate_input_tokens({**prefix, "messages": []})

    # When both are asked
    first = ask(client, "First question?", tools=TOOLS, system=CACHED_SYSTEM)
    second = ask(client, "Second, longer question?", tools=TOOLS, system=CACHED_SYSTEM)

    # Then the first writes the prefix, the second reads it, and the parts add up to the prompt
    assert first.usage.cache_creation_input_tokens == prefix_tokens
    assert first.usage.cache_read_input_tokens == 0
    assert second.usage.cache_read_input_tokens == prefix_tokens
    assert second.usage.cache_creation_input_tokens == 0
    for message, recorded in zip((first, second), fake.requests, strict=True):
        assert usage_sum(message) == estimate_input_tokens(recorded.body)
        assert message.usage.input_tokens == usage_sum(message) - prefix_tokens
    assert fake.usage_totals() == {
        "input_tokens": first.usage.input_tokens + second.usage.input_tokens,
        "output_tokens": first.usage.output_tokens + second.usage.output_tokens,
        "cache_creation_input_tokens": prefix_tokens,
        "cache_read_input_tokens": prefix_tokens,
    }


def test_a_changed_system_prompt_misses_the_cache(
    fake: FakeMessagesAPI, client: anthropic.Anthropic
) -> None:
    # Given a cached system prompt
    fake.script = [Reply([text("one")]), Reply([text("two")])]
    ask(client, system=CACHED_SYSTEM)

    # When the next request's system prompt differs by one character
    changed = [{**CACHED_SYSTEM[0], "text": SYSTEM_TEXT + "!"}]
    second = ask(client, system=changed)

    # Then nothing is read and the new prefix is written
    assert second.usage.cache_read_input_tokens == 0
    assert second.usage.cache_creation_input_tokens == estimate_input_tokens(
        {"system": changed, "messages": []}
    )


def test_growing_conversation_with_moving_breakpoint_reads_the_earlier_prefix(
    fake: FakeMessagesAPI, client: anthropic.Anthropic
) -> None:
    # Given an agent loop that keeps cache_control on the system prompt and on the newest block
    fake.script = [
        Reply([tool_use("search_code", {"query": "verify"}, id="toolu_1")]),
        Reply([tool_use("read_file", {"path": "verify.py"}, id="toolu_2")]),
        Reply([text("It is in verify.py:10.")]),
    ]
    history: list[dict[str, Any]] = [
        user({"type": "text", "text": "Where are citations verified?", "cache_control": EPHEMERAL})
    ]
    replies: list[Message] = []
    for _ in range(3):
        reply = ask(client, messages=history, tools=TOOLS, system=CACHED_SYSTEM)
        replies.append(reply)
        if reply.stop_reason != "tool_use":
            break
        call = reply.content[0]
        assert isinstance(call, ToolUseBlock)
        # The breakpoint moves: strip it from older turns, put it on the newest tool_result.
        for message in history:
            for block in message["content"]:
                block.pop("cache_control", None)
        history.append({"role": "assistant", "content": [call.model_dump(exclude_none=True)]})
        history.append(user({**tool_result(call.id, "x" * 200), "cache_control": EPHEMERAL}))

    # Then every round reads everything the previous round sent and writes only the new turns
    assert len(replies) == 3
    bodies = [r.body for r in fake.requests]
    assert replies[0].usage.cache_read_input_tokens == 0
    assert replies[0].usage.cache_creation_input_tokens == estimate_input_tokens(bodies[0])
    for n in (1, 2):
        previous_prompt = estimate_input_tokens(bodies[n - 1])
        assert replies[n].usage.cache_read_input_tokens == previous_prompt
        assert replies[n].usage.cache_creation_input_tokens == (
            estimate_input_tokens(bodies[n]) - previous_prompt
        )
        assert replies[n].usage.input_tokens == 0
    totals = fake.usage_totals()
    read_share = totals["cache_read_input_tokens"] / sum(
        totals[k]
        for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    )
    assert 0.4 < read_share < 1


def test_prefixes_below_the_minimum_are_never_cached(client: anthropic.Anthropic) -> None:
    # Given a fake with a realistic minimum and a short cached system prompt
    with FakeMessagesAPI(
        [Reply([text("a")]), Reply([text("b")])], min_cacheable_tokens=1024
    ) as strict:
        sdk = anthropic.Anthropic(api_key="test", base_url=strict.base_url, max_retries=0)

        # When the same prompt is sent twice
        first, second = ask(sdk, system=CACHED_SYSTEM), ask(sdk, system=CACHED_SYSTEM)
        sdk.close()

    # Then all of it is plain input both times
    for message in (first, second):
        assert message.usage.cache_creation_input_tokens == 0
        assert message.usage.cache_read_input_tokens == 0
        assert message.usage.input_tokens == usage_sum(message)


def test_top_level_cache_control_marks_the_last_block(
    fake: FakeMessagesAPI, client: anthropic.Anthropic
) -> None:
    # Given the request-level cache_control the SDK offers
    fake.script = [Reply([text("a")])]

    # When a request uses it
    message = ask(client, system=SYSTEM_TEXT, cache_control=EPHEMERAL)

    # Then the whole prompt is written to the cache
    assert message.usage.cache_creation_input_tokens == usage_sum(message)
    assert message.usage.input_tokens == 0


# -- recording, timing, Bedrock, callable scripts -----------------------------------------------


def test_requests_are_recorded_with_raw_bodies_and_answers(
    fake: FakeMessagesAPI, client: anthropic.Anthropic
) -> None:
    # Given a reply and a failure
    fake.script = [Reply([text("ok")]), Fail(429)]

    # When two requests are made
    ask(client, "first")
    with pytest.raises(anthropic.RateLimitError):
        ask(client, "second")

    # Then both are recorded in order with path, headers, parsed and raw body, and our status
    first, second = fake.requests
    assert (first.path, first.status, second.status) == ("/v1/messages", 200, 429)
    assert first.body == json.loads(first.raw)
    assert first.body["messages"] == [{"role": "user", "content": "first"}]
    assert second.body["messages"][0]["content"] == "second"
    assert first.headers["anthropic-version"]
    assert first.headers["content-type"] == "application/json"
    # 2.14 sends the api_key as a bearer token rather than x-api-key.
    assert first.headers["authorization"] == "Bearer test"
    assert first.response is not None and first.response["type"] == "message"


def test_slow_reply_and_short_client_timeout_raise_api_timeout_error(
    fake: FakeMessagesAPI, client: anthropic.Anthropic
) -> None:
    # Given a reply that takes longer than the client will wait
    fake.script = [Reply([text("late")], delay_s=2.0), Reply([text("on time")])]

    # When the SDK asks with a short timeout
    with pytest.raises(anthropic.APITimeoutError):
        ask(client, timeout=0.2)

    # Then the request was still recorded, and the fake keeps serving
    assert len(fake.requests) == 1
    assert ask(client).content[0].type == "text"


def test_bedrock_client_is_served_on_the_invoke_path(fake: FakeMessagesAPI) -> None:
    # Given the SDK's Bedrock client pointed at the fake
    fake.script = [Reply([text("from bedrock")])]
    bedrock = anthropic.AnthropicBedrock(
        aws_access_key="x",
        aws_secret_key="y",
        aws_region="us-east-1",
        base_url=fake.base_url,
        max_retries=0,
    )

    # When it asks
    message = bedrock.messages.create(
        model=BEDROCK_MODEL, max_tokens=64, messages=[{"role": "user", "content": "hi"}]
    )
    bedrock.close()

    # Then it used InvokeModel with a SigV4 signature, the model in the path and not the body
    assert message.content[0].type == "text" and message.content[0].text == "from bedrock"
    assert message.model == BEDROCK_MODEL
    recorded = fake.requests[0]
    assert recorded.path == f"/model/{BEDROCK_MODEL}/invoke"
    assert recorded.headers["authorization"].startswith("AWS4-HMAC-SHA256 ")
    assert "model" not in recorded.body
    assert "anthropic_version" in recorded.body


def test_bedrock_streams_over_aws_event_stream_frames(fake: FakeMessagesAPI) -> None:
    # Given the Bedrock client and a reply, then one that breaks mid-stream
    fake.script = [Reply([text(ANSWER_TEXT)]), Reply([text(ANSWER_TEXT)], cut=Cut(2))]
    bedrock = _bedrock(fake)

    # When it streams
    with bedrock.messages.stream(
        model=BEDROCK_MODEL, max_tokens=64, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        deltas = [e.text for e in stream if e.type == "text"]
        final = stream.get_final_message()

    # Then the frames decode into the same events as the first-party stream
    assert fake.requests[0].path == f"/model/{BEDROCK_MODEL}/invoke-with-response-stream"
    assert "stream" not in fake.requests[0].body and "model" not in fake.requests[0].body
    assert deltas == tokens_of(ANSWER_TEXT)
    assert final.content[0].type == "text" and final.content[0].text == ANSWER_TEXT

    # and an error mid-stream arrives as an exception frame, named the Bedrock way
    with pytest.raises(anthropic.APIStatusError) as caught:
        with bedrock.messages.stream(
            model=BEDROCK_MODEL, max_tokens=64, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            stream.until_done()
    bedrock.close()
    assert isinstance(caught.value.body, dict)
    assert caught.value.body["error"]["type"] == "serviceUnavailableException"


def test_callable_script_sees_the_request_body(
    fake: FakeMessagesAPI, client: anthropic.Anthropic
) -> None:
    # Given a script that echoes the last user message
    seen: list[dict[str, Any]] = []

    def echo(body: dict[str, Any]) -> Reply:
        seen.append(body)
        return Reply([text(f"you said: {body['messages'][-1]['content']}")])

    fake.script = echo

    # When the SDK asks twice
    first, second = ask(client, "ping"), ask(client, "pong")

    # Then each answer was computed from that request's body
    assert [m.content[0].text for m in (first, second) if m.content[0].type == "text"] == [
        "you said: ping",
        "you said: pong",
    ]
    assert [b["model"] for b in seen] == [MODEL, MODEL]


def test_replacing_the_script_starts_the_new_list_from_its_first_step(
    fake: FakeMessagesAPI, client: anthropic.Anthropic
) -> None:
    # Given a script that has been used once
    fake.script = [Reply([text("old 1")]), Reply([text("old 2")])]
    ask(client)

    # When it is replaced
    fake.script = [Reply([text("new 1")])]
    message = ask(client)

    # Then the new script's first step answers
    assert message.content[0].type == "text" and message.content[0].text == "new 1"


def test_concurrent_requests_are_all_answered_and_recorded(
    fake: FakeMessagesAPI, client: anthropic.Anthropic
) -> None:
    # Given a callable script and many threads
    lock = threading.Lock()
    count = 0

    def numbered(body: dict[str, Any]) -> Reply:
        nonlocal count
        with lock:
            count += 1
        return Reply([text(body["messages"][0]["content"])], delay_s=0.05)

    fake.script = numbered

    # When 16 requests run at once
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda i: ask(client, f"q{i}"), range(16)))

    # Then each got its own answer and each was recorded once
    assert [a.content[0].text for a in answers if a.content[0].type == "text"] == [
        f"q{i}" for i in range(16)
    ]
    assert count == 16
    assert sorted(r.body["messages"][0]["content"] for r in fake.requests) == sorted(
        f"q{i}" for i in range(16)
    )
