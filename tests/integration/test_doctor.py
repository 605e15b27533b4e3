"""`codeask doctor` on loopback: all green, then each failure on its own, with its line and its fix."""

from __future__ import annotations

import json
import os
import re
import socket
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from codeask.doctor import REQUIRED_SCOPES, run_doctor
from fakes.messages_api import Fail, Reply, text
from fakes.slack_api import DEFAULT_SCOPES
from fakes.stack import BOT_TOKEN, CHANNEL, SIGNING_SECRET, Context, Stack, load_handler

# A well-formed signing secret in the environment wins over the stack's (not hex) one in Secrets
# Manager; the bot token and the model key come from Secrets Manager.
SIGNING_HEX = "8f14e45fceea167a5a36dedd4bea2543"
MODEL_KEY = "sk-ant-" + "e2e-test-key"  # what the stack's secret holds
WRONG_TOKEN = "xoxb-" + "9999-8888-" + "notthebotstokenatall"
USER_TOKEN = "xoxp-" + "1111-2222-" + "ausertokennotabottoken"
SECRETS = (SIGNING_HEX, SIGNING_SECRET, BOT_TOKEN, MODEL_KEY, WRONG_TOKEN, USER_TOKEN)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Doctor:
    stack: Stack
    env: dict[str, str]
    served: str  # the billing repo over git://
    repos: dict[str, dict[str, str]] = field(default_factory=dict)
    channels: dict[str, list[str]] = field(default_factory=dict)

    def run(self, **changes: str | None) -> tuple[int, list[str]]:
        env = dict(self.env)
        env["CODEASK_CONFIG"] = json.dumps({"repos": self.repos, "channels": self.channels})
        for key, value in changes.items():
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
        lines: list[str] = []
        code = run_doctor(env, out=lines.append)
        blob = "\n".join(lines)
        # No secret, nor any eight characters of one, is ever printed.
        for secret in (*SECRETS, *(v for k, v in env.items() if k.endswith(("TOKEN", "KEY")))):
            for i in range(len(secret) - 7):
                assert secret[i : i + 8] not in blob, f"part of a secret leaked:\n{blob}"
        return code, lines


def line(lines: list[str], prefix: str) -> str:
    found = [ln for ln in lines if ln.startswith(prefix)]
    assert len(found) == 1, f"expected one line starting {prefix!r} in:\n" + "\n".join(lines)
    return found[0]


@pytest.fixture
def doctor(stack: Stack, git_daemon: Any) -> Iterator[Doctor]:
    served = git_daemon.publish(stack.repo, "billing.git")
    env = dict(os.environ)
    env.update(SLACK_SIGNING_SECRET=SIGNING_HEX, CODEASK_GIT_TIMEOUT_S="5")
    env.pop("RG_PATH", None)
    stack.model.script = lambda body: Reply([text("OK")], output_tokens=1)
    yield Doctor(
        stack,
        env,
        served,
        repos={
            "billing": {"url": str(stack.repo.path), "branch": "main"},
            "served": {"url": served, "branch": "main"},
        },
        channels={CHANNEL: ["billing", "served"]},
    )


