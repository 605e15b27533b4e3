"""slack/manifest.yaml against the code: every scope the code needs, every event it acts on, and nothing more.

What the code needs is read from the code itself: the Slack Web API methods it calls (every
`<client>.<method>(...)` whose name is a slack_sdk WebClient method, in the engine and the Lambda
handlers), and the Events API deliveries the ack acts on (signed probe requests through the real
`slack_ingress.handle`: a delivery it queues or answers with a refusal needs its subscription; one
it ignores must not be subscribed). The two tables below say which scope each method and each
subscription needs, from Slack's reference pages; anything the code starts using that is not in
them fails with a message saying what to add.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import json
import re
import sys
import time
import uuid
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from codeask.botconfig import BotConfig
from codeask.slack_ingress import handle

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "slack" / "manifest.yaml"
CODE_FILES = sorted((ROOT / "layers" / "codeask" / "codeask").glob("*.py")) + sorted(
    (ROOT / "functions").glob("*/app.py")
)
INGRESS = ROOT / "layers" / "codeask" / "codeask" / "slack_ingress.py"

EVENTS = ROOT / "events"
sys.path.insert(0, str(EVENTS))
import sign  # noqa: E402

# Web API method -> the bot scopes it needs (docs.slack.dev/reference/methods/<method>).
METHOD_SCOPES: dict[str, frozenset[str]] = {
    "chat.postMessage": frozenset({"chat:write"}),
    "chat.update": frozenset({"chat:write"}),
    "chat.postEphemeral": frozenset({"chat:write"}),
    "chat.delete": frozenset({"chat:write"}),
    # Streaming an answer while it is written (docs.slack.dev/reference/methods/chat.startStream).
    "chat.startStream": frozenset({"chat:write"}),
    "chat.appendStream": frozenset({"chat:write"}),
    "chat.stopStream": frozenset({"chat:write"}),
    # Finding the message of a stream whose start was never recorded (a worker that died).
    "conversations.replies": frozenset({"channels:history", "groups:history"}),
    # Since 2026-03 chat:write is enough, also in channel threads and without the assistant view;
    # assistant:write is still accepted but being retired (docs.slack.dev changelog 2026-03-05,
    # "Set status method scope update"), and it would need features.assistant_view.
    "assistant.threads.setStatus": frozenset({"chat:write"}),
    # codeask doctor: who the token is (no scope), and whether each configured channel exists and
    # has the bot in it; configured channels may be public (channels:read) or private (groups:read).
    "auth.test": frozenset(),
    "conversations.info": frozenset({"channels:read", "groups:read"}),
}

# Events API subscription -> the bot scope it needs (docs.slack.dev/reference/events/<event>).
EVENT_SCOPES: dict[str, str] = {
    "app_mention": "app_mentions:read",
    "message.channels": "channels:history",
    "message.groups": "groups:history",
    "message.im": "im:history",
    "message.mpim": "mpim:history",
}

# One probe per subscription: the event that subscription delivers, as the ack would get it.
# `refusal` says what a refusal (rather than a queued question) means for the subscription:
#   "needed"   - the ack answers it with a reply and Slack delivers it no other way, so subscribe;
#   "optional" - the reply could never be needed; leave the subscription out (least privilege).
PUBLIC, PRIVATE, DIRECT, GROUP_DM = "C0PUBLIC01", "G0PRIVATE1", "D0DIRECT01", "G0GROUPDM1"
HUMAN, QUESTION_TS, THREAD_TS = "U0HUMAN", "1800000000.000200", "1800000000.000100"
PROBES: dict[str, dict[str, Any]] = {
    "app_mention": {
        "event": {"type": "app_mention", "channel": PUBLIC, "text": f"<@{sign.BOT_USER}> where?"},
        "refusal": "needed",
    },
    "message.channels": {
        "event": {"type": "message", "channel": PUBLIC, "channel_type": "channel",
                  "thread_ts": THREAD_TS, "text": "and where is it called?"},
        "refusal": "needed",
    },
    "message.groups": {
        "event": {"type": "message", "channel": PRIVATE, "channel_type": "group",
                  "thread_ts": THREAD_TS, "text": "and where is it called?"},
        "refusal": "needed",
    },
    # Slack never sends a direct message as app_mention (docs.slack.dev/reference/events/app_mention):
    # the DM refusal the ack writes reaches the asker only through message.im.
    "message.im": {
        "event": {"type": "message", "channel": DIRECT, "channel_type": "im", "text": "where?"},
        "refusal": "needed",
    },
    # A group DM is refused too, but an app cannot be added to one; and subscribed, every message
    # in such a conversation would get the refusal, not only those addressed to the bot.
    "message.mpim": {
        "event": {"type": "message", "channel": GROUP_DM, "channel_type": "mpim", "text": "where?"},
        "refusal": "optional",
    },
}  # fmt: skip

# Slack interaction payload types, and Block Kit elements that make Slack send one.
INTERACTION_PAYLOADS = {
    "block_actions", "block_suggestion", "view_submission", "view_closed", "shortcut",
    "message_action", "interactive_message", "dialog_submission",
}  # fmt: skip
INTERACTIVE_ELEMENTS = {
    "actions", "input", "button", "checkboxes", "datepicker", "datetimepicker", "timepicker",
    "overflow", "radio_buttons", "static_select", "external_select", "users_select",
    "conversations_select", "channels_select", "multi_static_select", "multi_external_select",
    "multi_users_select", "multi_conversations_select", "multi_channels_select",
    "plain_text_input", "email_text_input", "url_text_input", "number_input", "rich_text_input",
}  # fmt: skip


# ------------------------------------------------------------------ reading the manifest and the code


@pytest.fixture(scope="module")
def manifest() -> dict[str, Any]:
    loaded = yaml.safe_load(MANIFEST.read_text())
    assert isinstance(loaded, dict), "slack/manifest.yaml must be one YAML mapping"
    return loaded


def bot_scopes(manifest: dict[str, Any]) -> list[str]:
    return list(((manifest.get("oauth_config") or {}).get("scopes") or {}).get("bot") or [])


def bot_events(manifest: dict[str, Any]) -> list[str]:
    subs = (manifest.get("settings") or {}).get("event_subscriptions") or {}
    return list(subs.get("bot_events") or [])


@cache
def webclient_methods() -> dict[str, str]:
    """slack_sdk's WebClient method name -> the Web API method it calls, read from the SDK."""
    from slack_sdk import WebClient

    out: dict[str, str] = {}
    for name, fn in vars(WebClient).items():
        if name.startswith("_") or not inspect.isfunction(fn):
            continue
        found = re.search(r"api_call\(\s*[\"']([\w.]+)[\"']", inspect.getsource(fn))
        if found:
            out[name] = found[1]
    return out


