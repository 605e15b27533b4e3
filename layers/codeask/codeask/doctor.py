"""`codeask doctor`: check a configuration end to end, one line per check, each failure with its fix.

Every check is a small function returning a `Check`. A failing check does not stop the others
unless it makes them meaningless (no settings, no Slack auth, no CODEASK_CONFIG); those are then
reported as not run, with why. No secret is ever printed, not even in part: the messages are built
from what is known about a value (set, where from, its shape), and every line is scrubbed of the
secret values before it leaves this module.
"""

from __future__ import annotations

import dataclasses
import fcntl
import functools
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from codeask.botconfig import BotConfig
from codeask.clients import SlackClient
from codeask.errors import BadInput, ConfigError, first_line
from codeask.secrets import SECRET_KEYS
from codeask.settings import Settings

# The bot token scopes the code needs, exactly as slack/manifest.yaml grants them (oauth_config.
# scopes.bot; tests/unit/test_manifest.py keeps the two in sync): app_mention events; the
# message.channels, message.groups and message.im events (thread follow-ups in public and private
# channels, and the refusal in a DM); chat.postMessage/update/postEphemeral and
# assistant.threads.setStatus (chat:write is enough for it, and the worker falls back to edits).
REQUIRED_SCOPES: tuple[str, ...] = (
    "app_mentions:read",
    "channels:history",
    "groups:history",
    "im:history",
    "chat:write",
)
# Only the doctor calls conversations.info: public channels need channels:read, private ones
# groups:read. Without them it cannot look at the channels (reported there, not here).
CHANNEL_CHECK_SCOPES: tuple[str, ...] = ("channels:read", "groups:read")

SLACK_APP_PAGE = "api.slack.com/apps → your app"
_CONFIG_EXAMPLE = (
    '{"repos": {"billing": {"url": "https://github.com/acme/billing.git", "branch": "main"}}, '
    '"channels": {"C0123ABCD": ["billing"]}}'
)
_SECRET_FIELDS = SECRET_KEYS  # variable -> Settings field
# Slack token kinds by prefix, so a wrong token is named without echoing any of it.
_SLACK_TOKEN_KINDS = {
    "xoxp-": "a user token",
    "xapp-": "an app-level token",
    "xoxe": "a refresh or configuration token",
    "xoxa-": "a workspace token",
    "xoxs-": "a session token",
}
_HEX_RE = re.compile(r"[0-9a-fA-F]+")
_MODEL_TIMEOUT_S = 30.0
_MIN_SCRUB_LEN = 4


@dataclass(frozen=True)
class Check:
    """One line of the report. `skipped` with `ok` is "not applicable"; without it, "not run"."""

    name: str
    ok: bool
    detail: str
    fix: str | None = None
    skipped: bool = False

    @property
    def status(self) -> str:
        if self.skipped:
            return "not applicable" if self.ok else "not run"
        return "passed" if self.ok else "failed"

    def line(self) -> str:
        if self.skipped:
            return f"– {self.name} — skipped: {self.detail}"
        text = f"{'✓' if self.ok else '✗'} {self.name} — {self.detail}"
        if self.fix and not self.ok:
            text += f" → {self.fix}"
        return text

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "ok": self.ok,
            "status": self.status,
            "detail": self.detail,
            "fix": self.fix,
        }


def _passed(name: str, detail: str) -> Check:
    return Check(name, True, detail)


def _failed(name: str, detail: str, fix: str | None) -> Check:
    return Check(name, False, detail, fix)


def _not_applicable(name: str, why: str) -> Check:
    return Check(name, True, why, skipped=True)


def _not_run(name: str, why: str) -> Check:
    return Check(name, False, why, skipped=True)


@dataclass
class _Run:
    """What the checks learn as they go, so later ones know whether they are meaningful."""

    env: Mapping[str, str]
    settings: Settings | None = None  # with CODEASK_CONFIG and the secrets, once known
    settings_from_env: Settings | None = None  # before Secrets Manager
    config: BotConfig | None = None
    config_problem: str | None = None
    secrets_problem: str | None = None
    slack: SlackClient | None = None
    bot_name: str = "codeask"
    scopes: frozenset[str] | None = None
    slack_problem: str | None = None

    @property
    def on_lambda(self) -> bool:
        return bool(self.env.get("AWS_LAMBDA_FUNCTION_NAME"))


# ---- 1. settings and CODEASK_CONFIG ----------------------------------------------------------


def check_settings(run: _Run) -> Check:
    """Every setting except CODEASK_CONFIG (checked on its own line) parses."""
    try:
        s = Settings.from_env({k: v for k, v in run.env.items() if k != "CODEASK_CONFIG"})
    except ConfigError as e:
        return _failed("settings", str(e), "fix that variable (README: Settings) and run again")
    run.settings_from_env = run.settings = s
    return _passed(
        "settings",
        f"parsed; provider {s.provider}, model {s.model}, git timeout {s.git_timeout_s:g} s",
    )