def test_all_green(doctor: Doctor) -> None:
    code, lines = doctor.run()
    assert code == 0, "\n".join(lines)
    *checks, summary = lines
    assert all(ln.startswith("✓ ") for ln in checks), "\n".join(lines)
    assert summary == f"{len(checks)} checks passed, 0 failed"
    head = doctor.stack.repo.head()[:7]
    expected = [
        "✓ settings — parsed; provider anthropic, model claude-sonnet-5, git timeout 5 s",
        "✓ config — 2 repos, 1 channel",
        "✓ secrets manager — read SECRETS_ARN; it supplied SLACK_BOT_TOKEN, ANTHROPIC_API_KEY",
        "✓ secret SLACK_SIGNING_SECRET — set (from env), 32 hex characters",
        "✓ secret SLACK_BOT_TOKEN — set (from Secrets Manager), a bot token (xoxb-)",
        "✓ secret ANTHROPIC_API_KEY — set (from Secrets Manager), an Anthropic API key (sk-ant-)",
        f"✓ slack auth — bot U0BOT in T0001 ({len(DEFAULT_SCOPES)} scopes)",
        f"✓ slack scopes — all {len(REQUIRED_SCOPES)} required scopes granted",
        f"✓ channel {CHANNEL} — #billing-dev, the bot is a member; may ask about billing, served",
        f"✓ repo billing — {doctor.stack.repo.path}: branch main at {head}",
        f"✓ repo served — {doctor.served}: branch main at {head}",
        "✓ ripgrep — ripgrep ",
        "✓ git backend — pygit2 ",
        "✓ model — claude-sonnet-5 answered a one-token request via the Anthropic API in ",
        "✓ queue — jobs-",
        f"✓ table — {doctor.stack.table} is ACTIVE",
    ]
    for want in expected:
        assert any(ln.startswith(want) for ln in lines), f"no {want!r} in:\n" + "\n".join(lines)
    # The stack's secret has an empty GIT_TOKEN: not needed for these remotes.
    assert line(lines, "✓ secret GIT_TOKEN").endswith("only public https:// remotes can be fetched")
    assert "HTTPS" in line(lines, "✓ git backend") and "SSH" in line(lines, "✓ git backend")
    assert "file locks work" in line(lines, "✓ mirror root")
    assert line(lines, "✓ snapshot root").startswith(f"✓ snapshot root — {doctor.stack.tmp}")
    # The model was asked for exactly one token, and nothing was fetched into the mirror root.
    (request,) = doctor.stack.model.requests
    assert request.body["max_tokens"] == 1 and request.body["model"] == "claude-sonnet-5"
    assert not any((doctor.stack.tmp / "mirrors").iterdir())


def test_local_run_without_queue_table_or_model_passes_with_notes(doctor: Doctor) -> None:
    code, lines = doctor.run(
        SECRETS_ARN=None, QUEUE_URL=None, TABLE_NAME=None, SLACK_BOT_TOKEN=BOT_TOKEN
    )
    assert code == 0, "\n".join(lines)
    assert line(lines, "– model") == (
        "– model — skipped: no ANTHROPIC_API_KEY: search-only mode, no model to call"
    )
    assert line(lines, "– queue").startswith(
        "– queue — skipped: QUEUE_URL is not set (fine locally"
    )
    assert line(lines, "– table").startswith("– table — skipped: TABLE_NAME is not set")
    assert line(lines, "– secret ANTHROPIC_API_KEY").endswith(
        "answers will be search-only (set it, or CODEASK_PROVIDER=bedrock, for Claude's answers)"
    )
    assert line(lines, "– secrets manager").startswith("– secrets manager — skipped: SECRETS_ARN")
    assert lines[-1].endswith("failed (5 of them skipped as not applicable)")
    assert doctor.stack.model.requests == []


def test_on_lambda_an_unset_queue_is_a_failure(doctor: Doctor) -> None:
    code, lines = doctor.run(QUEUE_URL=None, AWS_LAMBDA_FUNCTION_NAME="codeask-doctor")
    assert code != 0
    assert line(lines, "✗ queue") == (
        "✗ queue — QUEUE_URL is not set → the template sets QUEUE_URL to the jobs queue's URL; "
        "redeploy, or set it on the function"
    )


def test_bedrock_model_is_checked_through_invoke_model(doctor: Doctor) -> None:
    code, lines = doctor.run(
        CODEASK_PROVIDER="bedrock",
        ANTHROPIC_BEDROCK_BASE_URL=doctor.stack.model.base_url,
        CODEASK_MODEL="us.anthropic.claude-sonnet-5-v1:0",
    )
    assert code == 0, "\n".join(lines)
    assert line(lines, "✓ model").startswith(
        "✓ model — us.anthropic.claude-sonnet-5-v1:0 answered a one-token request via Bedrock "
        "in us-east-1"
    )
    assert line(lines, "✓ secret ANTHROPIC_API_KEY") == (
        "✓ secret ANTHROPIC_API_KEY — set, but unused: CODEASK_PROVIDER=bedrock uses the AWS role"
    )
    assert doctor.stack.model.requests[0].path.startswith("/model/us.anthropic.claude-sonnet-5")


# -- one failure at a time --------------------------------------------------------------------


