"""A channel scoped to part of a monorepo, through the worker: outside paths are never seen."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fakes.messages_api import Reply, text, tool_use
from fakes.stack import CHANNEL, Context, Stack, click, event, load_handler

THREAD = "1764430000.000100"
OTHER = "C0PLATFORM"
PAYMENTS = ["services/payments/**", "libs/billing/**"]
MONO = {
    "services/payments/api/charge.py": "def charge(amount):\n    return settle(amount)  # payments\n",
    "libs/billing/tax.py": "def tax(amount):\n    return amount * 0.2  # payments tax\n",
    "services/search/index.py": "def build_index():\n    # payments are not indexed\n"
    "    return 'search secret sauce'\n",
    "libs/auth/tokens.py": "def charge_token():\n    return 'auth internals'\n",
    "README.md": "# mono\nEvery team's code.\n",
}
OUTSIDE = ("services/search", "libs/auth", "index.py", "tokens.py", "secret sauce",
           "auth internals", "README.md", "Every team")  # fmt: skip


def configure(monkeypatch: pytest.MonkeyPatch, config: dict[str, Any]) -> None:
    from codeask import lambdas

    monkeypatch.setenv("CODEASK_CONFIG", json.dumps(config))
    lambdas.reset_settings()


@pytest.fixture
def mono(stack: Stack, git_repo: Callable[..., Any], monkeypatch: pytest.MonkeyPatch) -> Any:
    repo = git_repo("mono")
    repo.commit(MONO, symlinks={"services/payments/search": "../search/index.py"})
    configure(monkeypatch, {
        "repos": {"mono": {"url": str(repo.path)}, "billing": {"url": str(stack.repo.path)}},
        "channels": {CHANNEL: [{"repo": "mono", "paths": PAYMENTS}], OTHER: ["mono"]},
    })  # fmt: skip
    return repo


def ask(stack: Stack, question: str, ts: str = THREAD, thread: str | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """The question through the ack and the worker; the bot's replies in its thread."""
    fields = {"event.text": f"<@U0CODEASK> {question}", "event.ts": ts, "event_id": f"Ev{ts}"}
    if thread is not None:
        fields.update({"event.thread_ts": thread, "event.type": "message",
                       "event.channel_type": "channel", "event.text": question})  # fmt: skip
    assert load_handler("slack_events")(event("app_mention", **fields), Context(remaining_ms=3000))["statusCode"] == 200  # fmt: skip
    assert load_handler("answer_worker")({"Records": stack.queued()}, Context()) == {"batchItemFailures": []}  # fmt: skip
    return [m for m in stack.slack.messages(CHANNEL, thread or ts) if m.get("bot_id")]


def what_the_tools_and_context_said(stack: Stack, since: int = 0) -> str:
    """Every byte codeask put in front of the model: system prompt, repo context, tool results
    (not the model's own tool calls, which name whatever it asked for; a result that repeats
    what was asked, "No matches for `def` in services/search/**", shows it as <asked>)."""
    out: list[str] = []
    asked: set[str] = set()
    for req in stack.model.requests[since:]:
        for message in req.body["messages"]:
            for block in message["content"] if isinstance(message["content"], list) else []:
                if block.get("type") == "tool_use":
                    args = [
                        v for k, v in block["input"].items() if isinstance(v, str) and k != "repo"
                    ]
                    # in a workspace, a refusal names the path inside its repo
                    asked.update(args + [v.partition("/")[2] for v in args if "/" in v])
    for req in stack.model.requests[since:]:
        out.append(json.dumps(req.body.get("system", "")))
        for message in req.body["messages"]:
            if message["role"] != "user":
                continue
            for block in message["content"] if isinstance(message["content"], list) else []:
                if block.get("type") == "tool_result":
                    out.append(json.dumps(block.get("content")))
                elif block.get("type") == "text":
                    out.append(block["text"])
    said = "\n".join(out)
    for value in sorted(asked, key=len, reverse=True):
        said = said.replace(value, "<asked>")
    return said


def tool_results(stack: Stack) -> list[tuple[str, bool]]:
    last = stack.model.requests[-1].body["messages"]
    return [(json.dumps(b.get("content")), bool(b.get("is_error")))
            for m in last if m["role"] == "user" and isinstance(m["content"], list)
            for b in m["content"] if b.get("type") == "tool_result"]  # fmt: skip


