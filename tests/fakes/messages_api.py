"""Scripted fake of the Anthropic Messages API (and Bedrock InvokeModel) that the real SDK can talk to.

Replies come back whole, or streamed when the request asks for it: server-sent events on
/v1/messages (message_start, content_block_start/delta/stop, ping, message_delta with usage and
stop_reason, message_stop; an `error` event mid-stream), AWS event-stream frames on Bedrock's
invoke-with-response-stream. Streamed text goes out one token at a time at `tokens_per_s`
(instantly when None), so a benchmark sees a model's pace and a test sees every split.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import math
import re
import secrets
import socket
import struct
import threading
import time
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, TypeAlias, cast
from urllib.parse import unquote, urlsplit

from fakes.loopback import LoopbackServer, QuietServer

__all__ = [
    "CACHE_LOOKBACK_BLOCKS",
    "Cut",
    "Fail",
    "FakeMessagesAPI",
    "Recorded",
    "Reply",
    "Script",
    "Step",
    "estimate_input_tokens",
    "estimate_tokens",
    "text",
    "tokens_of",
    "tool_use",
]

# The real API looks for earlier cache hits at up to ~20 block boundaries before each breakpoint;
# without this a breakpoint that moves forward with the conversation would never read anything.
CACHE_LOOKBACK_BLOCKS = 20

MAX_CACHE_BREAKPOINTS = 4

_DEFAULT_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}

_BEDROCK_PATH = re.compile(
    r"/model/(?P<model>[^/]+)/(?P<action>invoke|invoke-with-response-stream)"
)

# A token as the fake counts them when streaming: a run of up to four non-space characters with
# the spaces before it (the stand-in tokenizer averages ~4 characters a token, like estimate_tokens).
_TOKEN = re.compile(r"\s*\S{1,4}|\s+")
_JSON_PIECE = 16  # characters of a tool's input JSON per input_json_delta

# Bedrock's streaming exceptions, by the error type a first-party stream would name.
_BEDROCK_EXCEPTIONS = {
    "overloaded_error": "serviceUnavailableException",
    "rate_limit_error": "throttlingException",
    "api_error": "internalServerException",
    "timeout_error": "modelTimeoutException",
}


@dataclass
class Cut:
    """A stream that breaks after `after_tokens` output tokens: an `error` event the way the API
    sends one mid-stream (HTTP status already 200), or with `drop`, the connection just closes."""

    after_tokens: int
    error_type: str = "overloaded_error"
    message: str = "Overloaded"
    drop: bool = False
    hang: bool = False  # neither: the stream just stops coming until the fake is stopped


@dataclass
class Reply:
    """One assistant message the fake answers with."""

    content: list[dict[str, Any]]
    stop_reason: str | None = None
    output_tokens: int | None = None
    delay_s: float = 0.0  # before the answer starts (a stream's headers and message_start)
    tokens_per_s: float | None = None  # streamed pace; None: the fake's own default
    cut: Cut | None = None  # streamed replies only: break the stream part-way


@dataclass
class Fail:
    """An HTTP error answered the way the API sends it."""

    status: int
    error_type: str | None = None
    message: str = "scripted failure"
    retry_after: float | None = None


Step: TypeAlias = Reply | Fail
Script: TypeAlias = list[Step] | Callable[[dict[str, Any]], Step]


@dataclass
class Recorded:
    """One request as the fake received it, and the status it answered with."""

    path: str
    headers: dict[str, str]  # keys lower-cased: HTTP header names are case-insensitive
    body: dict[str, Any]
    raw: bytes
    status: int = 0  # 0 until the answer is decided
    response: dict[str, Any] | None = None  # the JSON body we answered with (a stream: its message)
    streamed: bool = False  # answered as a stream of events
    events: list[tuple[float, str]] = field(default_factory=list)  # (monotonic time, type) sent


def text(s: str) -> dict[str, Any]:
    """A text content block."""
    return {"type": "text", "text": s}


def tool_use(name: str, input: dict[str, Any], id: str | None = None) -> dict[str, Any]:
    """A tool_use content block; the id is generated (unique) unless given."""
    return {
        "type": "tool_use",
        "id": id if id is not None else f"toolu_{uuid.uuid4().hex[:24]}",
        "name": name,
        "input": input,
    }


def tokens_of(s: str) -> list[str]:
    """`s` cut into the pieces a stream sends, one text_delta each."""
    return _TOKEN.findall(s)


def _compact(obj: object) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, sort_keys=True)


def estimate_tokens(obj: object) -> int:
    """ceil(len(compact JSON) / 4): the fake's stand-in for a tokenizer."""
    return math.ceil(len(_compact(obj)) / 4)