def test_bad_settings_value(doctor: Doctor) -> None:
    code, lines = doctor.run(CODEASK_GIT_TIMEOUT_S="soon")
    assert code != 0
    assert lines[0] == (
        "✗ settings — CODEASK_GIT_TIMEOUT_S must be a number of seconds, got 'soon' "
        "→ fix that variable (README: Settings) and run again"
    )
    # Nothing that needs the settings runs; what does not need them still does.
    assert line(lines, "– slack auth") == "– slack auth — skipped: the settings did not parse"
    assert line(lines, "– model") == "– model — skipped: the settings did not parse"
    assert line(lines, "✓ config").startswith("✓ config — 2 repos")
    assert line(lines, "✓ git backend")
    assert lines[-1] == "2 checks passed, 1 failed (16 not run because an earlier check failed)"


def test_what_is_not_run_is_named_as_a_full_run_names_it(doctor: Doctor) -> None:
    # Given the checks a good configuration runs, one line each
    _, good = doctor.run()
    # When the settings do not parse
    _, bad = doctor.run(CODEASK_GIT_TIMEOUT_S="soon")
    # Then every one of them still has its line, in the same order: run, or not run and why
    assert check_names(bad) == check_names(good)
    skipped = [ln for ln in bad if ln.startswith("– ")]
    assert len(skipped) == 16 and all(
        ln.endswith("skipped: the settings did not parse") for ln in skipped
    )


def check_names(lines: list[str]) -> list[str]:
    return [ln[2:].split(" — ")[0] for ln in lines[:-1]]


def test_bad_config(doctor: Doctor) -> None:
    code, lines = doctor.run(CODEASK_CONFIG='{"repos": ')
    assert code != 0
    assert line(lines, "✗ config").startswith("✗ config — CODEASK_CONFIG is not valid JSON")
    assert line(lines, "✗ config").endswith("→ fix CODEASK_CONFIG (README: Deploying)")
    assert line(lines, "– channels") == "– channels — skipped: CODEASK_CONFIG is not valid"
    assert line(lines, "– repos") == "– repos — skipped: CODEASK_CONFIG is not valid"
    assert line(lines, "✓ slack auth")


def test_missing_config(doctor: Doctor) -> None:
    code, lines = doctor.run(CODEASK_CONFIG="")
    assert code != 0
    assert line(lines, "✗ config").startswith(
        "✗ config — CODEASK_CONFIG is not set: every channel would be refused → set it to JSON like"
    )


def test_missing_signing_secret(doctor: Doctor) -> None:
    code, lines = doctor.run(
        SECRETS_ARN=None,
        SLACK_SIGNING_SECRET=None,
        SLACK_BOT_TOKEN=BOT_TOKEN,
        ANTHROPIC_API_KEY=MODEL_KEY,
    )
    assert code != 0
    assert line(lines, "✗ secret SLACK_SIGNING_SECRET") == (
        "✗ secret SLACK_SIGNING_SECRET — missing: Slack's requests cannot be verified "
        "→ set SLACK_SIGNING_SECRET in the environment"
    )
    assert line(lines, "✓ secret SLACK_BOT_TOKEN") == (
        "✓ secret SLACK_BOT_TOKEN — set (from env), a bot token (xoxb-)"
    )
    assert line(lines, "✓ model")


def test_signing_secret_that_is_not_one(doctor: Doctor) -> None:
    code, lines = doctor.run(SLACK_SIGNING_SECRET=None)  # then the stack's, not hex, is used
    assert code != 0
    assert line(lines, "✗ secret SLACK_SIGNING_SECRET") == (
        "✗ secret SLACK_SIGNING_SECRET — set (from Secrets Manager), but does not look like a "
        "Slack signing secret (expected 32 hex characters; this one has 36 characters, not all "
        "hex) → copy the Signing Secret from api.slack.com/apps → your app → Basic Information "
        "→ App Credentials"
    )


def test_unreadable_secrets_manager_secret(doctor: Doctor) -> None:
    arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:codeask-nope-AbCdEf"
    code, lines = doctor.run(SECRETS_ARN=arn)
    assert code != 0
    assert line(lines, "✗ secrets manager").startswith(
        "✗ secrets manager — cannot read the secret SECRETS_ARN: GetParameterError "
        "(ResourceNotFoundException) → check SECRETS_ARN"
    )
    assert line(lines, "✗ secret SLACK_BOT_TOKEN") == (
        "✗ secret SLACK_BOT_TOKEN — missing (the secret at SECRETS_ARN could not be read): the "
        "bot cannot post → set SLACK_BOT_TOKEN in the environment or the SECRETS_ARN secret"
    )
    assert line(lines, "– slack auth") == "– slack auth — skipped: there is no SLACK_BOT_TOKEN"


