"""The model provider edge: client factory, retries within the deadline, error translation, prices."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Protocol, cast

from codeask.errors import CodeaskError, ConfigError
from codeask.settings import Settings

# US dollars per million tokens. Prompt-cache writes cost 1.25x input and reads 0.1x, as published.
DEFAULT_PRICES: dict[str, dict[str, float]] = {
    "claude-sonnet-5": {"input": 3.0, "output": 15.0, "cache_write": 3.75, "cache_read": 0.30},
    "claude-opus-4-5": {"input": 5.0, "output": 25.0, "cache_write": 6.25, "cache_read": 0.50},
    "claude-haiku-4-5": {"input": 1.0, "output": 5.0, "cache_write": 1.25, "cache_read": 0.10},
}
FALLBACK_PRICE = DEFAULT_PRICES["claude-sonnet-5"]


class ModelResponse(Protocol):
    """What codeask reads of a Messages API reply."""

    @property
    def content(self) -> Sequence[Any]: ...  # text and tool_use blocks

    @property
    def usage(self) -> Any: ...  # token counts, read with getattr: Bedrock omits some

    @property
    def stop_reason(self) -> str | None: ...


class Messages(Protocol):
    def create(self, **request: Any) -> Any: ...  # with stream=True: an iterable of raw events


class ModelClient(Protocol):
    """The one call codeask makes of a model provider: anthropic's Anthropic and AnthropicBedrock,
    or anything else that takes a Messages API request."""

    @property
    def messages(self) -> Messages: ...


class ModelUnavailable(CodeaskError):
    """The model could not be reached or kept failing until the deadline (429/529/5xx/timeouts)."""

    exit_code = 3


class ModelInterrupted(ModelUnavailable):
    """A streamed reply broke off after some of it was shown: asking again would show it twice,
    so the answer ends where it stands. `partial` is the reply as far as it came."""

    def __init__(self, message: str, *, partial: ModelResponse | None) -> None:
        super().__init__(message)
        self.partial = partial


class ModelRejected(CodeaskError):
    """The model refused the request for a reason retrying will not fix (bad key, bad request)."""

    exit_code = 3


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    calls: int = 0
    model_ms: float = 0.0

    def add(self, usage: Any, price: dict[str, float], elapsed_ms: float) -> None:
        inp = getattr(usage, "input_tokens", 0) or 0
        out = getattr(usage, "output_tokens", 0) or 0
        read = getattr(usage, "cache_read_input_tokens", 0) or 0
        write = getattr(usage, "cache_creation_input_tokens", 0) or 0
        self.input_tokens += inp
        self.output_tokens += out
        self.cache_read_tokens += read
        self.cache_write_tokens += write
        self.cost_usd += (
            inp * price["input"]
            + out * price["output"]
            + read * price["cache_read"]
            + write * price["cache_write"]
        ) / 1_000_000
        self.calls += 1
        self.model_ms += elapsed_ms

    @property
    def total_input_tokens(self) -> int:
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    def as_dict(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "cost_usd": round(self.cost_usd, 6),
            "model_calls": self.calls,
        }


def prices(settings: Settings) -> dict[str, dict[str, float]]:
    """The price table: the defaults, overridden per model by CODEASK_PRICES (JSON)."""
    table = {k: dict(v) for k, v in DEFAULT_PRICES.items()}
    if settings.prices_json:
        try:
            extra = json.loads(settings.prices_json)
            for model, p in extra.items():
                table[model] = {
                    k: float(p[k]) for k in ("input", "output", "cache_write", "cache_read")
                }
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise ConfigError(
                "CODEASK_PRICES must be JSON like "
                '{"model": {"input": 3, "output": 15, "cache_write": 3.75, "cache_read": 0.3}}'
                f" (US$ per million tokens): {e}"
            ) from None
    return table


def price_for(table: dict[str, dict[str, float]], model: str) -> dict[str, float]:
    if model in table:
        return table[model]
    # Bedrock ids look like "us.anthropic.claude-sonnet-5-v1:0": match on the family name.
    for name, p in table.items():
        if name in model:
            return p
    return FALLBACK_PRICE


def make_client(settings: Settings) -> ModelClient:
    """An Anthropic or Bedrock client; the SDK's own retries are off: ours respect the deadline."""
    import anthropic  # slow to import (~2 s): only the worker path pays for it

    client: anthropic.Anthropic | anthropic.AnthropicBedrock
    if settings.provider == "bedrock":
        client = anthropic.AnthropicBedrock(
            aws_region=settings.aws_region,
            base_url=settings.bedrock_base_url,
            max_retries=0,
        )
    elif not settings.anthropic_api_key:
        raise ConfigError("ANTHROPIC_API_KEY is not set (or set CODEASK_PROVIDER=bedrock)")
    else:
        client = anthropic.Anthropic(
            api_key=settings.anthropic_api_key,
            base_url=settings.anthropic_base_url,
            max_retries=0,
        )
    # The SDK types `create` by TypedDict overloads; codeask's requests are plain dicts it builds.
    return cast(ModelClient, client)