@cache
def trees() -> dict[Path, ast.Module]:
    return {p: ast.parse(p.read_text(), filename=str(p)) for p in CODE_FILES}


def called_methods() -> dict[str, list[str]]:
    """Web API method -> where the code calls it (file:line)."""
    known = webclient_methods()
    found: dict[str, list[str]] = {}
    for path, tree in trees().items():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            attr = node.func.attr
            if attr in known:
                found.setdefault(known[attr], []).append(where)
            elif attr == "api_call":
                arg = node.args[0] if node.args else None
                if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
                    pytest.fail(f"{where}: api_call with a computed method name; name it literally")
                found.setdefault(arg.value, []).append(where)
    return found


def string_constants() -> list[tuple[str, str]]:
    return [
        (node.value, f"{path.relative_to(ROOT)}:{node.lineno}")
        for path, tree in trees().items()
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


def interactive_code() -> list[str]:
    """Where the code handles an interaction payload or posts a block element that sends one."""
    hits = [
        f"{where}: {value!r}"
        for value, where in string_constants()
        if value in INTERACTION_PAYLOADS
    ]
    for path, tree in trees().items():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Dict):
                continue
            for key, value in zip(node.keys, node.values, strict=True):
                if (
                    isinstance(key, ast.Constant) and key.value == "type"
                    and isinstance(value, ast.Constant) and value.value in INTERACTIVE_ELEMENTS
                ):  # fmt: skip
                    hits.append(f"{path.relative_to(ROOT)}:{node.lineno}: {value.value!r} element")
    return hits


