"""Secrets: straight from the environment locally, from Secrets Manager by ARN when deployed."""

from __future__ import annotations

import dataclasses
from typing import Any

from codeask.errors import ConfigError
from codeask.settings import Settings

SECRET_KEYS = {
    "SLACK_SIGNING_SECRET": "slack_signing_secret",
    "SLACK_BOT_TOKEN": "slack_bot_token",
    "ANTHROPIC_API_KEY": "anthropic_api_key",
    "GIT_TOKEN": "git_token",
}
CACHE_S = 300  # a rotated secret is picked up within five minutes, without a call per event


def with_secrets(settings: Settings, *, force_fetch: bool = False) -> Settings:
    """Fill the secret fields from SECRETS_ARN (a JSON secret); values already set locally win."""
    if not settings.secrets_arn:
        return settings
    from aws_lambda_powertools.utilities import parameters

    try:
        value: Any = parameters.get_secret(
            settings.secrets_arn, transform="json", max_age=CACHE_S, force_fetch=force_fetch
        )
    except Exception as e:  # noqa: BLE001 - any failure here is a configuration problem to report
        raise ConfigError(f"cannot read the secret SECRETS_ARN: {type(e).__name__}") from None
    if not isinstance(value, dict):
        raise ConfigError("the secret at SECRETS_ARN must be a JSON object of name -> value")
    updates = {
        field: value[key]
        for key, field in SECRET_KEYS.items()
        if isinstance(value.get(key), str) and value[key] and not getattr(settings, field)
    }
    return dataclasses.replace(settings, **updates)