@dataclass(frozen=True)
class _Segment:
    canonical: str
    tokens: int
    breakpoint: bool


def _without_cache_control(block: dict[str, Any]) -> dict[str, Any]:
    # The marker must not change the prefix's identity, or moving a breakpoint would miss the cache.
    return {k: v for k, v in block.items() if k != "cache_control"}


def _content_blocks(content: object) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [text(content)]
    return [b for b in cast(list[Any], content or []) if isinstance(b, dict)]


def _segments(body: dict[str, Any]) -> list[_Segment]:
    """The prompt in cache order: tools, then system, then every message's blocks."""
    parts: list[tuple[object, bool]] = []
    for tool in body.get("tools") or []:
        parts.append((["tool", _without_cache_control(tool)], "cache_control" in tool))
    for block in _content_blocks(body.get("system")):
        parts.append((["system", _without_cache_control(block)], "cache_control" in block))
    for i, message in enumerate(body.get("messages") or []):
        for block in _content_blocks(message.get("content")):
            # The index and role keep message boundaries part of the prefix's identity.
            key = ["message", i, message.get("role"), _without_cache_control(block)]
            parts.append((key, "cache_control" in block))
    if body.get("cache_control") and parts:
        # Top-level cache_control marks the last cacheable block.
        parts[-1] = (parts[-1][0], True)
    return [
        _Segment(_compact(key), estimate_tokens(cast(list[Any], key)[-1]), bp) for key, bp in parts
    ]


def estimate_input_tokens(body: dict[str, Any]) -> int:
    """Total prompt tokens of a request body (= input + cache read + cache creation in its usage)."""
    return sum(s.tokens for s in _segments(body))


def _validate(body: dict[str, Any], *, bedrock: bool) -> str | None:
    """The first problem the real API would reject this body for, or None."""
    if bedrock:
        if "anthropic_version" not in body:
            return "anthropic_version: Field required (Bedrock InvokeModel carries it in the body)"
        if "model" in body:
            return "model: Extra inputs are not permitted (Bedrock takes the model id from the URL path)"
    else:
        if "model" not in body:
            return "model: Field required"
        if not isinstance(body["model"], str) or not body["model"]:
            return "model: Input should be a non-empty string"
    if "max_tokens" not in body:
        return "max_tokens: Field required"
    max_tokens = body["max_tokens"]
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool):
        return "max_tokens: Input should be a valid integer"
    if max_tokens < 1:
        return "max_tokens: Input should be greater than or equal to 1"
    if "messages" not in body:
        return "messages: Field required"
    if "stream" in body and not isinstance(body["stream"], bool):
        return "stream: Input should be a valid boolean"

    problem, tool_names = _validate_tools(body.get("tools"))
    if problem:
        return problem
    problem = _validate_system(body.get("system"))
    if problem:
        return problem
    problem = _validate_messages(body["messages"], tool_names)
    if problem:
        return problem
    return _validate_cache_control(body)


def _validate_tools(tools: object) -> tuple[str | None, list[str]]:
    if tools is None:
        return None, []
    if not isinstance(tools, list):
        return "tools: Input should be a valid list", []
    names: list[str] = []
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            return f"tools.{i}.name: Field required", []
        if tool["name"] in names:
            return f"tools: Tool names must be unique; {tool['name']!r} appears twice", []
        names.append(tool["name"])
    return None, names


def _validate_system(system: object) -> str | None:
    if system is None or isinstance(system, str):
        return None
    if not isinstance(system, list):
        return "system: Input should be a valid string or a list of text blocks"
    for j, block in enumerate(system):
        if not isinstance(block, dict) or block.get("type") != "text":
            return f"system.{j}.type: Input should be 'text'"
        if not isinstance(block.get("text"), str):
            return f"system.{j}.text: Field required"
    return None