@dataclass
class RetryPolicy:
    base_s: float = 0.5
    cap_s: float = 8.0
    min_call_s: float = 3.0  # no point starting a call with less time than this left
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)


def create_message(
    client: ModelClient,
    request: dict[str, Any],
    *,
    deadline: float,
    policy: RetryPolicy | None = None,
    on_retry: Callable[[str], None] | None = None,
) -> ModelResponse:
    """One Messages API call, retried on 429/529/5xx/timeouts only while the deadline allows."""
    return _with_retries(
        lambda timeout: client.messages.create(**request, timeout=timeout),
        deadline=deadline,
        policy=policy,
        on_retry=on_retry,
    )


def stream_message(
    client: ModelClient,
    request: dict[str, Any],
    *,
    deadline: float,
    on_event: Callable[[str, str], None],
    rewind: Callable[[], bool],
    policy: RetryPolicy | None = None,
    on_retry: Callable[[str], None] | None = None,
) -> ModelResponse:
    """One Messages API call streamed: `on_event(kind, value)` hears of each block as it starts
    ("text" or "tool_use", with "") and of each piece of text ("delta", the piece). A failure is
    retried like `create_message`'s, but only after `rewind()` says nothing of the reply was
    shown yet; once something was, the reply ends where it broke off (ModelInterrupted). The
    stream is also ended at the deadline, so what remains of it can be posted."""
    partial: list[_Streamed | None] = [None]

    def attempt(timeout: float) -> ModelResponse:
        reply = partial[0] = _Streamed()
        stream = client.messages.create(**request, stream=True, timeout=timeout)
        with stream:
            for event in stream:
                if time.monotonic() >= deadline:
                    raise _PastDeadline
                reply.take(event, on_event)
        return reply

    def broke_off(why: str) -> None:
        if not rewind():
            raise ModelInterrupted(why, partial=partial[0])

    return _with_retries(
        attempt, deadline=deadline, policy=policy, on_retry=on_retry, broke_off=broke_off
    )


class _Streamed:
    """A reply assembled from its stream's raw events (as ModelResponse reads it). Tool input is
    parsed with json when its block ends: the SDK's own accumulator (jiter) refuses inputs that
    json, and the unstreamed path, accept, such as a lone surrogate escape."""

    def __init__(self) -> None:
        self.content: list[SimpleNamespace] = []
        self.stop_reason: str | None = None
        self.usage = SimpleNamespace(
            input_tokens=0, output_tokens=0, cache_read_input_tokens=0,
            cache_creation_input_tokens=0,
        )  # fmt: skip
        self._json: dict[int, str] = {}

    def take(self, event: Any, on_event: Callable[[str, str], None]) -> None:
        kind = getattr(event, "type", None)
        if kind == "message_start":
            self._usage(event.message.usage)
        elif kind == "content_block_start":
            block = event.content_block
            if block.type == "text":
                self.content.append(SimpleNamespace(type="text", text=""))
            elif block.type == "tool_use":
                self.content.append(
                    SimpleNamespace(type="tool_use", id=block.id, name=block.name, input={})
                )
                self._json[event.index] = ""
            else:
                self.content.append(SimpleNamespace(type=block.type))
            on_event(block.type, "")
        elif kind == "content_block_delta":
            delta = event.delta
            if delta.type == "text_delta":
                self.content[event.index].text += delta.text
                on_event("delta", delta.text)
            elif delta.type == "input_json_delta":
                self._json[event.index] += delta.partial_json
        elif kind == "content_block_stop" and event.index in self._json:
            raw = self._json.pop(event.index)
            self.content[event.index].input = json.loads(raw) if raw.strip() else {}
        elif kind == "message_delta":
            self.stop_reason = event.delta.stop_reason
            self._usage(event.usage)

    def _usage(self, usage: Any) -> None:
        # message_start carries the input counts, message_delta the totals so far: each count
        # given overwrites, one left out stays.
        for name in vars(self.usage):
            value = getattr(usage, name, None)
            if value is not None:
                setattr(self.usage, name, value)


class _PastDeadline(Exception):
    """The deadline came while a reply was still streaming."""