# ------------------------------------------------------------------ probing the ack


class _Store:
    """Just enough StateStore: every claim is new, and the probe's thread is one the bot answered."""

    def claim(self, key: str, **_: Any) -> bool:
        return True

    def release(self, key: str) -> None:
        pass

    def thread_turns(self, channel: str, thread_ts: str) -> list[dict[str, str]] | None:
        return []


def probe(event: dict[str, Any]) -> str:
    """What the ack does with `event` from a human of the app's workspace in a configured channel."""
    secret = "manifest-probe-secret"
    config = BotConfig.from_dict(
        {
            "repos": {"app": {"url": "https://git.example.invalid/app.git"}},
            "channels": {PUBLIC: ["app"], PRIVATE: ["app"]},
        }
    )
    ev = {"user": HUMAN, "ts": QUESTION_TS, "event_ts": QUESTION_TS, "team": sign.TEAM, **event}
    payload = {
        "type": "event_callback",
        "team_id": sign.TEAM,
        "api_app_id": "A0CODEASK",
        "event": ev,
        "event_id": f"Ev{uuid.uuid4().hex[:12].upper()}",
        "event_time": 1800000000,
        "authorizations": [{"team_id": sign.TEAM, "user_id": sign.BOT_USER, "is_bot": True}],
        "is_ext_shared_channel": False,
    }
    body = json.dumps(payload)
    ts = str(int(time.time()))
    request = sign.http_event(body, ts, sign.signature(secret, ts, body.encode()))
    replies: list[str] = []
    ack = handle(
        request,
        signing_secret=secret,
        config=config,
        store=_Store(),  # type: ignore[arg-type]
        enqueue=lambda job: None,
        refuse=lambda reason, ev: replies.append(reason),
    )
    assert ack.status == 200, ack
    kind = ack.outcome.partition(":")[0]
    assert kind in ("queued", "refused", "ignored"), ack.outcome
    if kind == "refused":
        assert replies, f"{ack.outcome} without a reply to the asker"
    return kind


@cache
def probe_outcomes() -> dict[str, str]:
    return {sub: probe(p["event"]) for sub, p in PROBES.items()}


def needed_events() -> set[str]:
    return {
        sub
        for sub, kind in probe_outcomes().items()
        if kind == "queued" or (kind == "refused" and PROBES[sub]["refusal"] == "needed")
    }