def test_wrong_token_prefix(doctor: Doctor) -> None:
    code, lines = doctor.run(SLACK_BOT_TOKEN=USER_TOKEN)
    assert code != 0
    assert line(lines, "✗ secret SLACK_BOT_TOKEN") == (
        "✗ secret SLACK_BOT_TOKEN — set (from env), but is a user token, not a bot token "
        "→ use the Bot User OAuth Token (xoxb-…) from api.slack.com/apps → your app "
        "→ OAuth & Permissions"
    )


def test_auth_test_invalid_auth(doctor: Doctor) -> None:
    code, lines = doctor.run(SLACK_BOT_TOKEN=WRONG_TOKEN)
    assert code != 0
    assert line(lines, "✓ secret SLACK_BOT_TOKEN")  # well-formed, just not this workspace's
    assert line(lines, "✗ slack auth") == (
        "✗ slack auth — auth.test failed: invalid_auth — the token was rejected → copy the Bot "
        "User OAuth Token (xoxb-…) from api.slack.com/apps → your app → OAuth & Permissions into "
        "SLACK_BOT_TOKEN"
    )
    reason = "skipped: auth.test failed (invalid_auth)"
    assert line(lines, "– slack scopes").endswith(reason)
    assert line(lines, f"– channel {CHANNEL}").endswith(reason)
    assert line(lines, "✓ repo billing")  # unrelated checks still run


def test_missing_scope(doctor: Doctor) -> None:
    doctor.stack.slack.scopes = tuple(s for s in DEFAULT_SCOPES if s != "chat:write")
    code, lines = doctor.run()
    assert code != 0
    assert line(lines, "✗ slack scopes") == (
        "✗ slack scopes — missing chat:write → add it under api.slack.com/apps → your app → "
        "OAuth & Permissions → Bot Token Scopes (or in slack/manifest.yaml), then reinstall the app"
    )
    assert line(lines, f"✓ channel {CHANNEL}")


def test_channels_cannot_be_checked_without_channels_read(doctor: Doctor) -> None:
    doctor.stack.slack.scopes = tuple(s for s in DEFAULT_SCOPES if s != "channels:read")
    doctor.stack.slack.fail("conversations.info", "missing_scope")
    code, lines = doctor.run()
    assert code != 0  # not verified is not passed
    assert line(lines, "✓ slack scopes").endswith(
        "channels:read not, so doctor may not see the channels"
    )
    assert line(lines, f"– channel {CHANNEL}") == (
        f"– channel {CHANNEL} — skipped: the token lacks channels:read (groups:read for a private "
        "channel), so doctor cannot look; add it and reinstall, or check by hand that the bot is "
        "a member"
    )


def test_team_mismatch(doctor: Doctor) -> None:
    code, lines = doctor.run(
        CODEASK_CONFIG=json.dumps(
            {"repos": doctor.repos, "channels": doctor.channels, "team_id": "T0OTHER"}
        )
    )
    assert code != 0
    assert line(lines, "✗ slack auth") == (
        "✗ slack auth — bot U0BOT is in T0001, but CODEASK_CONFIG pins the workspace T0OTHER "
        "→ install the app in T0OTHER, or fix team_id in CODEASK_CONFIG"
    )


def test_channel_not_found(doctor: Doctor) -> None:
    doctor.channels["C0NOPE999"] = ["billing"]
    code, lines = doctor.run()
    assert code != 0
    assert line(lines, "✗ channel C0NOPE999") == (
        "✗ channel C0NOPE999 — not found (a wrong ID, or a private channel the bot is not in) "
        "→ check the ID in CODEASK_CONFIG (channel details → About → Channel ID); for a private "
        "channel, invite it: /invite @codeask"
    )
    assert line(lines, f"✓ channel {CHANNEL}")