def check_config(run: _Run) -> Check:
    raw = run.env.get("CODEASK_CONFIG", "")
    if not raw.strip():
        run.config_problem = "CODEASK_CONFIG is not set"
        return _failed(
            "config",
            "CODEASK_CONFIG is not set: every channel would be refused",
            f"set it to JSON like {_CONFIG_EXAMPLE}, or to the path of such a file",
        )
    try:
        config = BotConfig.load(raw)
    except ConfigError as e:
        run.config_problem = "CODEASK_CONFIG is not valid"
        return _failed("config", str(e), "fix CODEASK_CONFIG (README: Deploying)")
    run.config = config
    if run.settings is not None:
        run.settings = run.settings_from_env = dataclasses.replace(run.settings, bot_config=config)
    if not config.channels:
        return _failed(
            "config",
            f"{_count(len(config.repos), 'repo')} but no channels: every question would be refused",
            'list the channels that may ask in "channels": {"C0123ABCD": ["repo", ...]}',
        )
    unused = sorted(set(config.repos) - {n for ns in config.channels.values() for n in ns})
    detail = f"{_count(len(config.repos), 'repo')}, {_count(len(config.channels), 'channel')}"
    if config.team_id:
        detail += f", workspace {config.team_id}"
    if unused:
        detail += f" (no channel may ask about {', '.join(unused)})"
    return _passed("config", detail)


# ---- 2. secrets --------------------------------------------------------------------------------


def check_secrets_manager(run: _Run) -> Check:
    from codeask.secrets import with_secrets

    base = run.settings
    assert base is not None
    if not base.secrets_arn:
        return _not_applicable(
            "secrets manager", "SECRETS_ARN is not set; secrets come from the environment"
        )
    try:
        run.settings = with_secrets(base)
    except ConfigError as e:
        run.secrets_problem = "the secret at SECRETS_ARN could not be read"
        return _failed(
            "secrets manager",
            str(e) + _secret_error_code(base.secrets_arn),
            "check SECRETS_ARN, that the secret exists in this region (AWS_REGION), and that "
            "this role may secretsmanager:GetSecretValue on it",
        )
    filled = [
        key
        for key, attr in _SECRET_FIELDS.items()
        if getattr(run.settings, attr) and not getattr(base, attr)
    ]
    return _passed(
        "secrets manager",
        f"read SECRETS_ARN; it supplied {', '.join(filled) if filled else 'nothing the environment lacked'}",
    )


def _secret_error_code(arn: str) -> str:
    """Why Secrets Manager refused, which the powertools error hides: its AWS error code."""
    try:
        _aws("secretsmanager").describe_secret(SecretId=arn)
    except Exception as e:  # noqa: BLE001 - only the code is wanted
        return f" ({_aws_error(e)[0]})"
    return ""


def _source(run: _Run, key: str) -> tuple[str | None, str]:
    attr = _SECRET_FIELDS[key]
    base = getattr(run.settings_from_env, attr, None)
    value = getattr(run.settings, attr, None)
    if base:
        return value, "set (from env)"
    if value:
        return value, "set (from Secrets Manager)"
    return None, "missing"


def _missing_fix(run: _Run, key: str) -> str:
    where = "the environment"
    if run.settings is not None and run.settings.secrets_arn:
        where += " or the SECRETS_ARN secret"
    return f"set {key} in {where}"


def _missing(run: _Run, consequence: str) -> str:
    if run.secrets_problem:
        return f"missing ({run.secrets_problem}): {consequence}"
    return f"missing: {consequence}"


def _whitespace_problem(value: str) -> str | None:
    if value != value.strip():
        return "has leading or trailing whitespace (a copy-paste slip?)"
    return None


def check_signing_secret(run: _Run) -> Check:
    key, name = "SLACK_SIGNING_SECRET", "secret SLACK_SIGNING_SECRET"
    value, source = _source(run, key)
    if value is None:
        return _failed(
            name, _missing(run, "Slack's requests cannot be verified"), _missing_fix(run, key)
        )
    fix = f"copy the Signing Secret from {SLACK_APP_PAGE} → Basic Information → App Credentials"
    problem = _whitespace_problem(value)
    if problem is None and not _HEX_RE.fullmatch(value):
        problem = (
            f"does not look like a Slack signing secret (expected 32 hex characters; "
            f"this one has {len(value)} characters, not all hex)"
        )
    if problem:
        return _failed(name, f"{source}, but {problem}", fix)
    if len(value) != 32:
        return _passed(name, f"{source} ({len(value)} hex characters; Slack's are usually 32)")
    return _passed(name, f"{source}, 32 hex characters")