def test_a_scoped_channel_never_sees_outside_paths(stack: Stack, mono: Any) -> None:
    # Given #payments scoped to services/payments/** and libs/billing/** of the monorepo, and a
    # model that tries every way out: a broad search, a search and a listing aimed outside, a
    # read of an outside file, a symlink inside pointing out, and citations of outside files
    stack.model.script = [
        Reply([tool_use("search_code", {"pattern": "payments|charge|secret|auth"}),
               tool_use("search_code", {"pattern": "def", "glob": "services/search/**"}),
               tool_use("list_files", {}),
               tool_use("list_files", {"path": "libs/auth"}),
               tool_use("read_file", {"path": "services/search/index.py"}),
               tool_use("read_file", {"path": "services/payments/search"}),
               tool_use("search_code", {"pattern": "def", "path": "libs/auth"})]),
        Reply([text("Charging is in `services/payments/api/charge.py:1` and tax in "
                    "`libs/billing/tax.py:2`; the index is `services/search/index.py:3` and "
                    "tokens come from `libs/auth/tokens.py:1`.")]),
    ]  # fmt: skip

    # When someone in #payments asks
    replies = ask(stack, "where are payments charged?")

    # Then nothing from outside the scope reached the model: not in the repo context, not in
    # any search, listing or read (those aimed outside were refused or found nothing)
    seen = what_the_tools_and_context_said(stack)
    assert "services/payments/api/charge.py" in seen and "libs/billing/tax.py" in seen
    for outside in OUTSIDE:
        assert outside not in seen, outside
    results = tool_results(stack)
    assert [err for _, err in results] == [False, False, False, True, True, True, True]
    assert "outside the part of mono this channel may read" in results[4][0]
    assert "No matches" in results[1][0]
    assert "Only part of it may be read here" in seen
    # And the answer's citations of outside files are flagged unverified, the others are not
    posted = json.dumps(replies)
    assert len(replies) == 1 and "Could not verify 2 references" in posted
    warning = posted[posted.index("Could not verify") :]
    assert "services/search/index.py:3" in warning and "libs/auth/tokens.py:1" in warning
    assert "charge.py" not in warning and "tax.py" not in warning


def test_the_scoped_snapshot_holds_only_the_scope_and_the_whole_repo_is_another(
    stack: Stack, mono: Any
) -> None:
    # Given #payments (scoped) and #platform (the whole repo) both asking about the monorepo
    stack.model.script = [Reply([text("See `services/payments/api/charge.py:1`.")])] * 2
    ask(stack, "where are payments charged?")
    answered = load_handler("slack_events")(
        event("app_mention", **{"event.channel": OTHER, "event.ts": "1764430900.000100",
                                "event_id": "Ev0PLATFORM"}), Context(remaining_ms=3000))  # fmt: skip
    assert answered["statusCode"] == 200
    stack.slack.channels[OTHER] = stack.slack.channels[CHANNEL].__class__(id=OTHER, name="platform")
    load_handler("answer_worker")({"Records": stack.queued()}, Context())

    # Then the monorepo has a snapshot per scope: #payments' holds only its two subtrees on
    # disk, #platform's everything
    roots = [p for p in (stack.tmp / "snapshots").glob("mono-*/*") if not p.name.startswith(".")]
    held = {p: {os.path.relpath(os.path.join(d, f), p) for d, _, fs in os.walk(p) for f in fs}
            for p in roots}  # fmt: skip
    scoped = [files for files in held.values() if "services/search/index.py" not in files]
    whole = [files for files in held.values() if "services/search/index.py" in files]
    assert len(scoped) == 1 and len(whole) == 1
    assert {f for f in scoped[0] if not f.startswith(".codeask")} == {
        "services/payments/api/charge.py", "services/payments/search", "libs/billing/tax.py"}  # fmt: skip


