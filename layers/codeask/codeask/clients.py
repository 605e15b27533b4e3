"""Small cached factories for the SDK clients; tests point them at loopback servers by endpoint."""

from __future__ import annotations

import functools
from typing import Any, Protocol


class SlackClient(Protocol):
    """The Slack Web API methods codeask calls; slack_sdk's WebClient is one, a test's fake another."""

    def chat_postMessage(
        self,
        *,
        channel: str,
        text: str | None = None,
        blocks: list[dict[str, Any]] | None = None,
        thread_ts: str | None = None,
        **kwargs: Any,
    ) -> Any: ...

    def chat_postEphemeral(
        self,
        *,
        channel: str,
        user: str,
        text: str | None = None,
        blocks: list[dict[str, Any]] | None = None,
        thread_ts: str | None = None,
        **kwargs: Any,
    ) -> Any: ...

    def chat_update(
        self,
        *,
        channel: str,
        ts: str,
        text: str | None = None,
        blocks: list[dict[str, Any]] | None = None,
        **kwargs: Any,
    ) -> Any: ...

    def chat_delete(self, *, channel: str, ts: str, **kwargs: Any) -> Any: ...

    def chat_startStream(
        self, *, channel: str, thread_ts: str, markdown_text: str | None = None, **kwargs: Any
    ) -> Any: ...

    def chat_appendStream(
        self, *, channel: str, ts: str, markdown_text: str | None = None, **kwargs: Any
    ) -> Any: ...

    def chat_stopStream(
        self, *, channel: str, ts: str, markdown_text: str | None = None, **kwargs: Any
    ) -> Any: ...

    def conversations_replies(self, *, channel: str, ts: str, **kwargs: Any) -> Any: ...

    def assistant_threads_setStatus(
        self, *, channel_id: str, thread_ts: str, status: str, **kwargs: Any
    ) -> Any: ...

    def auth_test(self, **kwargs: Any) -> Any: ...

    def conversations_info(self, *, channel: str, **kwargs: Any) -> Any: ...


@functools.cache
def aws(service: str) -> Any:
    """A boto3 client; boto3 honours AWS_ENDPOINT_URL, which is how tests reach moto."""
    import boto3

    return boto3.client(service)


@functools.cache
def slack(token: str, base_url: str, *, wait_out_429: bool = True) -> SlackClient:
    """A Slack WebClient that waits out 429s as Slack's Retry-After says (a 429 posted nothing).

    With `wait_out_429=False` a 429 comes back at once as an error: a streamed answer's updates
    back off on their own, and must never keep the final post waiting behind a sleep."""
    from slack_sdk import WebClient
    from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler

    # No retry on connection errors: a reset after Slack accepted a post would post it twice.
    return WebClient(
        token=token,
        base_url=base_url,
        timeout=10,
        retry_handlers=[RateLimitErrorRetryHandler(max_retry_count=3)] if wait_out_429 else [],
    )
