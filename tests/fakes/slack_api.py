"""Stateful fake of the Slack Web API on 127.0.0.1 that the real slack_sdk WebClient can talk to.

Besides messages, threads and scripted failures it serves Slack's streaming methods
(chat.startStream / appendStream / stopStream) with their documented argument checks and errors,
and can hold any method to a per-minute budget the way Slack's rate-limit tiers do. Assumptions
where Slack's reference is silent are named where they are made.
"""

from __future__ import annotations

import copy
import json
import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.message import Message
from http.server import BaseHTTPRequestHandler
from typing import Any, cast
from urllib.parse import parse_qsl, urlsplit

from fakes.loopback import LoopbackServer, QuietServer

__all__ = [
    "DEFAULT_SCOPES",
    "MAX_BLOCKS",
    "MAX_CONTEXT_ELEMENTS",
    "MAX_MARKDOWN_CHARS",
    "MAX_TEXT_OBJECT_CHARS",
    "MAX_TEXT_CHARS",
    "Call",
    "Channel",
    "FakeSlack",
]

DEFAULT_SCOPES: tuple[str, ...] = (
    "app_mentions:read",
    "assistant:write",
    "channels:history",
    "channels:read",
    "chat:write",
    "groups:history",
    "groups:read",
    "im:history",
    "im:read",
    "im:write",
    "mpim:history",
    "mpim:read",
    "reactions:write",
    "users:read",
)

# Slack's documented limits for chat.postMessage / chat.update.
MAX_TEXT_CHARS = 40_000
MAX_BLOCKS = 50
# Block Kit reference: a section's text and each text object at most 3,000 characters, a context
# block at most 10 elements, the markdown blocks of one payload at most 12,000 characters together.
MAX_TEXT_OBJECT_CHARS = 3_000
MAX_CONTEXT_ELEMENTS = 10
MAX_MARKDOWN_CHARS = 12_000
# chat.startStream / appendStream / stopStream: "Limit this field to 12,000 characters."
MAX_STREAM_CHARS = 12_000

# Arguments Slack documents as "a JSON-based array ... presented as a URL-encoded string"; clients
# send them as strings in form bodies (and sometimes inside JSON bodies too).
_JSON_ARGS = frozenset(
    {"blocks", "attachments", "metadata", "loading_messages", "unfurls", "user_auth_blocks"}
)

_FIRST_TS_MICROS = 1_700_000_000_000_000
_TS_STEP_MICROS = 100

Handler = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass
class Call:
    """One HTTP request the fake received, as it understood it, and the status it answered."""

    method: str
    args: dict[str, Any]
    token: str | None
    status: int
    at: float  # time.monotonic() when the request arrived
    error: str | None = None  # Slack's `error` when it answered ok=false (or ratelimited)


@dataclass
class Channel:
    """A conversation the bot can see; tests add these to `FakeSlack.channels` and edit them."""

    id: str
    name: str = "general"
    is_im: bool = False
    is_mpim: bool = False
    is_private: bool = False
    is_ext_shared: bool = False
    is_shared: bool = False
    is_member: bool = True
    context_team_id: str = "T0001"

    def to_api(self, *, im_user: str = "U0HUMAN") -> dict[str, Any]:
        """The conversation object as conversations.info returns it."""
        if self.is_im:
            return {
                "id": self.id,
                "created": 1_700_000_000,
                "is_archived": False,
                "is_im": True,
                "is_org_shared": False,
                "context_team_id": self.context_team_id,
                "updated": 1_700_000_000_000,
                "user": im_user,
                "is_user_deleted": False,
                "priority": 0,
            }
        return {
            "id": self.id,
            "name": self.name,
            "is_channel": not self.is_mpim,
            # Only private channels from before March 2021 report is_group; new ones never do.
            "is_group": False,
            "is_im": False,
            "is_mpim": self.is_mpim,
            "is_private": self.is_private or self.is_mpim,
            "created": 1_700_000_000,
            "is_archived": False,
            "is_general": self.name == "general",
            "unlinked": 0,
            "name_normalized": self.name,
            "is_shared": self.is_shared or self.is_ext_shared,
            "is_org_shared": False,
            "is_ext_shared": self.is_ext_shared,
            "is_pending_ext_shared": False,
            "pending_shared": [],
            "context_team_id": self.context_team_id,
            "updated": 1_700_000_000_000,
            "parent_conversation": None,
            "creator": "U0HUMAN",
            "is_member": self.is_member,
            "topic": {"value": "", "creator": "", "last_set": 0},
            "purpose": {"value": "", "creator": "", "last_set": 0},
            "previous_names": [],
        }


