"""Small cached factories for the SDK clients; tests point them at loopback servers by endpoint."""

from __future__ import annotations

import functools
from typing import Any


@functools.cache
def aws(service: str) -> Any:
    """A boto3 client; boto3 honours AWS_ENDPOINT_URL, which is how tests reach moto."""
    import boto3

    return boto3.client(service)


@functools.cache
def slack(token: str, base_url: str) -> Any:
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