def check_bot_token(run: _Run) -> Check:
    key, name = "SLACK_BOT_TOKEN", "secret SLACK_BOT_TOKEN"
    value, source = _source(run, key)
    if value is None:
        return _failed(name, _missing(run, "the bot cannot post"), _missing_fix(run, key))
    fix = f"use the Bot User OAuth Token (xoxb-…) from {SLACK_APP_PAGE} → OAuth & Permissions"
    problem = _whitespace_problem(value)
    if problem is None and not value.startswith("xoxb-"):
        kind = next((k for p, k in _SLACK_TOKEN_KINDS.items() if value.startswith(p)), None)
        problem = f"is {kind}, not a bot token" if kind else "does not start with xoxb-"
    if problem:
        return _failed(name, f"{source}, but {problem}", fix)
    return _passed(name, f"{source}, a bot token (xoxb-)")


def check_anthropic_key(run: _Run) -> Check:
    key, name = "ANTHROPIC_API_KEY", "secret ANTHROPIC_API_KEY"
    value, source = _source(run, key)
    s = run.settings
    assert s is not None
    if s.provider == "bedrock":
        note = "set, but unused" if value else "not needed"
        return _passed(name, f"{note}: CODEASK_PROVIDER=bedrock uses the AWS role")
    if value is None:
        return _not_applicable(
            name,
            "not set: answers will be search-only (set it, or CODEASK_PROVIDER=bedrock, "
            "for Claude's answers)",
        )
    problem = _whitespace_problem(value)
    if problem is None and not value.startswith("sk-ant-"):
        problem = "does not start with sk-ant-"
    if problem:
        return _failed(
            name,
            f"{source}, but {problem}",
            "create an API key in the Claude Console (console.anthropic.com → API keys)",
        )
    return _passed(name, f"{source}, an Anthropic API key (sk-ant-)")


def check_git_token(run: _Run) -> Check:
    key, name = "GIT_TOKEN", "secret GIT_TOKEN"
    value, source = _source(run, key)
    if value is None:
        return _passed(name, "not set: only public https:// remotes can be fetched")
    problem = _whitespace_problem(value)
    if problem:
        return _failed(name, f"{source}, but {problem}", "store the token without whitespace")
    return _passed(name, f"{source}; used as the password for https:// remotes")


# ---- 3. Slack auth and scopes ------------------------------------------------------------------

_SLACK_AUTH_FIXES = {
    "invalid_auth": "the token was rejected → copy the Bot User OAuth Token (xoxb-…) from "
    f"{SLACK_APP_PAGE} → OAuth & Permissions into SLACK_BOT_TOKEN",
    "not_authed": "no token reached Slack → set SLACK_BOT_TOKEN",
    "token_revoked": "the token was revoked → reinstall the app to the workspace and store the "
    "new Bot User OAuth Token",
    "token_expired": "the token expired → turn off token rotation for the app, or store a fresh "
    "Bot User OAuth Token",
    "account_inactive": "the app or its workspace is no longer active → reinstall the app",
}


def _header(headers: Mapping[str, Any] | None, name: str) -> str | None:
    for key, value in (headers or {}).items():
        if key.lower() == name:
            return value[0] if isinstance(value, list) and value else str(value)
    return None


def _slack_error(e: Exception) -> str:
    response = getattr(e, "response", None)
    try:
        error = response.get("error") if response is not None else None
    except (AttributeError, TypeError):
        error = None
    return str(error) if error else f"{type(e).__name__}: {first_line(e, 200)}"


def check_slack_auth(run: _Run) -> Check:
    from slack_sdk.errors import SlackApiError

    from codeask import clients

    s = run.settings
    assert s is not None
    name = "slack auth"
    if not s.slack_bot_token:
        run.slack_problem = "there is no SLACK_BOT_TOKEN"
        return _not_run(name, run.slack_problem)
    client = clients.slack(s.slack_bot_token, s.slack_api_url)
    try:
        resp = client.auth_test()
    except SlackApiError as e:
        error = _slack_error(e)
        run.slack_problem = f"auth.test failed ({error})"
        detail, _, fix = _SLACK_AUTH_FIXES.get(error, "").partition(" → ")
        return _failed(
            name,
            f"auth.test failed: {error}" + (f" — {detail}" if detail else ""),
            fix or "check SLACK_BOT_TOKEN and that the app is installed in the workspace",
        )
    except Exception as e:  # noqa: BLE001 - a network failure is a finding, not a crash
        run.slack_problem = "Slack could not be reached"
        return _failed(
            name,
            f"cannot reach Slack at {s.slack_api_url}: {type(e).__name__}: {first_line(e, 200)}",
            "check SLACK_API_URL and the network (on Lambda: the NAT gateway)",
        )
    data = resp.data if isinstance(resp.data, dict) else {}
    raw_scopes = _header(resp.headers, "x-oauth-scopes")
    run.scopes = (
        frozenset(p.strip() for p in raw_scopes.split(",") if p.strip())
        if raw_scopes is not None
        else None
    )
    run.slack = client
    run.bot_name = str(data.get("user") or "codeask")
    user, team = data.get("user_id", "?"), data.get("team_id", "?")
    scopes = _count(len(run.scopes), "scope") if run.scopes is not None else "scopes unknown"
    if not data.get("bot_id"):
        run.slack_problem = "the token is not a bot's"
        return _failed(
            name,
            f"{user} in {team} is not a bot user",
            f"use the Bot User OAuth Token (xoxb-…) from {SLACK_APP_PAGE} → OAuth & Permissions",
        )
    config = run.config
    if config is not None and config.team_id and config.team_id != team:
        return _failed(
            name,
            f"bot {user} is in {team}, but CODEASK_CONFIG pins the workspace {config.team_id}",
            f"install the app in {config.team_id}, or fix team_id in CODEASK_CONFIG",
        )
    return _passed(name, f"bot {user} in {team} ({scopes})")