@dataclass
class _Bucket:
    """A per-minute budget refilled continuously, with room for a burst (Slack's tiers)."""

    per_minute: float
    burst: float
    tokens: float
    stamp: float

    def take(self, now: float) -> float:
        """0 if the call may go ahead (and is counted), else the seconds until it could."""
        rate = self.per_minute / 60.0
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * rate)
        self.stamp = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return (1.0 - self.tokens) / rate


class _SlackError(Exception):
    """An `{"ok": false}` answer; `extra` carries Slack's detail fields such as `errors`."""

    def __init__(self, error: str, **extra: Any) -> None:
        super().__init__(error)
        self.error = error
        self.extra = extra


@dataclass
class _Answer:
    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


def _ts_to_micros(ts: str) -> int:
    seconds, _, fraction = ts.partition(".")
    return int(seconds) * 1_000_000 + int((fraction or "0").ljust(6, "0")[:6])


def _ts_key(message: Mapping[str, Any]) -> int:
    return _ts_to_micros(message["ts"])


def _as_bool(value: Any) -> bool | None:
    # slack_sdk turns booleans into "1"/"0" in form bodies but keeps them as JSON booleans.
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return bool(value)
    return str(value).strip().lower() in {"1", "true", "yes"}


def _check_blocks(value: Any) -> list[dict[str, Any]] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise _SlackError("invalid_blocks", errors=["must be a JSON array of blocks"])
    if len(value) > MAX_BLOCKS:
        raise _SlackError("invalid_blocks", errors=[f"no more than {MAX_BLOCKS} items allowed"])
    markdown = 0
    for index, block in enumerate(value):
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise _SlackError(
                "invalid_blocks", errors=[f"missing required field: type [json-pointer:/{index}]"]
            )
        _check_block_texts(block, index)
        if block["type"] == "markdown":
            markdown += len(str(block.get("text", "")))
    if markdown > MAX_MARKDOWN_CHARS:
        # Assumed: the reference names the cumulative limit but not its error; clients report
        # msg_blocks_too_long for it (slackapi/bolt-js#2509).
        raise _SlackError("msg_blocks_too_long")
    return copy.deepcopy(value)


def _too_long(pointer: str) -> _SlackError:
    return _SlackError(
        "invalid_blocks",
        errors=[
            f"must be less than {MAX_TEXT_OBJECT_CHARS + 1} characters [json-pointer:{pointer}]"
        ],
    )


def _check_block_texts(block: dict[str, Any], index: int) -> None:
    """A section's text and a context block's elements within Block Kit's limits."""
    text = block.get("text")
    if isinstance(text, dict) and len(str(text.get("text", ""))) > MAX_TEXT_OBJECT_CHARS:
        raise _too_long(f"/{index}/text/text")
    if block["type"] != "context":
        return
    elements = block.get("elements")
    if not isinstance(elements, list) or not 1 <= len(elements) <= MAX_CONTEXT_ELEMENTS:
        raise _SlackError(
            "invalid_blocks",
            errors=[
                f"must provide 1 to {MAX_CONTEXT_ELEMENTS} items [json-pointer:/{index}/elements]"
            ],
        )
    for k, element in enumerate(elements):
        if isinstance(element, dict) and len(str(element.get("text", ""))) > MAX_TEXT_OBJECT_CHARS:
            raise _too_long(f"/{index}/elements/{k}/text")


def _check_text(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value)
    if len(text) > MAX_TEXT_CHARS:
        raise _SlackError("msg_too_long")
    return text


def _require(args: Mapping[str, Any], name: str, error: str = "invalid_arguments") -> str:
    value = args.get(name)
    if value is None or value == "":
        raise _SlackError(error)
    return str(value)