def _validate_messages(messages: object, tool_names: list[str]) -> str | None:
    if not isinstance(messages, list):
        return "messages: Input should be a valid list"
    if not messages:
        return "messages: at least one message is required"
    seen_tool_use_ids: set[str] = set()
    asked_ids: list[str] = []  # tool_use ids of the previous assistant message
    previous_role: str | None = None
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            return f"messages.{i}: Input should be a valid dictionary"
        role = message.get("role")
        if role not in ("user", "assistant"):
            return f"messages.{i}.role: Input should be 'user' or 'assistant'"
        if i == 0 and role != "user":
            return 'messages: first message must use the "user" role'
        if role == previous_role:
            return (
                f'messages.{i}: roles must alternate between "user" and "assistant", '
                f'but messages.{i - 1} and messages.{i} are both "{role}"'
            )
        previous_role = role
        content = message.get("content")
        if not isinstance(content, str | list):
            return (
                f"messages.{i}.content: Input should be a valid string or a list of content blocks"
            )
        is_final_assistant = role == "assistant" and i == len(messages) - 1
        if not content and not is_final_assistant:
            return f"messages.{i}: all messages must have non-empty content except for the optional final assistant message"
        blocks: list[Any] = [text(content)] if isinstance(content, str) else content
        for j, block in enumerate(blocks):
            if not isinstance(block, dict) or not isinstance(block.get("type"), str):
                return f"messages.{i}.content.{j}.type: Field required"
            if block["type"] == "text" and not block.get("text") and isinstance(content, list):
                return f"messages.{i}.content.{j}: text content blocks must be non-empty"

        if role == "assistant":
            problem, asked_ids = _validate_tool_uses(i, blocks, tool_names, seen_tool_use_ids)
        else:
            problem = _validate_tool_results(i, blocks, asked_ids)
            asked_ids = []
        if problem:
            return problem
    return None


def _validate_tool_uses(
    i: int, blocks: list[dict[str, Any]], tool_names: list[str], seen: set[str]
) -> tuple[str | None, list[str]]:
    ids: list[str] = []
    for j, block in enumerate(blocks):
        where = f"messages.{i}.content.{j}"
        if block["type"] == "tool_result":
            return f"{where}: tool_result blocks are only allowed in user messages", []
        if block["type"] != "tool_use":
            continue
        for key, kind in (("id", str), ("name", str), ("input", dict)):
            if not isinstance(block.get(key), kind):
                return f"{where}.{key}: Field required", []
        if block["id"] in seen:
            return f"{where}: `tool_use` ids must be unique; {block['id']!r} was used before", []
        seen.add(block["id"])
        if not tool_names:
            return (
                f"{where}: Requests which include `tool_use` or `tool_result` blocks must define tools.",
                [],
            )
        if block["name"] not in tool_names:
            offered = ", ".join(tool_names)
            return (
                f"{where}: tool_use block calls tool {block['name']!r}, which is not among the offered tools ({offered})",
                [],
            )
        ids.append(block["id"])
    return None, ids


def _validate_tool_results(
    i: int, blocks: list[dict[str, Any]], asked_ids: list[str]
) -> str | None:
    answered: list[str] = []
    other_block_seen = False
    for j, block in enumerate(blocks):
        where = f"messages.{i}.content.{j}"
        if block["type"] == "tool_use":
            return f"{where}: tool_use blocks are only allowed in assistant messages"
        if block["type"] != "tool_result":
            other_block_seen = True
            continue
        tool_use_id = block.get("tool_use_id")
        if not isinstance(tool_use_id, str):
            return f"{where}.tool_use_id: Field required"
        if tool_use_id not in asked_ids:
            return (
                f"{where}: unexpected `tool_use_id` found in `tool_result` blocks: {tool_use_id}. "
                "Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
            )
        if tool_use_id in answered:
            return f"{where}: more than one `tool_result` block for `tool_use_id` {tool_use_id}"
        if other_block_seen:
            return (
                f"{where}: `tool_result` blocks must come before any other content in the message"
            )
        answered.append(tool_use_id)
    missing = [t for t in asked_ids if t not in answered]
    if missing:
        return (
            f"messages.{i - 1}: `tool_use` ids were found without `tool_result` blocks immediately after: "
            f"{', '.join(missing)}. Each `tool_use` block must have a corresponding `tool_result` block "
            f"in the next message (messages.{i})."
        )
    return None