def check_slack_scopes(run: _Run) -> Check:
    name = "slack scopes"
    if run.slack is None:
        return _not_run(name, run.slack_problem or "Slack auth failed")
    if run.scopes is None:
        return _failed(
            name,
            "Slack did not say which scopes the token has (no x-oauth-scopes header)",
            "check that SLACK_API_URL points at Slack's Web API",
        )
    missing = [sc for sc in REQUIRED_SCOPES if sc not in run.scopes]
    if missing:
        return _failed(
            name,
            f"missing {', '.join(missing)}",
            f"add {'it' if len(missing) == 1 else 'them'} under {SLACK_APP_PAGE} → OAuth & "
            "Permissions → Bot Token Scopes (or in slack/manifest.yaml), then reinstall the app",
        )
    detail = f"all {len(REQUIRED_SCOPES)} required scopes granted"
    lacking = [sc for sc in CHANNEL_CHECK_SCOPES if sc not in run.scopes]
    if lacking:
        detail += f"; {' and '.join(lacking)} not, so doctor may not see the channels"
    return _passed(name, detail)


# ---- 4. channels -------------------------------------------------------------------------------


def check_channel(run: _Run, channel_id: str) -> Check:
    from slack_sdk.errors import SlackApiError

    name = f"channel {channel_id}"
    if run.slack is None:
        return _not_run(name, run.slack_problem or "Slack auth failed")
    invite = f"invite it: /invite @{run.bot_name}"
    try:
        resp = run.slack.conversations_info(channel=channel_id)
    except SlackApiError as e:
        error = _slack_error(e)
        if error == "channel_not_found":
            return _failed(
                name,
                "not found (a wrong ID, or a private channel the bot is not in)",
                "check the ID in CODEASK_CONFIG (channel details → About → Channel ID); for a "
                f"private channel, {invite}",
            )
        if error == "missing_scope":
            return _not_run(
                name,
                "the token lacks channels:read (groups:read for a private channel), so doctor "
                "cannot look; add it and reinstall, or check by hand that the bot is a member",
            )
        return _failed(name, f"conversations.info failed: {error}", "check the channel ID")
    except Exception as e:  # noqa: BLE001 - a network failure is a finding, not a crash
        return _failed(
            name, f"cannot reach Slack: {type(e).__name__}: {first_line(e, 200)}", "try again"
        )
    info = resp.get("channel") or {}
    label = f"#{info['name']}" if info.get("name") else "the channel"
    if info.get("is_archived"):
        return _failed(
            name, f"{label} is archived", "unarchive it, or remove it from CODEASK_CONFIG"
        )
    if info.get("is_ext_shared") or info.get("is_pending_ext_shared"):
        return _failed(
            name,
            f"{label} is a Slack Connect channel (shared with another organisation); "
            "codeask refuses questions there",
            "use an internal channel, or remove it from CODEASK_CONFIG",
        )
    if not info.get("is_member"):
        return _failed(name, "the bot is not a member", f"{invite} (in {label})")
    repos = [e.name for e in (run.config.repos_for(channel_id) or [])] if run.config else []
    return _passed(name, f"{label}, the bot is a member; may ask about {', '.join(repos)}")


# ---- 5. repositories ---------------------------------------------------------------------------


@contextmanager
def _git_timeouts(seconds: float) -> Iterator[None]:
    """libgit2's connect and read timeouts are process-wide; set them for the check, then restore."""
    import pygit2

    ms = max(1, int(seconds * 1000))
    old = (pygit2.settings.server_connect_timeout, pygit2.settings.server_timeout)
    pygit2.settings.server_connect_timeout = ms
    pygit2.settings.server_timeout = ms
    try:
        yield
    finally:
        pygit2.settings.server_connect_timeout, pygit2.settings.server_timeout = old