def test_a_follow_up_after_the_scope_narrowed_does_not_carry_what_the_whole_repo_showed(
    stack: Stack, mono: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a thread in a channel that read the whole monorepo, quoting an outside file
    configure(monkeypatch, {"repos": {"mono": {"url": str(mono.path)}},
                            "channels": {CHANNEL: ["mono"]}})  # fmt: skip
    stack.model.script = [Reply([tool_use("read_file", {"path": "services/search/index.py"})]),
                          Reply([text("It returns 'search secret sauce' (`services/search/index.py:3`).")])]  # fmt: skip
    ask(stack, "what does the search index return?")
    before = len(stack.model.requests)

    # When the channel is narrowed to the payments scope and someone follows up
    configure(monkeypatch, {"repos": {"mono": {"url": str(mono.path)}},
                            "channels": {CHANNEL: [{"repo": "mono", "paths": PAYMENTS}]}})  # fmt: skip
    stack.model.script = [Reply([text("Charging: `services/payments/api/charge.py:1`.")])]
    ask(stack, "and where is charging?", ts="1764430200.000100", thread=THREAD)

    # Then the earlier answer (which quotes code now outside the channel's scope) is not carried
    later = json.dumps([r.body for r in stack.model.requests[before:]])
    assert later and "secret sauce" not in later and "services/search" not in later
    # And once the whole repo is granted again, a follow-up may carry the narrower turn
    configure(monkeypatch, {"repos": {"mono": {"url": str(mono.path)}},
                            "channels": {CHANNEL: ["mono"]}})  # fmt: skip
    before = len(stack.model.requests)
    stack.model.script = [Reply([text("Still `services/payments/api/charge.py:1`.")])]
    ask(stack, "and tax?", ts="1764430300.000100", thread=THREAD)
    again = json.dumps([r.body for r in stack.model.requests[before:]])
    assert "Charging: `services/payments/api/charge.py:1`" in again


def test_a_scoped_repo_in_a_cross_repo_workspace_stays_scoped(
    stack: Stack, mono: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a channel that reads the billing repo whole and the monorepo in part
    configure(monkeypatch, {
        "repos": {"mono": {"url": str(mono.path)}, "billing": {"url": str(stack.repo.path)}},
        "channels": {CHANNEL: [{"repo": "mono", "paths": PAYMENTS}, "billing"]},
    })  # fmt: skip
    stack.model.script = [
        Reply([tool_use("search_code", {"pattern": "payments|retry|secret"}),
               tool_use("read_file", {"path": "mono/services/search/index.py"}),
               tool_use("list_files", {"repo": "mono"})]),
        Reply([text("`mono/services/payments/api/charge.py:1`, `billing/billing/worker.py:6`, "
                    "`mono/services/search/index.py:1`.")]),
    ]  # fmt: skip
    replies = ask(stack, "how do payments and retries fit together?")
    seen = what_the_tools_and_context_said(stack)
    assert "billing/billing/worker.py" in seen and "mono/services/payments/api/charge.py" in seen
    for outside in OUTSIDE:
        assert outside not in seen.replace("billing/README.md", ""), outside
    assert [err for _, err in tool_results(stack)] == [False, True, False]
    warning = json.dumps(replies)[json.dumps(replies).index("Could not verify") :]
    assert "mono/services/search/index.py:1" in warning and "worker.py" not in warning


def test_a_scoped_snapshot_is_built_from_the_last_one_after_a_commit(
    stack: Stack, mono: Any, tmp_path: Path
) -> None:
    # Given a warm worker that answered #payments (and made a spare of that snapshot after)
    stack.model.script = [Reply([text("`services/payments/api/charge.py:1`.")])] * 2
    ask(stack, "where are payments charged?")
    spares = list((stack.tmp / "snapshots").glob("mono-*/.spare-*"))
    assert len(spares) == 1
    # When a commit changes one file in the scope and one outside, and #payments asks again
    mono.commit({"libs/billing/tax.py": "def tax(amount):\n    return amount * 0.25\n",
                 "services/search/index.py": "def build_index():\n    return 'v2'\n"})  # fmt: skip
    ask(stack, "what is the tax rate?", ts="1764430700.000100")
    # Then the spare became the new snapshot: unchanged files are the old snapshot's inodes
    roots = sorted((p for p in (stack.tmp / "snapshots").glob("mono-*/*")
                    if not p.name.startswith(".")), key=lambda p: p.stat().st_mtime)  # fmt: skip
    old, new = roots[-2], roots[-1]
    charge = "services/payments/api/charge.py"
    assert os.stat(new / charge).st_ino == os.stat(old / charge).st_ino
    assert (new / "libs/billing/tax.py").read_text().endswith("0.25\n")
    assert not (new / "services/search").exists()


def test_a_vote_is_exported_only_while_the_channel_reads_at_least_what_the_answer_read(
    stack: Stack, mono: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codeask import clients
    from codeask.feedback import export_cases
    from codeask.settings import Settings
    from codeask.state import StateStore

    # Given a 👎 on an answer #payments got from the whole monorepo
    whole = {"repos": {"mono": {"url": str(mono.path)}}, "channels": {CHANNEL: ["mono"]}}
    configure(monkeypatch, whole)
    stack.model.script = [Reply([text("The index: `services/search/index.py:3`.")])]
    ask(stack, "what does the search index return?")
    ack = load_handler("slack_events")
    assert ack(click("codeask_feedback_down", "U0ALICE", f"{CHANNEL}:{THREAD}"), Context())["statusCode"] == 200  # fmt: skip

    def exported() -> list[dict[str, Any]]:
        config = Settings.from_env().bot_config
        assert config is not None
        return export_cases(StateStore(stack.table, clients.aws("dynamodb")).votes(), config)

    assert [c["repo"] for c in exported()] == ["mono"]
    # When the channel is narrowed to the payments scope, the case (it quotes code outside it)
    # is no longer exported
    configure(monkeypatch, {**whole, "channels": {CHANNEL: [{"repo": "mono", "paths": PAYMENTS}]}})
    assert exported() == []