def _validate_cache_control(body: dict[str, Any]) -> str | None:
    marked: list[tuple[str, object]] = []
    for i, tool in enumerate(body.get("tools") or []):
        if "cache_control" in tool:
            marked.append((f"tools.{i}", tool["cache_control"]))
    system = body.get("system")
    if isinstance(system, list):
        for j, block in enumerate(system):
            if "cache_control" in block:
                marked.append((f"system.{j}", block["cache_control"]))
    for i, message in enumerate(body["messages"]):
        if isinstance(message.get("content"), list):
            for j, block in enumerate(message["content"]):
                if "cache_control" in block:
                    marked.append((f"messages.{i}.content.{j}", block["cache_control"]))
    if body.get("cache_control") is not None:
        marked.append(("cache_control", body["cache_control"]))
    for where, marker in marked:
        if not isinstance(marker, dict) or marker.get("type") != "ephemeral":
            return f"{where}.cache_control.type: Input should be 'ephemeral'"
        if marker.get("ttl") not in (None, "5m", "1h"):
            return f"{where}.cache_control.ttl: Input should be '5m' or '1h'"
    if len(marked) > MAX_CACHE_BREAKPOINTS:
        return (
            f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. "
            f"Found {len(marked)}."
        )
    return None


@dataclass
class _Answer:
    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    stream: _Stream | None = None  # a 200 answered as events instead of one JSON body


@dataclass
class _Stream:
    """The events of one streamed reply, each with the output tokens it costs to send."""

    events: list[tuple[dict[str, Any], int]]
    tokens_per_s: float | None
    bedrock: bool
    drop_after: int | None = None  # close the connection before event number `drop_after`
    hang_after: int | None = None  # go quiet before event number `hang_after`


def _error(status: int, message: str, error_type: str | None = None) -> _Answer:
    kind = error_type or _DEFAULT_ERROR_TYPES.get(
        status, "api_error" if status >= 500 else "invalid_request_error"
    )
    return _Answer(status, {"type": "error", "error": {"type": kind, "message": message}})


def _new_id(prefix: str) -> str:
    return f"{prefix}_01{secrets.token_hex(12)}"