def check_repo(run: _Run, repo_name: str) -> Check:
    import pygit2

    from codeask.mirror import TAG_PREFIX, RepoSpec, pick_ref, redact_url, token_callbacks

    s, config = run.settings, run.config
    assert s is not None and config is not None
    name = f"repo {repo_name}"
    entry = config.repos[repo_name]
    try:
        spec = RepoSpec.parse(entry.url, branch=entry.branch, name=repo_name)
    except BadInput as e:
        return _failed(name, str(e), f"fix repos.{repo_name} in CODEASK_CONFIG")
    shown = redact_url(spec.url)
    callbacks = token_callbacks(s.git_token)(spec) if s.git_token else None
    started = time.monotonic()
    try:
        with _git_timeouts(s.git_timeout_s):
            # An in-memory repository's anonymous remote: the refs only, nothing fetched or written.
            remote = pygit2.Repository().remotes.create_anonymous(spec.url)
            heads = remote.list_heads(callbacks=callbacks)
    except pygit2.GitError as e:
        reason = first_line(e, 200).replace(spec.url, shown)
        auth = re.search(r"auth|credential|401|403|permission|publickey", reason, re.I)
        if auth and spec.url.lower().startswith("https://"):
            fix = "set GIT_TOKEN to a read-only token for this host (or check the one set)"
        elif auth:
            fix = "give this environment access to the repository (a deploy key for ssh)"
        else:
            fix = (
                "check the URL, that the host is reachable from here (on Lambda: the NAT "
                f"gateway), and CODEASK_GIT_TIMEOUT_S ({s.git_timeout_s:g} s)"
            )
        took = time.monotonic() - started
        return _failed(name, f"cannot reach {shown} ({took:.1f} s): {reason}", fix)
    try:
        # The same rule a sync uses: the configured branch (or tag), else the remote's default.
        branch, _ref, oid = pick_ref(spec, heads)
    except BadInput as e:
        which = (
            f'"branch" of repos.{repo_name}' if spec.branch else f'a "branch" for repos.{repo_name}'
        )
        return _failed(name, str(e), f"set {which} in CODEASK_CONFIG to an existing branch")
    if branch.startswith(TAG_PREFIX):
        how = f"tag {branch.removeprefix(TAG_PREFIX)}"
    else:
        how = f"branch {branch}" if spec.branch else f"default branch {branch}"
    return _passed(name, f"{shown}: {how} at {str(oid)[:7]}")


# ---- 6. directories ----------------------------------------------------------------------------


