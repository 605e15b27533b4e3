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
def slack(token: str, base_url: str) -> SlackClient:
    """A Slack WebClient that waits out 429s as Slack's Retry-After says (a 429 posted nothing)."""
    from slack_sdk import WebClient
    from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler

    # No retry on connection errors: a reset after Slack accepted a post would post it twice.
    return WebClient(
        token=token,
        base_url=base_url,
        timeout=10,
        retry_handlers=[RateLimitErrorRetryHandler(max_retry_count=3)],
    )