class _Handler(BaseHTTPRequestHandler):
    # Keep-alive, like the real API, so the SDK's connection pool behaves as in production.
    protocol_version = "HTTP/1.1"
    timeout = 120  # reap idle pooled connections eventually; stop() closes them at once

    def setup(self) -> None:
        super().setup()
        self._fake()._track(self.connection, open_=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self._fake()._track(self.connection, open_=False)

    def _fake(self) -> FakeMessagesAPI:
        return cast(FakeMessagesAPI, cast(QuietServer, self.server).fake)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self._fake()._handle(self)

    def do_GET(self) -> None:
        self._fake()._handle(self)

    def do_PUT(self) -> None:
        self._fake()._handle(self)

    def do_DELETE(self) -> None:
        self._fake()._handle(self)


class FakeMessagesAPI(LoopbackServer):
    """A scripted Messages API on 127.0.0.1 that validates requests and simulates prompt caching."""

    handler = _Handler
    thread_name = "fake-messages-api"

    def __init__(
        self,
        script: Script | None = None,
        *,
        min_cacheable_tokens: int = 0,
        cache_lookback_blocks: int = CACHE_LOOKBACK_BLOCKS,
        tokens_per_s: float | None = None,
    ) -> None:
        super().__init__()
        self.tokens_per_s = tokens_per_s  # streamed replies' pace; None: as fast as possible
        self._lock = threading.Lock()
        self._script: Script = script if script is not None else []
        self._cursor = 0
        self.min_cacheable_tokens = min_cacheable_tokens
        self.cache_lookback_blocks = cache_lookback_blocks
        self.requests: list[Recorded] = []
        self._written_prefixes: set[bytes] = set()
        self._totals = dict.fromkeys(
            (
                "input_tokens",
                "output_tokens",
                "cache_creation_input_tokens",
                "cache_read_input_tokens",
            ),
            0,
        )
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()

    # -- lifecycle -------------------------------------------------------------------------------

    def _before_start(self) -> None:
        self._stopping.clear()

    def _before_stop(self) -> None:
        self._stopping.set()  # wakes handlers sleeping on a scripted delay

    def _after_close(self) -> None:
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            # Pooled keep-alive connections would otherwise pin handler threads until their timeout.
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    @property
    def base_url(self) -> str:
        return self._origin()

    # -- script and accounting -------------------------------------------------------------------

    @property
    def script(self) -> Script:
        return self._script

    @script.setter
    def script(self, script: Script) -> None:
        # A new list starts from its first step; otherwise steps would be silently skipped.
        with self._lock:
            self._script = script
            self._cursor = 0

    def usage_totals(self) -> dict[str, int]:
        """Usage summed over every successful reply so far."""
        with self._lock:
            return dict(self._totals)

    def _track(self, conn: socket.socket, *, open_: bool) -> None:
        with self._lock:
            if open_:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)

    # -- request handling ------------------------------------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length) if length > 0 else b""
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
        recorded = Recorded(
            path=handler.path,
            headers={k.lower(): v for k, v in handler.headers.items()},
            body=parsed if isinstance(parsed, dict) else {},
            raw=raw,
        )
        with self._lock:
            self.requests.append(recorded)
            number = len(self.requests)
        try:
            answer = self._answer(handler.command, recorded, parsed, number)
        except Exception as exc:  # noqa: BLE001 - a bug in the fake must surface in the test, not hang it
            answer = _error(500, f"fake Messages API internal error on request #{number}: {exc!r}")
        request_id = _new_id("req")
        if answer.body.get("type") == "error":
            answer.body["request_id"] = request_id
        with self._lock:
            recorded.status = answer.status
            recorded.response = answer.body
            recorded.streamed = answer.stream is not None
        if answer.delay_s > 0 and self._stopping.wait(answer.delay_s):
            return
        if answer.stream is not None:
            self._send_stream(handler, answer.stream, request_id, recorded)
        else:
            self._send(handler, answer, request_id)

    def _answer(self, method: str, recorded: Recorded, parsed: object, number: int) -> _Answer:
        path = urlsplit(recorded.path).path
        bedrock = _BEDROCK_PATH.fullmatch(path)
        if method != "POST" or (path != "/v1/messages" and bedrock is None):
            return _error(
                404,
                f"Not found: {method} {path} (this fake serves POST /v1/messages and "
                "POST /model/{model_id}/invoke)",
            )
        if bedrock is not None:
            if not recorded.headers.get("authorization"):
                return _error(
                    403, "Missing Authentication Token (expected a SigV4 Authorization header)"
                )
        else:
            if not (recorded.headers.get("x-api-key") or recorded.headers.get("authorization")):
                return _error(401, "x-api-key header is required")
            if not recorded.headers.get("anthropic-version"):
                return _error(400, "anthropic-version: header is required")
        if not isinstance(parsed, dict):
            return _error(400, "The request body is not valid JSON (an object was expected)")
        problem = _validate(parsed, bedrock=bedrock is not None)
        if problem:
            return _error(400, problem)

        model = unquote(bedrock["model"]) if bedrock is not None else parsed["model"]
        step = self._next_step(parsed, number)
        if isinstance(step, _Answer):
            return step
        if isinstance(step, Fail):
            answer = _error(step.status, step.message, step.error_type)
            if step.retry_after is not None:
                seconds = step.retry_after
                answer.headers["retry-after"] = (
                    str(int(seconds)) if seconds == int(seconds) else str(seconds)
                )
            return answer
        if bedrock is not None:
            streaming = bedrock["action"] == "invoke-with-response-stream"
        else:
            streaming = parsed.get("stream") is True
        return self._reply(
            step, parsed, model, number, streaming=streaming, bedrock=bedrock is not None
        )

    def _next_step(self, body: dict[str, Any], number: int) -> Step | _Answer:
        with self._lock:
            script = self._script
            if not callable(script):
                if self._cursor >= len(script):
                    return _error(
                        500,
                        f"FakeMessagesAPI script exhausted: request #{number} arrived but the script "
                        f"has only {len(script)} step(s), all used",
                    )
                step = script[self._cursor]
                self._cursor += 1
        if callable(script):
            # Outside the lock: a script callable may be slow or inspect the fake.
            try:
                step = script(copy.deepcopy(body))
            except Exception as exc:  # noqa: BLE001 - reported to the test as a 500
                return _error(
                    500, f"FakeMessagesAPI script callable raised on request #{number}: {exc!r}"
                )
        if not isinstance(step, Reply | Fail):
            return _error(
                500,
                f"FakeMessagesAPI script gave {type(step).__name__} for request #{number}; expected Reply or Fail",
            )
        return step

    def _reply(
        self,
        reply: Reply,
        body: dict[str, Any],
        model: str,
        number: int,
        *,
        streaming: bool,
        bedrock: bool,
    ) -> _Answer:
        content = copy.deepcopy(reply.content)
        for j, block in enumerate(content):
            if not isinstance(block, dict) or not isinstance(block.get("type"), str):
                return _error(
                    500,
                    f"FakeMessagesAPI Reply for request #{number}: content[{j}] is not a content block",
                )
        has_tool_use = any(block["type"] == "tool_use" for block in content)
        stop_reason = reply.stop_reason or ("tool_use" if has_tool_use else "end_turn")
        output_tokens = (
            reply.output_tokens if reply.output_tokens is not None else estimate_tokens(content)
        )
        if reply.cut is not None and not streaming:
            return _error(
                500, f"FakeMessagesAPI Reply for request #{number}: a Cut needs a streamed request"
            )
        with self._lock:
            usage = self._cache_usage(body, model)
            usage["output_tokens"] = output_tokens
            if reply.cut is not None:
                # Billed for what was generated before the break, not for the whole reply.
                usage["output_tokens"] = min(output_tokens, reply.cut.after_tokens)
            for key, value in usage.items():
                self._totals[key] += value
        message = {
            "id": _new_id("msg"),
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {
                "input_tokens": usage["input_tokens"],
                "output_tokens": usage["output_tokens"],
                "cache_creation_input_tokens": usage["cache_creation_input_tokens"],
                "cache_read_input_tokens": usage["cache_read_input_tokens"],
            },
        }
        if not streaming:
            return _Answer(200, message, delay_s=reply.delay_s)
        rate = reply.tokens_per_s if reply.tokens_per_s is not None else self.tokens_per_s
        return _Answer(
            200,
            message,
            delay_s=reply.delay_s,
            stream=_stream_events(message, reply.cut, rate, bedrock=bedrock),
        )

    def _cache_usage(self, body: dict[str, Any], model: str) -> dict[str, int]:
        """Split the prompt into cache read / cache creation / uncached input; remember new prefixes."""
        segments = _segments(body)
        # prefix_digest[n] and prefix_tokens[n] describe the first n segments.
        prefix_digest = [hashlib.sha256(f"model:{model}".encode()).digest()]
        prefix_tokens = [0]
        for seg in segments:
            prefix_digest.append(
                hashlib.sha256(prefix_digest[-1] + seg.canonical.encode()).digest()
            )
            prefix_tokens.append(prefix_tokens[-1] + seg.tokens)
        breakpoints = [n + 1 for n, seg in enumerate(segments) if seg.breakpoint]
        cacheable = [n for n in breakpoints if prefix_tokens[n] >= self.min_cacheable_tokens]

        read_len = 0
        for end in breakpoints:
            for n in range(end, max(0, end - self.cache_lookback_blocks - 1), -1):
                if n <= read_len:
                    break
                if prefix_digest[n] in self._written_prefixes:
                    read_len = n
                    break
        write_end = max(cacheable, default=0)
        read = prefix_tokens[read_len]
        creation = max(0, prefix_tokens[write_end] - read)
        for n in cacheable:
            self._written_prefixes.add(prefix_digest[n])
        return {
            "input_tokens": prefix_tokens[-1] - read - creation,
            "cache_creation_input_tokens": creation,
            "cache_read_input_tokens": read,
        }

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, answer: _Answer, request_id: str) -> None:
        payload = json.dumps(answer.body).encode()
        try:
            handler.send_response(answer.status)
            handler.send_header("content-type", "application/json")
            handler.send_header("content-length", str(len(payload)))
            handler.send_header("request-id", request_id)
            for name, value in answer.headers.items():
                handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.write(payload)
            handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            # The client gave up waiting (timeout tests); nobody is left to answer.
            handler.close_connection = True

    def _send_stream(
        self,
        handler: BaseHTTPRequestHandler,
        stream: _Stream,
        request_id: str,
        recorded: Recorded,
    ) -> None:
        """Events as the real API sends them: chunked, paced at the stream's token rate."""
        kind = "application/vnd.amazon.eventstream" if stream.bedrock else "text/event-stream"
        try:
            handler.send_response(200)
            handler.send_header("content-type", kind)
            handler.send_header("cache-control", "no-cache")
            handler.send_header("transfer-encoding", "chunked")
            handler.send_header("request-id", request_id)
            handler.end_headers()
            for i, (event, tokens) in enumerate(stream.events):
                if stream.tokens_per_s and tokens:
                    if self._stopping.wait(tokens / stream.tokens_per_s):
                        return
                if stream.hang_after is not None and i >= stream.hang_after:
                    self._stopping.wait()  # a model that went quiet: until the fake stops
                    return
                if stream.drop_after is not None and i >= stream.drop_after:
                    # The body ends without its last chunk: the client sees a broken connection.
                    handler.wfile.flush()
                    handler.close_connection = True
                    handler.connection.shutdown(socket.SHUT_RDWR)
                    return
                frame = _bedrock_frame(event) if stream.bedrock else _sse(event)
                # Recorded before the write: once the frame is out, the client may act on it (raise,
                # return) and the test read `events` before this thread appended to it.
                sent = (time.monotonic(), str(event.get("type")))
                with self._lock:
                    recorded.events.append(sent)
                try:
                    handler.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
                    handler.wfile.flush()
                except OSError:
                    with self._lock:
                        recorded.events.remove(sent)  # never reached the client
                    raise
            handler.wfile.write(b"0\r\n\r\n")
            handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):
            # The client stopped reading (a deadline, a test); nobody is left to answer.
            handler.close_connection = True