def _check_writable(name: str, variable: str, path: Path, *, lock: bool, fix: str) -> Check:
    if path.exists() and not path.is_dir():
        return _failed(name, f"{variable}={path} is not a directory", fix)
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".codeask-doctor-", dir=path)
        try:
            os.write(fd, b"codeask doctor\n")
            if lock:
                # Mirrors are serialised with fcntl locks, which must work here (EFS: NFSv4).
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.lockf(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
            os.unlink(tmp)
    except OSError as e:
        why = e.strerror or type(e).__name__
        return _failed(name, f"{variable}={path} is not writable ({why})", fix)
    free = shutil.disk_usage(path).free / 1e9
    locks = ", file locks work" if lock else ""
    return _passed(name, f"{path} is writable{locks}; {free:.1f} GB free")


def check_mirror_root(run: _Run) -> Check:
    s = run.settings
    assert s is not None
    fix = "make it writable by this user, or point MIRROR_ROOT elsewhere"
    if run.on_lambda:
        fix += " (on Lambda: the EFS access point's POSIX user must own the mount)"
    return _check_writable("mirror root", "MIRROR_ROOT", s.mirror_root, lock=True, fix=fix)


def check_snapshot_root(run: _Run) -> Check:
    s = run.settings
    assert s is not None
    fix = "make it writable by this user, or point SNAPSHOT_ROOT elsewhere"
    if run.on_lambda:
        fix += " (on Lambda only /tmp is writable local disk)"
    check = _check_writable("snapshot root", "SNAPSHOT_ROOT", s.snapshot_root, lock=False, fix=fix)
    if check.ok and any(s.snapshot_root.iterdir()):
        from codeask.mirror.diskuse import disk_usage

        # Snapshots of one repo share their unchanged files: count each file once.
        check = replace(
            check, detail=f"{check.detail}; snapshots: {disk_usage(s.snapshot_root).line()}"
        )
    return check


# ---- 7. ripgrep and the git backend ------------------------------------------------------------


def check_ripgrep(run: _Run) -> Check:
    from codeask.search.ripgrep import RipgrepMissing, find_rg

    s = run.settings
    assert s is not None
    name = "ripgrep"
    configured = s.rg_path
    point = "point RG_PATH at a ripgrep binary, or unset it to use the one installed with codeask"
    try:
        rg = find_rg(configured)
    except RipgrepMissing as e:
        return _failed(
            name, str(e), "pip install ripgrep, or set RG_PATH (on Lambda: the ripgrep layer)"
        )
    if configured and os.path.realpath(rg) != os.path.realpath(configured):
        return _failed(
            name, f"RG_PATH={configured} is not executable; codeask falls back to {rg}", point
        )
    try:
        done = subprocess.run(
            [rg, "--version"], capture_output=True, timeout=10, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError) as e:
        return _failed(
            name,
            f"{rg} does not run: {type(e).__name__}: {first_line(e, 200)}",
            f"{point} (for this machine's architecture)",
        )
    first = (done.stdout.decode("utf-8", "replace").splitlines() or [""])[0].strip()
    if done.returncode != 0 or not first.startswith("ripgrep"):
        return _failed(
            name, f"{rg} is not ripgrep (`--version` exited {done.returncode}: {first!r})", point
        )
    return _passed(name, f"{first} at {rg}")


def _needs_ssh(config: BotConfig | None) -> bool:
    if config is None:
        return False
    return any(
        e.url.lower().startswith("ssh://") or ("://" not in e.url and "@" in e.url.split(":")[0])
        for e in config.repos.values()
    )


def check_git_backend(run: _Run) -> Check:
    name = "git backend"
    try:
        import pygit2
        from pygit2.enums import Feature
    except ImportError as e:
        return _failed(
            name,
            f"pygit2 cannot be imported: {e}",
            "pip install pygit2 (its wheels bundle libgit2)",
        )
    have = [f.name or str(f) for f in Feature if pygit2.features & f]
    missing = []
    if not pygit2.features & Feature.HTTPS:
        missing.append("HTTPS")
    if not pygit2.features & Feature.SSH and _needs_ssh(run.config):
        missing.append("SSH (a configured repo uses ssh)")
    detail = f"pygit2 {pygit2.__version__}, libgit2 {pygit2.LIBGIT2_VERSION} ({', '.join(have)})"
    if missing:
        return _failed(
            name,
            f"{detail}; built without {', '.join(missing)}",
            "install pygit2 from its wheels, which bundle libgit2 with HTTPS and SSH",
        )
    return _passed(name, detail)


# ---- 8. the model ------------------------------------------------------------------------------


def check_model(run: _Run) -> Check:
    s = run.settings
    assert s is not None
    name = "model"
    if not s.has_model:
        return _not_applicable(name, "no ANTHROPIC_API_KEY: search-only mode, no model to call")
    try:
        import anthropic

        from codeask.model import make_client

        client = make_client(s)
    except (ImportError, ConfigError) as e:
        return _failed(name, f"no client: {e}", "pip install anthropic (the codeask layer has it)")
    bedrock = s.provider == "bedrock"
    where = f"Bedrock in {s.aws_region}" if bedrock else "the Anthropic API"
    started = time.monotonic()
    try:
        client.messages.create(
            model=s.model,
            max_tokens=1,
            messages=[{"role": "user", "content": "Reply with OK."}],
            timeout=_MODEL_TIMEOUT_S,
        )
    except anthropic.AuthenticationError as e:
        fix = (
            "check the function role's AWS credentials"
            if bedrock
            else "check ANTHROPIC_API_KEY; create a new key in the Claude Console if it was revoked"
        )
        return _failed(name, f"{where} rejected the credentials ({_api_error(e)})", fix)
    except anthropic.PermissionDeniedError as e:
        fix = (
            "allow bedrock:InvokeModel on this model for the role, and enable the model under "
            "Bedrock → Model access"
            if bedrock
            else "check the key's workspace and organisation permissions in the Claude Console"
        )
        return _failed(name, f"{where} refused access ({_api_error(e)})", fix)
    except anthropic.NotFoundError as e:
        return _failed(
            name,
            f"{where} does not know the model {s.model!r} ({_api_error(e)})",
            "set CODEASK_MODEL to a model id this account can use",
        )
    except anthropic.APIStatusError as e:
        transient = e.status_code in (408, 409, 429) or e.status_code >= 500
        fix = (
            "the provider is busy or failing; try again shortly"
            if transient
            else "check CODEASK_MODEL and the provider settings"
        )
        return _failed(name, f"{where} answered {_api_error(e)}", fix)
    except anthropic.APIConnectionError as e:
        base = (s.bedrock_base_url if bedrock else s.anthropic_base_url) or "the default endpoint"
        return _failed(
            name,
            f"cannot reach {where} at {base}: {type(e).__name__}",
            "check the network (on Lambda: the NAT gateway)"
            + (", AWS_REGION" if bedrock else ", ANTHROPIC_BASE_URL"),
        )
    except Exception as e:  # noqa: BLE001 - e.g. botocore without credentials, for Bedrock
        return _failed(
            name,
            f"{where} call failed: {type(e).__name__}: {first_line(e, 200)}",
            "check the provider settings (CODEASK_PROVIDER, AWS_REGION, credentials)",
        )
    ms = (time.monotonic() - started) * 1000
    return _passed(name, f"{s.model} answered a one-token request via {where} in {ms:.0f} ms")


def _api_error(e: Any) -> str:
    status = getattr(e, "status_code", None)
    body = getattr(e, "body", None)
    message = ""
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict):
            message = str(err.get("message") or err.get("type") or "")
        elif "message" in body:
            message = str(body["message"])
    message = (message or first_line(e, 200))[:160]
    return f"{status} {message}" if status else message