# Errors a stream can report once under way (its HTTP status already 200): the first-party API's
# types and Bedrock's exception names for the same conditions. Worth asking again.
_TRANSIENT_STREAM_ERRORS = frozenset(
    {
        "overloaded_error", "api_error", "rate_limit_error", "timeout_error",
        "serviceUnavailableException", "throttlingException", "internalServerException",
        "modelStreamErrorException", "modelTimeoutException",
    }
)  # fmt: skip


def _transport_errors() -> tuple[type[Exception], ...]:
    """The HTTP library's own transport errors: a stream read that breaks surfaces as one."""
    found: list[type[Exception]] = []
    for name in ("httpx2", "httpx"):
        try:
            module = __import__(name)
        except ImportError:
            continue
        found.append(module.TransportError)
    return tuple(found)


def _with_retries(
    call: Callable[[float], ModelResponse],
    *,
    deadline: float,
    policy: RetryPolicy | None,
    on_retry: Callable[[str], None] | None,
    broke_off: Callable[[str], None] | None = None,
) -> ModelResponse:
    """`call(timeout)` until it answers, retried on transient failures while the deadline allows.
    `broke_off(why)` is asked before each retry and raises when the failed call cannot be
    repeated (a streamed reply that was already partly shown)."""
    import anthropic

    policy = policy or RetryPolicy()
    broken: tuple[type[Exception], ...] = (
        anthropic.APIConnectionError,
        anthropic.APITimeoutError,
        *_transport_errors(),
    )
    attempt = 0
    last: Exception | None = None
    while True:
        left = deadline - time.monotonic()
        if left < policy.min_call_s:
            why = f"{type(last).__name__}: {_short(last)}" if last else "no time left for a call"
            raise ModelUnavailable(f"the model was unavailable before the deadline ({why})")
        try:
            return call(max(1.0, left - 0.5))
        except broken as e:
            last = e
        except anthropic.APIStatusError as e:
            last = _retryable(e)
        except _PastDeadline:
            if broke_off is not None:
                broke_off("the time for this answer ran out")
            raise ModelUnavailable(
                "the model was unavailable before the deadline (it was still answering)"
            ) from None
        if broke_off is not None:
            broke_off(f"the model stopped answering ({_short(last)})")
        attempt += 1
        wait = min(policy.cap_s, policy.base_s * 2 ** (attempt - 1)) * (0.5 + random.random() / 2)
        retry_after = _retry_after(last)
        if retry_after is not None:
            wait = max(wait, retry_after)
        if time.monotonic() + wait + policy.min_call_s > deadline:
            raise ModelUnavailable(
                f"the model was unavailable before the deadline ({type(last).__name__}: {_short(last)})"
            )
        if on_retry:
            on_retry(f"model busy ({_short(last)}); retrying in {wait:.1f} s")
        policy.sleep(wait)


def _retryable(e: Exception) -> Exception:
    """`e` when asking again may help (429, 529, 5xx, an overloaded stream); else ModelRejected."""
    import anthropic

    if isinstance(e, anthropic.AuthenticationError | anthropic.PermissionDeniedError):
        raise ModelRejected(f"the model provider refused the credentials: {_short(e)}") from None
    if isinstance(e, anthropic.BadRequestError):
        raise ModelRejected(f"the model provider rejected the request: {_short(e)}") from None
    status = getattr(e, "status_code", 0)
    if status == 200:
        # An `error` event in a stream that had started.
        if _error_type(e) not in _TRANSIENT_STREAM_ERRORS:
            raise ModelRejected(f"the model's reply failed: {_short(e)}") from None
    elif status not in (408, 409, 429) and status < 500:
        raise ModelRejected(f"the model provider answered {status}: {_short(e)}") from None
    return e


def _error_type(e: Exception) -> str | None:
    body = getattr(e, "body", None)
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        kind = body["error"].get("type")
        return str(kind) if kind is not None else None
    return None


def _retry_after(e: Exception | None) -> float | None:
    response = getattr(e, "response", None)
    if response is None:
        return None
    raw = response.headers.get("retry-after")
    try:
        return float(raw) if raw is not None else None
    except ValueError:
        return None


def _short(e: Exception | None) -> str:
    if e is None:
        return ""
    status = getattr(e, "status_code", None)
    body = getattr(e, "body", None)
    msg = ""
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict):
            msg = str(err.get("message", ""))
    msg = msg or str(e)
    msg = msg.splitlines()[0][:200] if msg else type(e).__name__
    return f"{status} {msg}" if status and status != 200 else msg