def _stream_events(
    message: dict[str, Any], cut: Cut | None, tokens_per_s: float | None, *, bedrock: bool
) -> _Stream:
    """The event sequence of one message, each event with the output tokens it takes to make."""
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None,
             "usage": {**usage, "output_tokens": 1}}  # fmt: skip
    events: list[tuple[dict[str, Any], int]] = [({"type": "message_start", "message": start}, 0)]
    sent = 0
    broken: int | None = None
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            opening: dict[str, Any] = {"type": "text", "text": ""}
            pieces = [("text_delta", "text", t) for t in tokens_of(block["text"])]
        elif block["type"] == "tool_use":
            opening = {**block, "input": {}}
            raw = _compact(block["input"])
            pieces = [
                ("input_json_delta", "partial_json", raw[i : i + _JSON_PIECE])
                for i in range(0, len(raw), _JSON_PIECE)
            ]
        else:
            opening, pieces = block, []
        events.append(({"type": "content_block_start", "index": index,
                        "content_block": opening}, 0))  # fmt: skip
        if index == 0:
            events.append(({"type": "ping"}, 0))
        for delta_type, key, piece in pieces:
            cost = 1 if delta_type == "text_delta" else max(1, math.ceil(len(piece) / 4))
            if cut is not None and broken is None and sent + cost > cut.after_tokens:
                broken = len(events)
            sent += cost
            events.append(({"type": "content_block_delta", "index": index,
                            "delta": {"type": delta_type, key: piece}}, cost))  # fmt: skip
        events.append(({"type": "content_block_stop", "index": index}, 0))
    events.append(({"type": "message_delta",
                    "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                    "usage": {"output_tokens": usage["output_tokens"]}}, 0))  # fmt: skip
    events.append(({"type": "message_stop"}, 0))
    if cut is None:
        return _Stream(events, tokens_per_s, bedrock)
    if broken is None:
        broken = len(events) - 2  # after the last delta, before message_delta
    if cut.drop:
        return _Stream(events, tokens_per_s, bedrock, drop_after=broken)
    if cut.hang:
        return _Stream(events, tokens_per_s, bedrock, hang_after=broken)
    error = {"type": "error", "error": {"type": cut.error_type, "message": cut.message}}
    return _Stream([*events[:broken], (error, 0)], tokens_per_s, bedrock)


def _sse(event: dict[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


def _bedrock_frame(event: dict[str, Any]) -> bytes:
    """One AWS event-stream message: a `chunk` event carrying the event's JSON, base64-encoded,
    or an exception frame for an error (which is how Bedrock reports one mid-stream)."""
    if event["type"] == "error":
        error = event["error"]
        headers = {
            ":message-type": "exception",
            ":exception-type": _BEDROCK_EXCEPTIONS.get(error["type"], "internalServerException"),
            ":content-type": "application/json",
        }
        payload = json.dumps({"message": error["message"]}).encode()
    else:
        headers = {
            ":event-type": "chunk",
            ":content-type": "application/json",
            ":message-type": "event",
        }
        encoded = base64.b64encode(json.dumps(event).encode()).decode()
        payload = json.dumps({"bytes": encoded}).encode()
    head = b"".join(
        bytes([len(name)])
        + name.encode()
        + b"\x07"
        + struct.pack(">H", len(value))
        + value.encode()
        for name, value in headers.items()
    )
    total = 12 + len(head) + len(payload) + 4
    prelude = struct.pack(">II", total, len(head))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + head + payload
    return body + struct.pack(">I", zlib.crc32(body))