# ---- 9. queue and table ------------------------------------------------------------------------


def _aws(service: str) -> Any:
    """A client that fails fast: the doctor must not sit through boto3's default minute of retries."""
    import boto3
    from botocore.config import Config

    config = Config(connect_timeout=5, read_timeout=10, retries={"max_attempts": 2})
    return boto3.client(service, config=config)


def _aws_error(e: Exception) -> tuple[str, str]:
    response = getattr(e, "response", None)
    if isinstance(response, dict):
        err = response.get("Error") or {}
        return str(err.get("Code") or "error"), str(err.get("Message") or "")[:160]
    return type(e).__name__, first_line(e, 200)


def _unset(run: _Run, name: str, variable: str, what: str) -> Check:
    if run.on_lambda:
        return _failed(
            name,
            f"{variable} is not set",
            f"the template sets {variable} to the {what}; redeploy, or set it on the function",
        )
    return _not_applicable(
        name,
        f"{variable} is not set (fine locally; the deployed functions get it from the template)",
    )


def check_queue(run: _Run) -> Check:
    s = run.settings
    assert s is not None
    name = "queue"
    if not s.queue_url:
        return _unset(run, name, "QUEUE_URL", "jobs queue's URL")
    shown = s.queue_url.rstrip("/").rsplit("/", 1)[-1]
    try:
        attrs = _aws("sqs").get_queue_attributes(
            QueueUrl=s.queue_url, AttributeNames=["VisibilityTimeout", "RedrivePolicy"]
        )["Attributes"]
    except Exception as e:  # noqa: BLE001 - ClientError or BotoCoreError: both are findings
        code, message = _aws_error(e)
        if "NonExistentQueue" in code or "QueueDoesNotExist" in code:
            return _failed(
                name,
                f"the queue {shown} does not exist ({code})",
                "set QUEUE_URL to the stack's jobs queue URL (and AWS_REGION to its region)",
            )
        if "AccessDenied" in code:
            return _failed(
                name, f"access denied to {shown}", "allow sqs:GetQueueAttributes for this role"
            )
        return _failed(
            name,
            f"cannot check {shown}: {code} {message}".rstrip(),
            "check QUEUE_URL, AWS credentials, AWS_REGION and the network",
        )
    detail = f"{shown}, visibility timeout {attrs.get('VisibilityTimeout', '?')} s"
    detail += (
        ", with a dead-letter queue" if attrs.get("RedrivePolicy") else ", no dead-letter queue"
    )
    return _passed(name, detail)


def check_table(run: _Run) -> Check:
    s = run.settings
    assert s is not None
    name = "table"
    if not s.table_name:
        return _unset(run, name, "TABLE_NAME", "state table's name")
    try:
        table = _aws("dynamodb").describe_table(TableName=s.table_name)["Table"]
    except Exception as e:  # noqa: BLE001 - ClientError or BotoCoreError: both are findings
        code, message = _aws_error(e)
        if code == "ResourceNotFoundException":
            return _failed(
                name,
                f"the table {s.table_name} does not exist",
                "set TABLE_NAME to the stack's state table (and AWS_REGION to its region)",
            )
        if "AccessDenied" in code:
            return _failed(
                name,
                f"access denied to {s.table_name}",
                "allow dynamodb:DescribeTable for this role",
            )
        return _failed(
            name,
            f"cannot check {s.table_name}: {code} {message}".rstrip(),
            "check TABLE_NAME, AWS credentials, AWS_REGION and the network",
        )
    status = table.get("TableStatus", "?")
    if status not in ("ACTIVE", "UPDATING"):
        return _failed(name, f"{s.table_name} is {status}", "wait for it to become ACTIVE")
    return _passed(name, f"{s.table_name} is {status}")


# ---- running them ------------------------------------------------------------------------------


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _guarded(name: str, fn: Callable[[], Check]) -> Check:
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - one broken check must not hide the others
        return _failed(
            name, f"the check itself failed: {type(e).__name__}: {first_line(e, 200)}", None
        )