def test_bot_not_a_member(doctor: Doctor) -> None:
    doctor.stack.slack.channels[CHANNEL].is_member = False
    code, lines = doctor.run()
    assert code != 0
    assert line(lines, f"✗ channel {CHANNEL}") == (
        f"✗ channel {CHANNEL} — the bot is not a member → invite it: /invite @codeask "
        "(in #billing-dev)"
    )


def test_slack_connect_channel(doctor: Doctor) -> None:
    doctor.channels["C0SHARED1"] = ["billing"]
    code, lines = doctor.run()
    assert code != 0
    assert line(lines, "✗ channel C0SHARED1") == (
        "✗ channel C0SHARED1 — #shared is a Slack Connect channel (shared with another "
        "organisation); codeask refuses questions there → use an internal channel, or remove it "
        "from CODEASK_CONFIG"
    )


def test_unreachable_repo(doctor: Doctor) -> None:
    url = f"git://127.0.0.1:{_closed_port()}/billing.git"
    doctor.repos["served"] = {"url": url, "branch": "main"}
    code, lines = doctor.run()
    assert code != 0
    got = line(lines, "✗ repo served")
    assert got.startswith(f"✗ repo served — cannot reach {url} (")
    assert got.endswith(
        "→ check the URL, that the host is reachable from here (on Lambda: the NAT gateway), "
        "and CODEASK_GIT_TIMEOUT_S (5 s)"
    )
    assert line(lines, "✓ repo billing")


def test_missing_branch(doctor: Doctor) -> None:
    doctor.repos["served"] = {"url": doctor.served, "branch": "release-9"}
    code, lines = doctor.run()
    assert code != 0
    got = line(lines, "✗ repo served")
    assert "'release-9'" in got and "branches there include: main" in got
    assert got.endswith('→ set "branch" of repos.served in CODEASK_CONFIG to an existing branch')


def test_a_repo_pinned_to_a_tag_is_named_as_a_tag(doctor: Doctor) -> None:
    # Given a repo configured with an annotated tag where a branch would go
    doctor.stack.repo.git("tag", "-a", "v1.0", "-m", "release 1.0")
    doctor.repos["billing"] = {"url": str(doctor.stack.repo.path), "branch": "v1.0"}

    # When the doctor checks it  Then it passes, naming the tag and the commit it points at
    _code, lines = doctor.run()
    head = doctor.stack.repo.head()[:7]
    got = line(lines, "✓ repo billing")
    assert got == f"✓ repo billing — {doctor.stack.repo.path}: tag v1.0 at {head}"


def test_unwritable_mirror_root(doctor: Doctor) -> None:
    # A directory in which no one can create a file, root included (CI runs as root, where a
    # 0o500 directory would still be writable; a path beneath a regular file is refused earlier,
    # by the settings: see the next test). /proc is a directory on every Linux and takes no files.
    root = Path("/proc")
    code, lines = doctor.run(MIRROR_ROOT=str(root))
    assert code != 0
    assert line(lines, "✗ mirror root").startswith(
        f"✗ mirror root — MIRROR_ROOT={root} is not writable ("
    )
    assert line(lines, "✗ mirror root").endswith(
        ") → make it writable by this user, or point MIRROR_ROOT elsewhere"
    )
    assert line(lines, "✓ snapshot root")


def test_mirror_root_that_is_a_file(doctor: Doctor, tmp_path: Path) -> None:
    # Unlike a read-only directory, this fails for root too: the settings refuse it at start-up,
    # as every command does, naming the setting.
    not_a_dir = tmp_path / "mirrors-file"
    not_a_dir.write_text("")
    code, lines = doctor.run(MIRROR_ROOT=str(not_a_dir))
    assert code != 0
    assert lines[0] == (
        f"✗ settings — MIRROR_ROOT='{not_a_dir}': '{not_a_dir}' is not a directory; point "
        "MIRROR_ROOT at a directory codeask may write in → fix that variable (README: Settings) "
        "and run again"
    )


def test_rg_that_is_not_ripgrep(doctor: Doctor, tmp_path: Path) -> None:
    fake_rg = tmp_path / "rg"
    fake_rg.write_text("#!/bin/sh\necho 'grep (GNU grep) 3.11'\n")
    fake_rg.chmod(0o755)
    code, lines = doctor.run(RG_PATH=str(fake_rg))
    assert code != 0
    assert line(lines, "✗ ripgrep") == (
        f"✗ ripgrep — {fake_rg} is not ripgrep (`--version` exited 0: 'grep (GNU grep) 3.11') "
        "→ point RG_PATH at a ripgrep binary, or unset it to use the one installed with codeask"
    )