@cache
def deploy_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("deploy_script", ROOT / "scripts" / "deploy.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------ the tests


def test_the_scan_finds_the_calls_it_should() -> None:
    # Guards against a scan that silently finds nothing and so passes everything.
    calls = called_methods()
    assert "chat.postMessage" in calls and "chat.update" in calls, calls
    assert webclient_methods()["assistant_threads_setStatus"] == "assistant.threads.setStatus"


def test_every_called_method_is_in_the_scope_table() -> None:
    unknown = {m: where for m, where in called_methods().items() if m not in METHOD_SCOPES}
    assert not unknown, (
        "the code calls Slack Web API methods tests/unit/test_manifest.py has no scopes for: "
        + "; ".join(f"{m} at {', '.join(w)}" for m, w in sorted(unknown.items()))
        + ". Add each to METHOD_SCOPES with the bot scopes its docs.slack.dev reference page lists, "
        "and the scopes to slack/manifest.yaml."
    )


def test_every_called_method_is_covered_by_a_manifest_scope(manifest: dict[str, Any]) -> None:
    have = set(bot_scopes(manifest))
    missing = {
        m: sorted(METHOD_SCOPES[m] - have)
        for m in called_methods()
        if m in METHOD_SCOPES and not METHOD_SCOPES[m] <= have
    }
    assert not missing, f"slack/manifest.yaml lacks scopes the code needs: {missing}"


def test_the_ack_only_handles_event_types_that_have_a_probe() -> None:
    # The types slack_ingress compares an event's type against; each needs a probe above.
    source = INGRESS.read_text()
    compared = set(re.findall(r"kind\s*(?:==|!=)\s*[\"'](\w+)[\"']", source))
    for group in re.findall(r"kind\s+(?:not\s+)?in\s*\(([^)]*)\)", source):
        compared |= set(re.findall(r"[\"'](\w+)[\"']", group))
    assert compared, "found no event types in slack_ingress.py; has the check moved?"
    probed = {p["event"]["type"] for p in PROBES.values()}
    assert compared <= probed, (
        f"slack_ingress.py acts on event types {sorted(compared - probed)} with no probe in "
        "tests/unit/test_manifest.py: add a PROBES entry per subscription that delivers them"
    )


def test_the_probes_see_what_the_ack_does() -> None:
    outcomes = probe_outcomes()
    # Questions: a mention anywhere configured, a follow-up in a thread of a public or private channel.
    assert outcomes["app_mention"] == "queued"
    assert outcomes["message.channels"] == "queued"
    assert outcomes["message.groups"] == "queued", "configured private channels (G…) are accepted"
    # Direct messages are refused with a reply.
    assert outcomes["message.im"] == "refused"


def test_every_event_the_ack_acts_on_is_subscribed(manifest: dict[str, Any]) -> None:
    missing = sorted(needed_events() - set(bot_events(manifest)))
    assert not missing, (
        f"the ack acts on deliveries of {missing} but slack/manifest.yaml does not subscribe to "
        "them: add them to settings.event_subscriptions.bot_events with their scopes"
    )


def test_no_subscribed_event_goes_unused(manifest: dict[str, Any]) -> None:
    events = bot_events(manifest)
    assert len(events) == len(set(events)), "duplicate bot_events"
    unknown = sorted(set(events) - set(PROBES))
    assert not unknown, f"subscribed to {unknown}, which no probe covers: add one or drop them"
    unused = sorted(set(events) - needed_events())
    assert not unused, (
        f"subscribed to {unused}, which the ack ignores or never needs to answer: drop them"
    )
    assert not (manifest["settings"]["event_subscriptions"].get("user_events") or []), (
        "codeask has no user token; user_events cannot be delivered"
    )


def test_every_scope_is_needed_and_no_more(manifest: dict[str, Any]) -> None:
    scopes = bot_scopes(manifest)
    assert len(scopes) == len(set(scopes)), "duplicate bot scopes"
    needed: dict[str, list[str]] = {}
    for method in called_methods():
        for scope in METHOD_SCOPES.get(method, ()):
            needed.setdefault(scope, []).append(method)
    for event in bot_events(manifest):
        if event in EVENT_SCOPES:
            needed.setdefault(EVENT_SCOPES[event], []).append(event)
    unused = sorted(set(scopes) - set(needed))
    assert not unused, f"slack/manifest.yaml asks for scopes nothing uses: {unused}"
    assert set(needed) <= set(scopes), f"missing scopes: {sorted(set(needed) - set(scopes))}"
    oauth = manifest["oauth_config"]
    assert set(oauth) == {"scopes"}, "no redirect URLs: the app is installed from its settings"
    assert set(oauth["scopes"]) == {"bot"}, "bot scopes only: no user token, no optional scopes"


def test_interactivity_only_when_the_code_handles_it(manifest: dict[str, Any]) -> None:
    interactivity = (manifest.get("settings") or {}).get("interactivity") or {}
    hits = interactive_code()
    if hits:
        assert interactivity.get("is_enabled") is True, (
            "the code posts or handles interactive components ("
            + "; ".join(hits)
            + "): enable settings.interactivity in slack/manifest.yaml with request_url "
            + deploy_module().PLACEHOLDER
        )
        assert interactivity.get("request_url") == deploy_module().INTERACTIVITY_PLACEHOLDER
    else:
        assert not interactivity.get("is_enabled"), (
            "settings.interactivity is enabled but no code posts or handles interactive components"
        )


def test_no_features_the_code_does_not_serve(manifest: dict[str, Any]) -> None:
    features = manifest.get("features") or {}
    assert set(features) <= {"bot_user", "app_home"}, (
        f"features {sorted(set(features) - {'bot_user', 'app_home'})} need code that serves them "
        "(slash commands, shortcuts, unfurls, workflow steps, the assistant view)"
    )
    assert features["bot_user"]["display_name"]
    home = features.get("app_home") or {}
    assert home.get("home_tab_enabled") is not True, "nothing publishes a Home tab (views.publish)"
    # People can write to the bot exactly when it listens to direct messages (and refuses them).
    dms = "message.im" in bot_events(manifest)
    assert home.get("messages_tab_enabled", False) is dms, (
        "app_home.messages_tab_enabled must be true exactly when message.im is subscribed"
    )
    assert home.get("messages_tab_read_only_enabled", False) is not dms, (
        "app_home.messages_tab_read_only_enabled must be false exactly when message.im is subscribed"
    )


def test_the_manifest_has_the_shape_slack_accepts(manifest: dict[str, Any]) -> None:
    # The limits of Slack's manifest schema (github.com/slackapi/manifest-schema, v1).
    assert set(manifest) <= {"_metadata", "display_information", "features", "oauth_config",
                             "settings"}  # fmt: skip
    info = manifest["display_information"]
    assert set(info) <= {"name", "description", "long_description", "background_color"}
    assert 1 <= len(info["name"]) <= 35
    assert 1 <= len(info.get("description", "x")) <= 140
    assert 175 <= len(info.get("long_description", "x" * 175)) <= 4000
    assert re.fullmatch(r"#[0-9a-fA-F]{3}(?:[0-9a-fA-F]{3})?", info.get("background_color", "#fff"))
    assert 1 <= len(manifest["features"]["bot_user"]["display_name"]) <= 80
    settings = manifest["settings"]
    assert settings.get("socket_mode_enabled") is False, "events come over HTTP (API Gateway)"
    assert settings.get("token_rotation_enabled") is False, (
        "the bot token in Secrets Manager is long-lived"
    )
    assert settings.get("org_deploy_enabled") is False
    assert not (settings.get("incoming_webhooks") or {}).get("incoming_webhooks_enabled")


def test_the_request_url_is_the_placeholder_deploy_fills_in(manifest: dict[str, Any]) -> None:
    placeholder = deploy_module().PLACEHOLDER
    assert manifest["settings"]["event_subscriptions"]["request_url"] == placeholder
    # ... and the deployed URL has the same path: the SlackRequestUrl output and the API route.
    template = (ROOT / "template.yaml").read_text()
    output = re.search(r"^  SlackRequestUrl:\n(?:    .*\n)*?    Value: (.+)$", template, re.M)
    assert output, "template.yaml has no SlackRequestUrl output"
    path = "/" + placeholder.split("/", 3)[3]
    assert output[1].strip().strip("\"'").endswith(path)
    assert re.search(rf"^\s+Path: {re.escape(path)}\s*$", template, re.M)


def test_codeask_doctor_checks_for_the_scopes_the_manifest_grants(manifest: dict[str, Any]) -> None:
    # doctor tells an installed app which scopes it lacks. It must not ask for one the manifest
    # never grants (every correct install would fail it), nor pass an install that lacks one.
    doctor = pytest.importorskip("codeask.doctor")
    required = set(getattr(doctor, "REQUIRED_SCOPES", ()))
    optional = set(getattr(doctor, "CHANNEL_CHECK_SCOPES", ()))
    granted = set(bot_scopes(manifest))
    problems = []
    if required - granted:
        problems.append(f"asks for {sorted(required - granted)}, which the manifest does not grant")
    if granted - required - optional:
        problems.append(f"never checks for {sorted(granted - required - optional)}")
    assert not problems, (
        "codeask/doctor.py REQUIRED_SCOPES/CHANNEL_CHECK_SCOPES and slack/manifest.yaml disagree: "
        "doctor " + "; ".join(problems)
    )