def _secret_values(run: _Run) -> set[str]:
    values = {run.env.get(key, "") for key in _SECRET_FIELDS}
    for s in (run.settings_from_env, run.settings):
        if s is not None:
            values |= {getattr(s, attr) or "" for attr in _SECRET_FIELDS.values()}
    # A value with stray whitespace could show up trimmed, so both forms are scrubbed.
    return {form for v in values for form in (v, v.strip()) if len(form.strip()) >= _MIN_SCRUB_LEN}


def _scrub(check: Check, secrets: set[str]) -> Check:
    """The last line of defence: no secret value survives in what is printed or returned."""

    def clean(text: str | None) -> str | None:
        if text is None:
            return None
        for value in sorted(secrets, key=len, reverse=True):
            text = text.replace(value, "[redacted]")
        return text

    return dataclasses.replace(
        check, detail=clean(check.detail) or "", fix=clean(check.fix), name=clean(check.name) or ""
    )


@dataclass(frozen=True)
class _Step:
    """One row of the report (one per channel or repo when `each` is set), and what it needs."""

    name: str
    check: Callable[..., Check]  # (run) -> Check, or (run, channel id / repo name) -> Check
    needs_settings: bool = True
    each: str | None = None  # "channel" or "repo": one line per configured channel or repo


# The one list of checks, in report order: what runs and what is reported as not run.
STEPS: tuple[_Step, ...] = (
    _Step("settings", check_settings, needs_settings=False),
    _Step("config", check_config, needs_settings=False),
    _Step("secrets manager", check_secrets_manager),
    _Step("secret SLACK_SIGNING_SECRET", check_signing_secret),
    _Step("secret SLACK_BOT_TOKEN", check_bot_token),
    _Step("secret ANTHROPIC_API_KEY", check_anthropic_key),
    _Step("secret GIT_TOKEN", check_git_token),
    _Step("slack auth", check_slack_auth),
    _Step("slack scopes", check_slack_scopes),
    _Step("channels", check_channel, each="channel"),
    _Step("repos", check_repo, each="repo"),
    _Step("mirror root", check_mirror_root),
    _Step("snapshot root", check_snapshot_root),
    _Step("ripgrep", check_ripgrep),
    _Step("git backend", check_git_backend, needs_settings=False),
    _Step("model", check_model),
    _Step("queue", check_queue),
    _Step("table", check_table),
)


def _run_step(step: _Step, run: _Run) -> list[Check]:
    """The step's lines: run, or "not run" with why when what it needs is missing."""
    blocked = "the settings did not parse" if step.needs_settings and run.settings is None else None
    if step.each is None:
        if blocked:
            return [_not_run(step.name, blocked)]
        return [_guarded(step.name, functools.partial(step.check, run))]
    config = run.config
    if config is None:
        return [_not_run(step.name, blocked or run.config_problem or "there is no CODEASK_CONFIG")]
    items = config.channels if step.each == "channel" else config.repos
    return [
        _not_run(f"{step.each} {item}", blocked)
        if blocked
        else _guarded(f"{step.each} {item}", functools.partial(step.check, run, item))
        for item in items
    ]


def collect_checks(settings_env: Mapping[str, str] | None = None) -> list[Check]:
    """Run every check in STEPS against `settings_env` (default: os.environ), in order; never raises.

    AWS clients (Secrets Manager, SQS, DynamoDB, Bedrock) take credentials, region and endpoint
    from the process environment, as boto3 does in the functions.
    """
    run = _Run(env=dict(os.environ if settings_env is None else settings_env))
    checks = [check for step in STEPS for check in _run_step(step, run)]
    secrets = _secret_values(run)
    return [_scrub(c, secrets) for c in checks]


def summary(checks: list[Check]) -> str:
    """ "N checks passed, M failed", with how many were not applicable or not run."""
    passed = sum(c.ok for c in checks)
    failed = sum(not c.ok and not c.skipped for c in checks)
    not_applicable = sum(c.ok and c.skipped for c in checks)
    not_run = sum(not c.ok and c.skipped for c in checks)
    text = f"{_count(passed, 'check')} passed, {failed} failed"
    notes = []
    if not_applicable:
        notes.append(f"{not_applicable} of them skipped as not applicable")
    if not_run:
        notes.append(f"{not_run} not run because an earlier check failed")
    return text + (f" ({'; '.join(notes)})" if notes else "")


def run_doctor(settings_env: Mapping[str, str] | None = None, *, out: Callable[[str], None]) -> int:
    """Check the configuration in `settings_env` (default: os.environ); 0 only if all passed."""
    checks = collect_checks(settings_env)
    for check in checks:
        out(check.line())
    out(summary(checks))
    return 0 if all(c.ok for c in checks) else 1