# Calls that can change what a thread shows; after each, the thread's state is logged.
_CHANGES_THREADS = frozenset(
    {
        "chat.postMessage",
        "chat.update",
        "chat.delete",
        "chat.startStream",
        "chat.appendStream",
        "chat.stopStream",
    }
)


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self._serve()

    def do_GET(self) -> None:
        # slack_sdk always POSTs, but Slack also serves GET with query args; so do we.
        self._serve()

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        fake = cast(FakeSlack, cast(QuietServer, self.server).fake)
        answer = fake._handle_http(self.path, self.headers, body)
        payload = json.dumps(answer.body).encode("utf-8")
        self.send_response(answer.status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in answer.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)


class FakeSlack(LoopbackServer):
    """A small, stateful Slack workspace: channels, messages, threads, and scripted failures."""

    handler = _Handler
    thread_name = "fake-slack-api"

    def __init__(
        self,
        *,
        bot_token: str = "xoxb-test",
        bot_user_id: str = "U0BOT",
        bot_id: str = "B0BOT",
        team_id: str = "T0001",
        scopes: tuple[str, ...] = DEFAULT_SCOPES,
    ) -> None:
        super().__init__()
        self.bot_token = bot_token
        self.bot_user_id = bot_user_id
        self.bot_id = bot_id
        self.team_id = team_id
        self.scopes = tuple(scopes)
        self.channels: dict[str, Channel] = {}
        self.calls: list[Call] = []
        # Side effects that never show up in messages(); each entry is a plain dict.
        self.ephemerals: list[dict[str, Any]] = []
        self.statuses: list[dict[str, Any]] = []
        self.reactions: list[dict[str, Any]] = []
        self._messages: dict[str, dict[str, dict[str, Any]]] = {}
        self._versions: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self._thread_log: dict[tuple[str, str], list[list[dict[str, Any]]]] = {}
        self._rate_limits: dict[str, list[int]] = {}
        self._budgets: dict[str, _Bucket] = {}
        self._failures: dict[str, list[str]] = {}
        self._fail_after: dict[str, int] = {}
        # Messages still being streamed (chat.startStream until chat.stopStream).
        self._streaming: set[tuple[str, str]] = set()
        self._last_ts = _FIRST_TS_MICROS
        # Re-entrant so seeding helpers can be called while a request is being answered.
        self._lock = threading.RLock()
        self._methods: dict[str, Handler] = {
            "auth.test": self._auth_test,
            "chat.postMessage": self._chat_post_message,
            "chat.update": self._chat_update,
            "chat.postEphemeral": self._chat_post_ephemeral,
            "chat.delete": self._chat_delete,
            "chat.getPermalink": self._chat_get_permalink,
            "conversations.info": self._conversations_info,
            "conversations.replies": self._conversations_replies,
            "assistant.threads.setStatus": self._assistant_threads_set_status,
            "chat.startStream": self._chat_start_stream,
            "chat.appendStream": self._chat_append_stream,
            "chat.stopStream": self._chat_stop_stream,
            "reactions.add": self._reactions_add,
            "reactions.remove": self._reactions_remove,
        }

    # -- lifecycle -------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """Pass to `WebClient(base_url=...)`; the trailing slash matters to urljoin."""
        return self._origin() + "/api/"

    # -- scripting -------------------------------------------------------------------------------

    def rate_limit(self, method: str, times: int = 1, retry_after: int = 1) -> None:
        """The next `times` calls to `method` answer HTTP 429 with `Retry-After: retry_after`."""
        with self._lock:
            self._rate_limits.setdefault(method, []).extend([int(retry_after)] * times)

    def limit(self, method: str, per_minute: float, burst: float | None = None) -> None:
        """Hold `method` to `per_minute` calls, refilled continuously, with a burst of `burst`
        (default: a sixth of a minute's worth, at least 1); a call over budget answers 429 with
        the whole seconds until one would pass, as Slack's Retry-After does."""
        room = burst if burst is not None else max(1.0, per_minute / 6)
        with self._lock:
            self._budgets[method] = _Bucket(per_minute, room, room, time.monotonic())

    def fail(self, method: str, error: str, times: int = 1, *, after: int = 0) -> None:
        """The next `times` calls to `method` answer 200 `{"ok": false, "error": error}`; with
        `after`, only once that many more calls to it have gone through."""
        with self._lock:
            self._failures.setdefault(method, []).extend([error] * times)
            self._fail_after[method] = after

    def add_thread_message(
        self,
        channel: str,
        thread_ts: str | None,
        text: str,
        user: str = "U0HUMAN",
        bot_id: str | None = None,
    ) -> str:
        """Seed a message someone else wrote and return its ts.

        `thread_ts=None` seeds a top-level message. The first message seeded under a `thread_ts`
        that matches no message becomes the thread's parent with exactly that ts, so a test can
        reuse the ts of the event it feeds the bot; later ones are replies. An unknown channel is
        added as a plain public channel the bot is in.
        """
        with self._lock:
            if channel not in self.channels:
                self.channels[channel] = Channel(id=channel)
            stored = self._messages.setdefault(channel, {})
            if thread_ts is not None and thread_ts not in stored:
                ts, parent = thread_ts, None
                self._last_ts = max(self._last_ts, _ts_to_micros(ts))
            else:
                ts = self._next_ts()
                parent = None if thread_ts is None else self._thread_root(channel, thread_ts)
            self._store(
                {
                    "ts": ts,
                    "channel": channel,
                    "thread_ts": parent,
                    "text": text,
                    "blocks": None,
                    "user": user,
                    "bot_id": bot_id,
                    "unfurl_links": None,
                    "unfurl_media": None,
                }
            )
            return ts

    # -- inspection ------------------------------------------------------------------------------

    def calls_to(self, method: str) -> list[Call]:
        with self._lock:
            return [call for call in self.calls if call.method == method]

    def messages(self, channel: str, thread_ts: str | None = None) -> list[dict[str, Any]]:
        """Visible messages as they stand now (after updates and deletes), oldest first.

        Without `thread_ts`: everything in the channel, top-level and replies. With it: the
        replies in that thread, not its parent (conversations.replies is the way to get both).
        """
        with self._lock:
            found = [
                copy.deepcopy(message)
                for message in self._messages.get(channel, {}).values()
                if thread_ts is None or message["thread_ts"] == thread_ts
            ]
        return sorted(found, key=_ts_key)

    def versions(self, channel: str, ts: str) -> list[dict[str, Any]]:
        """Every state a message has had: as posted, then after each chat.update or stream call."""
        with self._lock:
            return copy.deepcopy(self._versions.get((channel, ts), []))

    def is_streaming(self, channel: str, ts: str) -> bool:
        """Whether a chat.startStream message has not been stopped yet."""
        with self._lock:
            return (channel, ts) in self._streaming

    def thread_states(self, channel: str, thread_ts: str) -> list[list[dict[str, Any]]]:
        """Every state the thread's visible replies went through, one list of messages per call
        that changed any of them: what a reader could have seen at each moment."""
        with self._lock:
            return [
                copy.deepcopy(state) for state in self._thread_log.get((channel, thread_ts), [])
            ]

    # -- HTTP ------------------------------------------------------------------------------------

    def _handle_http(self, path: str, headers: Message, body: bytes) -> _Answer:
        at = time.monotonic()
        split = urlsplit(path)
        method = split.path.removeprefix("/api/") if split.path.startswith("/api/") else split.path
        args: dict[str, Any] = dict(parse_qsl(split.query, keep_blank_values=True))
        token: str | None = None
        answer: _Answer | None = None
        try:
            args.update(self._parse_body(headers, body))
        except _SlackError as error:
            answer = _Answer(200, {"ok": False, "error": error.error})
        auth = headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            token = auth.removeprefix("Bearer ").strip() or None
        body_token = args.pop("token", None)
        if token is None and body_token:
            token = str(body_token)  # Slack still accepts a token POST parameter
        for name in _JSON_ARGS & args.keys():
            if isinstance(args[name], str):
                try:
                    args[name] = json.loads(args[name])
                except json.JSONDecodeError:
                    pass  # left as sent; the blocks check reports it the way Slack would
        with self._lock:
            if answer is None:
                if not split.path.startswith("/api/"):
                    answer = _Answer(404, {"ok": False, "error": "unknown_method"})
                else:
                    answer = self._answer(method, args, token)
            failed = None if answer.body.get("ok", True) else str(answer.body.get("error"))
            self.calls.append(Call(method, copy.deepcopy(args), token, answer.status, at, failed))
            if answer.body.get("ok") and method in _CHANGES_THREADS:
                self._log_thread(args)
        return answer

    @staticmethod
    def _parse_body(headers: Message, body: bytes) -> dict[str, Any]:
        if not body:
            return {}
        content_type = headers.get_content_type()
        charset = headers.get_content_charset() or "utf-8"
        text = body.decode(charset, errors="replace")
        if content_type == "application/json":
            try:
                parsed = json.loads(text)
            except json.JSONDecodeError as error:
                raise _SlackError("invalid_json") from error
            if not isinstance(parsed, dict):
                raise _SlackError("json_not_object")
            return parsed
        if content_type == "application/x-www-form-urlencoded":
            return dict(parse_qsl(text, keep_blank_values=True))
        # multipart (file uploads) is not something this bot does; say so instead of guessing.
        raise _SlackError("invalid_post_type")

    def _answer(self, method: str, args: dict[str, Any], token: str | None) -> _Answer:
        limits = self._rate_limits.get(method)
        if limits:
            retry_after = limits.pop(0)
            return _Answer(
                429, {"ok": False, "error": "ratelimited"}, {"Retry-After": str(retry_after)}
            )
        budget = self._budgets.get(method)
        wait = budget.take(time.monotonic()) if budget is not None else 0.0
        if wait > 0:
            return _Answer(
                429,
                {"ok": False, "error": "ratelimited"},
                {"Retry-After": str(max(1, math.ceil(wait)))},
            )
        failures = self._failures.get(method)
        if failures and self._fail_after.get(method, 0) > 0:
            self._fail_after[method] -= 1
        elif failures:
            return _Answer(200, {"ok": False, "error": failures.pop(0)})
        handler = self._methods.get(method)
        if handler is None:
            return _Answer(200, {"ok": False, "error": "unknown_method", "req_method": method})
        if token is None:
            return _Answer(200, {"ok": False, "error": "not_authed"})
        if token != self.bot_token:
            return _Answer(200, {"ok": False, "error": "invalid_auth"})
        scopes_header = {"x-oauth-scopes": ",".join(self.scopes)}
        try:
            result = handler(args)
        except _SlackError as error:
            return _Answer(200, {"ok": False, "error": error.error, **error.extra}, scopes_header)
        return _Answer(200, {"ok": True, **result}, scopes_header)

    # -- state helpers (callers hold the lock) ---------------------------------------------------

    def _next_ts(self) -> str:
        self._last_ts += _TS_STEP_MICROS
        seconds, micros = divmod(self._last_ts, 1_000_000)
        return f"{seconds}.{micros:06d}"

    def _store(self, message: dict[str, Any]) -> None:
        self._messages.setdefault(message["channel"], {})[message["ts"]] = message
        self._versions.setdefault((message["channel"], message["ts"]), []).append(
            copy.deepcopy(message)
        )

    def _log_thread(self, args: Mapping[str, Any]) -> None:
        """After a call that changed a message: the whole thread as a reader now sees it."""
        channel = self.channels.get(str(args.get("channel")))
        if channel is None:
            return
        stored = self._messages.get(channel.id, {})
        touched = stored.get(str(args.get("ts"))) if args.get("ts") else None
        roots = {str(args["thread_ts"])} if args.get("thread_ts") else set()
        if touched is not None and touched["thread_ts"] is not None:
            roots.add(touched["thread_ts"])
        if not roots and args.get("ts"):
            # A deleted message: the thread it was in is found from the log.
            roots = {root for (ch, root) in self._thread_log if ch == channel.id}
        for root in roots:
            root = self._thread_root(channel.id, root)
            replies = sorted((m for m in stored.values() if m["thread_ts"] == root), key=_ts_key)
            self._thread_log.setdefault((channel.id, root), []).append(copy.deepcopy(replies))

    def _thread_root(self, channel: str, thread_ts: str) -> str:
        # Replying to a reply lands in the reply's thread, as in Slack.
        existing = self._messages.get(channel, {}).get(thread_ts)
        if existing is not None and existing["thread_ts"] is not None:
            return str(existing["thread_ts"])
        return thread_ts

    def _channel(self, value: Any) -> Channel:
        if value is None or value == "":
            raise _SlackError("channel_not_found")
        key = str(value)
        if key in self.channels:
            return self.channels[key]
        name = key.removeprefix("#")
        for channel in self.channels.values():
            if not channel.is_im and channel.name == name:
                return channel
        raise _SlackError("channel_not_found")

    def _message(self, channel: Channel, ts: Any) -> dict[str, Any]:
        message = self._messages.get(channel.id, {}).get(str(ts)) if ts else None
        if message is None:
            raise _SlackError("message_not_found")
        return message

    def _is_ours(self, message: Mapping[str, Any]) -> bool:
        return message["bot_id"] == self.bot_id and message["user"] == self.bot_user_id

    def _api_message(self, message: Mapping[str, Any]) -> dict[str, Any]:
        shaped: dict[str, Any] = {
            "type": "message",
            "user": message["user"],
            "text": message["text"],
            "ts": message["ts"],
            "team": self.team_id,
        }
        if message["bot_id"] is not None:
            shaped["bot_id"] = message["bot_id"]
            shaped["app_id"] = "A0APP"
        if message["blocks"] is not None:
            shaped["blocks"] = copy.deepcopy(message["blocks"])
        replies = sorted(
            (
                m
                for m in self._messages.get(message["channel"], {}).values()
                if m["thread_ts"] == message["ts"]
            ),
            key=_ts_key,
        )
        if message["thread_ts"] is not None:
            shaped["thread_ts"] = message["thread_ts"]
            parent = self._messages.get(message["channel"], {}).get(message["thread_ts"])
            if parent is not None:
                shaped["parent_user_id"] = parent["user"]
        elif replies:
            users = list(dict.fromkeys(m["user"] for m in replies))
            shaped.update(
                thread_ts=message["ts"],
                reply_count=len(replies),
                reply_users_count=len(users),
                reply_users=users,
                latest_reply=replies[-1]["ts"],
            )
        return shaped

    # -- methods ---------------------------------------------------------------------------------

    def _auth_test(self, args: dict[str, Any]) -> dict[str, Any]:
        return {
            "url": "https://codeask-test.slack.com/",
            "team": "codeask test",
            "user": "codeask",
            "team_id": self.team_id,
            "user_id": self.bot_user_id,
            "bot_id": self.bot_id,
            "is_enterprise_install": False,
        }

    def _chat_post_message(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(args.get("channel"))
        if not channel.is_member:
            raise _SlackError("not_in_channel")
        blocks = _check_blocks(args.get("blocks"))
        text = _check_text(args.get("text"))
        if (
            not text
            and not blocks
            and not args.get("attachments")
            and not args.get("markdown_text")
        ):
            raise _SlackError("no_text")
        thread_ts = args.get("thread_ts") or None
        message = {
            "ts": self._next_ts(),
            "channel": channel.id,
            "thread_ts": None
            if thread_ts is None
            else self._thread_root(channel.id, str(thread_ts)),
            "text": text or "",
            "blocks": blocks,
            "user": self.bot_user_id,
            "bot_id": self.bot_id,
            "unfurl_links": _as_bool(args.get("unfurl_links")),
            "unfurl_media": _as_bool(args.get("unfurl_media")),
        }
        self._store(message)
        return {"channel": channel.id, "ts": message["ts"], "message": self._api_message(message)}

    def _chat_update(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(args.get("channel"))
        message = self._message(channel, args.get("ts"))
        if not self._is_ours(message):
            raise _SlackError("cant_update_message")
        if (channel.id, message["ts"]) in self._streaming:
            # Assumed, not documented: a message still streaming is finished with chat.stopStream
            # before anything else may edit it (the SDK's ChatStream offers chat.update only as a
            # fallback for a stream Slack has already expired).
            raise _SlackError("cant_update_message")
        if "text" not in args and "blocks" not in args and "attachments" not in args:
            raise _SlackError("no_text")
        # Slack keeps whatever the update leaves out; an empty blocks array removes the blocks.
        if "blocks" in args:
            message["blocks"] = _check_blocks(args["blocks"]) or None
        if "text" in args:
            message["text"] = _check_text(args["text"]) or ""
        self._versions.setdefault((channel.id, message["ts"]), []).append(copy.deepcopy(message))
        return {
            "channel": channel.id,
            "ts": message["ts"],
            "text": message["text"],
            "message": self._api_message(message),
        }

    def _chat_post_ephemeral(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(args.get("channel"))
        if not channel.is_member:
            raise _SlackError("not_in_channel")
        user = _require(args, "user", "user_not_in_channel")
        blocks = _check_blocks(args.get("blocks"))
        text = _check_text(args.get("text"))
        if not text and not blocks and not args.get("attachments"):
            raise _SlackError("no_text")
        ts = self._next_ts()
        thread_ts = args.get("thread_ts") or None
        self.ephemerals.append(
            {
                "message_ts": ts,
                "channel": channel.id,
                "user": user,
                "thread_ts": None if thread_ts is None else str(thread_ts),
                "text": text or "",
                "blocks": blocks,
            }
        )
        return {"message_ts": ts}

    def _chat_delete(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(args.get("channel"))
        message = self._message(channel, args.get("ts"))
        if not self._is_ours(message):
            raise _SlackError("cant_delete_message")
        del self._messages[channel.id][message["ts"]]
        return {"channel": channel.id, "ts": message["ts"]}

    def _chat_get_permalink(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(args.get("channel"))
        message = self._message(channel, args.get("message_ts"))
        ts = message["ts"]
        link = f"https://codeask-test.slack.com/archives/{channel.id}/p{ts.replace('.', '')}"
        if message["thread_ts"] is not None:
            link += f"?thread_ts={message['thread_ts']}&cid={channel.id}"
        return {"channel": channel.id, "permalink": link}

    def _conversations_info(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(args.get("channel"))
        # Private conversations the bot is not in do not exist as far as Slack tells it.
        if (channel.is_private or channel.is_mpim) and not channel.is_member:
            raise _SlackError("channel_not_found")
        return {"channel": channel.to_api()}

    def _conversations_replies(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(args.get("channel"))
        if not channel.is_member:
            raise _SlackError("not_in_channel")
        ts = _require(args, "ts")
        stored = self._messages.get(channel.id, {})
        anchor = stored.get(ts)
        if anchor is None:
            raise _SlackError("thread_not_found")
        if anchor["thread_ts"] is not None:
            thread = [anchor]  # asked with a reply's ts: Slack answers with just that reply
        else:
            replies = [m for m in stored.values() if m["thread_ts"] == ts]
            thread = [anchor, *sorted(replies, key=_ts_key)]
        start = int(str(args.get("cursor") or "0").removeprefix("c") or 0)
        limit = max(1, int(args.get("limit") or 1000))
        page = thread[start : start + limit]
        has_more = start + limit < len(thread)
        result: dict[str, Any] = {
            "messages": [self._api_message(m) for m in page],
            "has_more": has_more,
        }
        if has_more:
            result["response_metadata"] = {"next_cursor": f"c{start + limit}"}
        return result

    def _assistant_threads_set_status(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(args.get("channel_id"))
        thread_ts = _require(args, "thread_ts", "invalid_thread_ts")
        if "status" not in args:
            raise _SlackError("invalid_arguments")
        # An empty status is how an app clears the indicator, so it is recorded like any other.
        self.statuses.append(
            {
                "channel_id": channel.id,
                "thread_ts": thread_ts,
                "status": str(args["status"]),
                "loading_messages": args.get("loading_messages"),
            }
        )
        return {}

    # -- streaming (docs.slack.dev/reference/methods/chat.startStream, .appendStream, .stopStream)

    @staticmethod
    def _stream_text(args: Mapping[str, Any], *, required: bool) -> str:
        """markdown_text, then the markdown_text chunks (the SDK's ChatStream sends only chunks)."""
        parts: list[str] = []
        if args.get("markdown_text"):
            parts.append(str(args["markdown_text"]))
        chunks = args.get("chunks")
        if isinstance(chunks, str):
            try:
                chunks = json.loads(chunks)
            except json.JSONDecodeError:
                raise _SlackError("invalid_arguments") from None
        if chunks is not None:
            if not isinstance(chunks, list):
                raise _SlackError("invalid_arguments")
            for chunk in chunks:
                if not isinstance(chunk, dict) or not isinstance(chunk.get("type"), str):
                    raise _SlackError("invalid_arguments")
                if chunk["type"] == "markdown_text":
                    if not isinstance(chunk.get("text"), str):
                        raise _SlackError("invalid_arguments")
                    parts.append(chunk["text"])
        text = "".join(parts)
        if required and not text:
            raise _SlackError("no_text")
        if len(text) > MAX_STREAM_CHARS:
            # Assumed: the reference names the 12,000-character limit but not its error.
            raise _SlackError("msg_too_long")
        return text

    def _streaming_message(self, args: Mapping[str, Any]) -> tuple[Channel, dict[str, Any]]:
        channel = self._channel(args.get("channel"))
        message = self._message(channel, args.get("ts"))
        if not self._is_ours(message):
            raise _SlackError("message_not_owned_by_app")
        if (channel.id, message["ts"]) not in self._streaming:
            raise _SlackError("message_not_in_streaming_state")
        return channel, message

    def _chat_start_stream(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(args.get("channel"))
        if not channel.is_member:
            raise _SlackError("not_in_channel")
        thread_ts = _require(args, "thread_ts", "invalid_arguments")
        if not channel.is_im:
            # "Required when streaming to channels."
            _require(args, "recipient_user_id", "missing_recipient_user_id")
            _require(args, "recipient_team_id", "missing_recipient_team_id")
        text = self._stream_text(args, required=False)
        message: dict[str, Any] = {
            "ts": self._next_ts(),
            "channel": channel.id,
            "thread_ts": self._thread_root(channel.id, thread_ts),
            "text": text,
            "blocks": None,
            "user": self.bot_user_id,
            "bot_id": self.bot_id,
            "unfurl_links": None,
            "unfurl_media": None,
        }
        self._store(message)
        self._streaming.add((channel.id, message["ts"]))
        return {"channel": channel.id, "ts": message["ts"]}

    def _chat_append_stream(self, args: dict[str, Any]) -> dict[str, Any]:
        channel, message = self._streaming_message(args)
        text = self._stream_text(args, required=True)
        message["text"] += text
        self._versions.setdefault((channel.id, message["ts"]), []).append(copy.deepcopy(message))
        return {"channel": channel.id, "ts": message["ts"]}

    def _chat_stop_stream(self, args: dict[str, Any]) -> dict[str, Any]:
        channel, message = self._streaming_message(args)
        message["text"] += self._stream_text(args, required=False)
        blocks = _check_blocks(args.get("blocks"))
        if blocks:
            # "A list of blocks that will be rendered at the bottom of the finalized message."
            message["blocks"] = [*(message["blocks"] or []), *blocks]
        self._streaming.discard((channel.id, message["ts"]))
        self._versions.setdefault((channel.id, message["ts"]), []).append(copy.deepcopy(message))
        return {
            "channel": channel.id,
            "ts": message["ts"],
            "message": {**self._api_message(message), "subtype": "bot_message"},
        }

    def _reaction_target(self, args: dict[str, Any]) -> tuple[Channel, str, str]:
        channel = self._channel(args.get("channel"))
        name = _require(args, "name", "invalid_name")
        if name.startswith(":") or name.endswith(":"):
            raise _SlackError("invalid_name")
        message = self._message(channel, args.get("timestamp"))
        return channel, str(message["ts"]), name

    def _reactions_add(self, args: dict[str, Any]) -> dict[str, Any]:
        channel, ts, name = self._reaction_target(args)
        reaction = {"channel": channel.id, "timestamp": ts, "name": name, "user": self.bot_user_id}
        if reaction in self.reactions:
            raise _SlackError("already_reacted")
        self.reactions.append(reaction)
        return {}

    def _reactions_remove(self, args: dict[str, Any]) -> dict[str, Any]:
        channel, ts, name = self._reaction_target(args)
        reaction = {"channel": channel.id, "timestamp": ts, "name": name, "user": self.bot_user_id}
        if reaction not in self.reactions:
            raise _SlackError("no_reaction")
        self.reactions.remove(reaction)
        return {}