def test_rg_path_not_executable(doctor: Doctor, tmp_path: Path) -> None:
    not_exec = tmp_path / "rg-copy"
    not_exec.write_text("not a program\n")
    not_exec.chmod(stat.S_IRUSR | stat.S_IWUSR)
    code, lines = doctor.run(RG_PATH=str(not_exec))
    assert code != 0
    assert line(lines, "✗ ripgrep").startswith(
        f"✗ ripgrep — RG_PATH={not_exec} is not executable; codeask falls back to "
    )


def test_rg_path_that_does_not_exist_is_a_settings_failure(doctor: Doctor, tmp_path: Path) -> None:
    code, lines = doctor.run(RG_PATH=str(tmp_path / "nowhere" / "rg"))
    assert code != 0
    assert lines[0].startswith("✗ settings — RG_PATH=")
    assert "is not a file; point it at a ripgrep binary" in lines[0]


def test_model_401(doctor: Doctor) -> None:
    doctor.stack.model.script = [Fail(401, message="invalid x-api-key")]
    code, lines = doctor.run()
    assert code != 0
    assert line(lines, "✗ model") == (
        "✗ model — the Anthropic API rejected the credentials (401 invalid x-api-key) → check "
        "ANTHROPIC_API_KEY; create a new key in the Claude Console if it was revoked"
    )


def test_missing_queue(doctor: Doctor) -> None:
    code, lines = doctor.run(QUEUE_URL=f"{doctor.stack.moto.url}/123456789012/jobs-gone")
    assert code != 0
    got = line(lines, "✗ queue")
    assert got.startswith("✗ queue — the queue jobs-gone does not exist (")
    assert got.endswith(
        "→ set QUEUE_URL to the stack's jobs queue URL (and AWS_REGION to its region)"
    )
    assert line(lines, "✓ table")


def test_missing_table(doctor: Doctor) -> None:
    code, lines = doctor.run(TABLE_NAME="state-gone")
    assert code != 0
    assert line(lines, "✗ table") == (
        "✗ table — the table state-gone does not exist → set TABLE_NAME to the stack's state "
        "table (and AWS_REGION to its region)"
    )
    assert line(lines, "✓ queue")


def test_lambda_handler_reports_every_check(
    doctor: Doctor, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {
        **doctor.env,
        "CODEASK_CONFIG": json.dumps({"repos": doctor.repos, "channels": doctor.channels}),
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    result: dict[str, Any] = load_handler("doctor")({}, Context())
    assert result["ok"] is True, json.dumps(result, indent=1)
    names = [c["name"] for c in result["checks"]]
    assert names[:2] == ["settings", "config"] and "model" in names and "table" in names
    assert all(c["status"] == "passed" for c in result["checks"])
    blob = json.dumps(result)
    assert BOT_TOKEN not in blob and MODEL_KEY not in blob and SIGNING_HEX not in blob


def test_snapshot_disk_use_counts_each_shared_file_once(doctor: Doctor) -> None:
    from codeask.denylist import DenyList
    from codeask.mirror import MirrorStore, RepoSpec

    # Given two snapshots of the billing repo, one commit apart
    root = doctor.stack.tmp / "snapshots"
    store = MirrorStore(doctor.stack.tmp / "mirrors", root, DenyList())
    spec = RepoSpec.parse(str(doctor.stack.repo.path))
    store.sync(spec)
    doctor.stack.repo.commit({"billing/policy.py": "class RetryPolicy:\n    max_attempts = 7\n"})
    store.sync(spec)
    # When the doctor runs  Then it reports what they take on disk with shared files counted
    # once, beside what counting them per snapshot would claim
    code, lines = doctor.run()
    found = line(lines, "✓ snapshot root")
    assert "snapshots: " in found and "distinct files" in found, found
    unique, naive = (float(x) for x in re.findall(r"([\d.]+) kB", found.split("snapshots: ")[1]))
    assert unique < naive
