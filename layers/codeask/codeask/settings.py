"""The one frozen settings object, built once from the environment; nothing else reads os.environ."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from codeask.botconfig import BotConfig
from codeask.errors import ConfigError


def _cache_home(env: Mapping[str, str]) -> Path:
    if env.get("AWS_LAMBDA_FUNCTION_NAME"):
        return Path("/tmp")  # the only writable local disk on Lambda
    base = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME") or Path.home()) / ".cache")
    return Path(base)


def _float(env: Mapping[str, str], name: str, default: float, *, minimum: float = 0.0) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number of seconds, got {raw!r}") from None
    if not value > minimum:
        raise ConfigError(f"{name} must be greater than {minimum:g}, got {raw!r}")
    return value


def _int(env: Mapping[str, str], name: str, default: int, *, minimum: int = 1) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a whole number, got {raw!r}") from None
    if value < minimum:
        raise ConfigError(f"{name} must be at least {minimum}, got {raw!r}")
    return value


def _switch(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("on", "true", "1", "yes"):
        return True
    if raw in ("off", "false", "0", "no"):
        return False
    raise ConfigError(f"{name} must be on or off, got {raw!r}")


def _storage_root(env: Mapping[str, str], name: str, default: Path) -> Path:
    """A directory codeask writes below: what stands on its path must be a directory or absent,
    so that a file or device there (or at XDG_CACHE_HOME) stops start-up with its name, not a
    sync half-way with a raw OSError."""
    path = Path(env.get(name) or default).expanduser()
    for part in (path, *path.parents):
        try:
            if part.is_dir():
                return path
            if part.exists() or part.is_symlink():
                source = name if env.get(name) else "XDG_CACHE_HOME or HOME"
                raise ConfigError(
                    f"{name}={str(path)!r}: {str(part)!r} is not a directory; "
                    f"point {source} at a directory codeask may write in"
                )
        except OSError as e:  # a name too long, a loop of links: unusable all the same
            raise ConfigError(f"{name}={str(path)!r} cannot be used: {e.strerror or e}") from None
    return path


def _url(value: str) -> str:
    if not value.startswith(("http://", "https://")):
        raise ConfigError(f"SLACK_API_URL must be an http(s) URL, got {value!r}")
    return value if value.endswith("/") else value + "/"


def _list(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in env.get(name, "").split(",") if p.strip())


@dataclass(frozen=True)
class Settings:
    """Every knob codeask has. Build with `Settings.from_env`; see README "Settings"."""

    mirror_root: Path
    snapshot_root: Path
    deny_paths: tuple[str, ...] = ()
    rg_path: str | None = None
    search_timeout_s: float = 10.0
    lock_timeout_s: float = 120.0
    git_timeout_s: float = 20.0
    snapshots_keep: int = 3
    anthropic_api_key: str | None = field(default=None, repr=False)
    anthropic_base_url: str | None = None
    provider: str = "anthropic"
    aws_region: str | None = None
    bedrock_base_url: str | None = None
    model: str = "claude-sonnet-5"
    deadline_s: float | None = None
    max_rounds: int = 12
    max_output_tokens: int = 4096
    max_cost_usd: float = 0.50
    prices_json: str | None = None
    # Slack and AWS wiring (the deployed bot); secrets may instead come from Secrets Manager.
    slack_signing_secret: str | None = field(default=None, repr=False)
    slack_bot_token: str | None = field(default=None, repr=False)
    git_token: str | None = field(default=None, repr=False)
    slack_api_url: str = "https://slack.com/api/"
    secrets_arn: str | None = None
    queue_url: str | None = None
    table_name: str | None = None
    bot_config: BotConfig | None = None
    answer_margin_s: float = 20.0
    max_receives: int = 3  # the jobs queue's maxReceiveCount: the worker's last attempt
    # The answer worker's Lambda timeout: a job's lease runs this long (state.lease_s). Lambda's
    # longest by default, so a run without the template never takes a live worker's job.
    worker_timeout_s: float = 900.0
    # Whether answers are shown in Slack while they are written, and how often what is new is
    # sent on (see slack_stream.py for the measurements).
    stream: bool = True
    stream_append_s: float = 0.6
    stream_edit_s: float = 2.0

    @property
    def has_model(self) -> bool:
        """Whether a model can be called at all; without one, answers are search-only."""
        return self.provider == "bedrock" or bool(self.anthropic_api_key)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        cache = _cache_home(env) / "codeask"
        mirror_root = _storage_root(env, "MIRROR_ROOT", cache / "mirrors")
        snapshot_root = _storage_root(env, "SNAPSHOT_ROOT", cache / "snapshots")
        rg_path = env.get("RG_PATH") or None
        if rg_path and not Path(rg_path).is_file():
            raise ConfigError(f"RG_PATH={rg_path!r} is not a file; point it at a ripgrep binary")
        deadline = env.get("CODEASK_DEADLINE_S", "").strip()
        provider = (env.get("CODEASK_PROVIDER") or "anthropic").strip().lower()
        if provider not in ("anthropic", "bedrock"):
            raise ConfigError(
                f"CODEASK_PROVIDER must be 'anthropic' or 'bedrock', got {provider!r}"
            )
        if provider == "bedrock" and not (env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")):
            raise ConfigError("CODEASK_PROVIDER=bedrock needs AWS_REGION")
        return cls(
            mirror_root=mirror_root,
            snapshot_root=snapshot_root,
            deny_paths=_list(env, "CODEASK_DENY_PATHS"),
            rg_path=rg_path,
            search_timeout_s=_float(env, "CODEASK_SEARCH_TIMEOUT_S", 10.0),
            lock_timeout_s=_float(env, "CODEASK_LOCK_TIMEOUT_S", 120.0),
            git_timeout_s=_float(env, "CODEASK_GIT_TIMEOUT_S", 20.0),
            snapshots_keep=_int(env, "CODEASK_SNAPSHOTS_KEEP", 3),
            anthropic_api_key=env.get("ANTHROPIC_API_KEY") or None,
            anthropic_base_url=env.get("ANTHROPIC_BASE_URL") or None,
            provider=provider,
            aws_region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None,
            bedrock_base_url=env.get("ANTHROPIC_BEDROCK_BASE_URL") or None,
            model=env.get("CODEASK_MODEL") or "claude-sonnet-5",
            deadline_s=_float(env, "CODEASK_DEADLINE_S", 0.0) if deadline else None,
            max_rounds=_int(env, "CODEASK_MAX_ROUNDS", 12),
            max_output_tokens=_int(env, "CODEASK_MAX_OUTPUT_TOKENS", 4096, minimum=256),
            max_cost_usd=_float(env, "CODEASK_MAX_COST_USD", 0.50),
            prices_json=env.get("CODEASK_PRICES") or None,
            slack_signing_secret=env.get("SLACK_SIGNING_SECRET") or None,
            slack_bot_token=env.get("SLACK_BOT_TOKEN") or None,
            git_token=env.get("GIT_TOKEN") or None,
            slack_api_url=_url(env.get("SLACK_API_URL") or "https://slack.com/api/"),
            secrets_arn=env.get("SECRETS_ARN") or None,
            queue_url=env.get("QUEUE_URL") or None,
            table_name=env.get("TABLE_NAME") or None,
            bot_config=BotConfig.load(env["CODEASK_CONFIG"]) if env.get("CODEASK_CONFIG") else None,
            answer_margin_s=_float(env, "CODEASK_ANSWER_MARGIN_S", 20.0),
            max_receives=_int(env, "CODEASK_MAX_RECEIVES", 3),
            worker_timeout_s=_float(env, "CODEASK_WORKER_TIMEOUT_S", 900.0),
            stream=_switch(env, "CODEASK_STREAM", True),
            stream_append_s=_float(env, "CODEASK_STREAM_APPEND_S", 0.6),
            stream_edit_s=_float(env, "CODEASK_STREAM_EDIT_S", 2.0),
        )
