"""Questions across several repositories: searched together, cited per repo at that repo's SHA."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from codeask.answer import ask
from codeask.mirror import MirrorStore, RepoSpec
from codeask.settings import Settings
from codeask.snapshot import RepoRef, Snapshot
from codeask.tools import Toolbox
from codeask.workspace import Workspace
from fakes import billing
from fakes.messages_api import FakeMessagesAPI, Reply, text, tool_use
from fakes.stack import CHANNEL, Context, Stack, event, load_handler

NOTIFY = {
    "notify/api.py": "def send_notification(user, text):\n    return post('/notify', user, text)\n",
    "notify/client.py": "from notify.api import send_notification\n\n\ndef ping(u):\n    send_notification(u, 'hi')\n",
}
BILLING_CALLER = {
    "billing/alerts.py": "from notify_client import send_notification\n\n\ndef alert(u):\n    send_notification(u, 'bill')\n"
}


def tree(root: Path, files: dict[str, str]) -> Path:
    for rel, body in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(body)
    return root


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    a = Snapshot(tree(tmp_path / "b", {**billing.FILES, **BILLING_CALLER}), "a" * 40,
                 RepoRef("billing", "https://github.com/acme/billing.git"))  # fmt: skip
    b = Snapshot(
        tree(tmp_path / "n", NOTIFY),
        "b" * 40,
        RepoRef("notify", "https://gitlab.com/acme/notify.git"),
    )
    return Workspace([a, b])


def test_a_search_covers_every_repo_and_names_the_repo_of_each_hit(workspace: Workspace) -> None:
    tb = Toolbox(workspace)
    out = tb.run("search_code", {"pattern": "send_notification\\("}).text
    assert "billing/billing/alerts.py" in out and "notify/notify/client.py" in out
    assert "notify/notify/api.py" in out
    only = tb.run("search_code", {"pattern": "send_notification\\(", "repo": "notify"}).text
    assert "billing/" not in only and "notify/notify/api.py" in only


def test_uses_outside_counts_and_near_misses_name_the_repo_of_each_file(
    workspace: Workspace,
) -> None:
    tb = Toolbox(workspace)
    # the definition's callers in the other repo, with the repo in their path
    out = tb.run("search_code", {"pattern": "def send_notification"}).text
    # (the definition's own repo first)
    assert (
        "↳ called from notify/notify/client.py:5 in def ping(), "
        "billing/billing/alerts.py:5 in def alert()"
    ) in out
    # a search in one repo counts what the other repo has
    out = tb.run("search_code", {"pattern": "send_notification", "glob": "**/api.py"}).text
    assert "Outside glob **/api.py: " in out and "billing/billing/alerts.py (2)" in out
    # no match anywhere: each word of the pattern, across both repos
    out = tb.run("search_code", {"pattern": "send_notification\\(user, html"}).text
    assert "- `send_notification`: 5 matches in 3 files: " in out


def test_reads_and_listings_go_through_the_repo_prefix(workspace: Workspace) -> None:
    tb = Toolbox(workspace)
    read = tb.run("read_file", {"path": "notify/notify/api.py"})
    assert not read.is_error and read.text.startswith(
        f"notify/notify/api.py lines 1-2 of 2 at {'b' * 7}"
    )
    listing = tb.run("list_files", {"repo": "billing"}).text
    assert "billing/billing/worker.py" in listing and "notify/" not in listing
    refused = tb.run("read_file", {"path": "payments/secret.py"})
    assert refused.is_error and "billing/, notify/" in refused.text
    assert "repo" in json.dumps(tb.definitions()[0]["input_schema"])


def test_citations_verify_per_repo_with_that_repos_permalink(workspace: Workspace) -> None:
    from codeask.verify import verify_answer

    v = verify_answer(
        "Called from `billing/billing/alerts.py:5`, defined in `notify/notify/api.py:1`; "
        "not in `notify/notify/missing.py:3`.",
        workspace,
    )
    urls = {m.path: m.url for m in v.citations}
    alerts = urls["billing/billing/alerts.py"]
    assert alerts is not None
    assert alerts.startswith("https://github.com/acme/billing/blob/" + "a" * 40)
    api = urls["notify/notify/api.py"]
    assert api is not None
    assert api.startswith("https://gitlab.com/acme/notify/-/blob/" + "b" * 40)
    assert [m.path for m in v.unverified] == ["notify/notify/missing.py"]


def test_ask_across_two_repos_reports_each_repo_and_its_sha(
    tmp_path: Path, git_repo: Callable[..., Any]
) -> None:
    one = git_repo("billing")
    one.commit({**billing.FILES, **BILLING_CALLER})
    two = git_repo("notify")
    two.commit(NOTIFY)
    with FakeMessagesAPI() as fake:
        fake.script = [
            Reply([tool_use("search_code", {"pattern": "send_notification\\("})]),
            Reply(
                [
                    text(
                        "Two callers: `billing/billing/alerts.py:5` and `notify/notify/client.py:5`."
                    )
                ]
            ),
        ]
        settings = Settings.from_env({"HOME": str(tmp_path / "h"), "MIRROR_ROOT": str(tmp_path / "m"),
                                      "SNAPSHOT_ROOT": str(tmp_path / "s"), "ANTHROPIC_API_KEY": "sk-ant-x",
                                      "ANTHROPIC_BASE_URL": fake.base_url})  # fmt: skip
        ans = ask("Which services call the notification API?",
                  [RepoSpec.parse(str(one.path)), RepoSpec.parse(str(two.path))], settings,
                  store=MirrorStore.from_settings(settings))  # fmt: skip
        first = fake.requests[0].body["messages"][0]["content"][0]["text"]
    assert "billing/" in first and "notify/" in first and "Several repositories" in first
    out = ans.to_json()
    assert {(r["name"], r["sha"]) for r in out["repos"]} == {
        ("billing", one.head()),
        ("notify", two.head()),
    }
    assert {(c["repo"], c["path"]) for c in out["citations"]} == {
        ("billing", "billing/alerts.py"), ("notify", "notify/client.py")}  # fmt: skip
    assert all(c["verified"] for c in out["citations"])


def test_one_of_several_repos_falling_back_to_its_mirror_keeps_the_may_be_stale_note(
    tmp_path: Path, git_repo: Callable[..., Any], git_daemon: Any
) -> None:
    from codeask.render import render_answer

    one = git_repo("billing")
    one.commit({**billing.FILES, **BILLING_CALLER})
    two = git_repo("notify")
    two.commit(NOTIFY)
    settings = Settings.from_env({"HOME": str(tmp_path / "h"), "MIRROR_ROOT": str(tmp_path / "m"),
                                  "SNAPSHOT_ROOT": str(tmp_path / "s")})  # fmt: skip
    store = MirrorStore.from_settings(settings)
    # Given a local repo and a remote one that synced once (listed second: the note must not
    # depend on which repo falls back)
    specs = [RepoSpec.parse(str(one.path)), RepoSpec.parse(git_daemon.publish(two, "notify.git"))]
    fresh = ask("Where is send_notification?", specs, settings, store=store)
    assert fresh.stale is None
    # When the remote goes away and the question is asked again
    git_daemon.stop()
    ans = ask("Where is send_notification?", specs, settings, store=store)
    # Then the answer comes from the remote's last mirror, and says so wherever it is shown
    assert ans.stale is not None and ans.stale.sha == two.head()
    assert f"may be stale — as of {two.head()[:7]}" in str(ans.to_json()["stale"])
    assert "may be stale" in json.dumps([m.blocks for m in render_answer(ans, elapsed_s=1.0)])


def test_a_channel_with_two_repos_gets_both_and_never_a_third(stack: Stack, git_repo: Callable[..., Any],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    from codeask import lambdas

    two = git_repo("notify")
    two.commit(NOTIFY)
    hidden = git_repo("payroll")
    hidden.commit({"payroll/salaries.py": "def send_notification(): pass  # secret payroll\n"})
    config = {"repos": {"billing": {"url": str(stack.repo.path)}, "notify": {"url": str(two.path)},
                        "payroll": {"url": str(hidden.path)}},
              "channels": {CHANNEL: ["billing", "notify"], "C0PAYROLL1": ["payroll"]}}  # fmt: skip
    monkeypatch.setenv("CODEASK_CONFIG", json.dumps(config))
    lambdas.reset_settings()
    stack.model.script = [
        Reply([tool_use("search_code", {"pattern": "send_notification"})]),
        Reply([text("In `notify/notify/api.py:1`.")]),
    ]
    load_handler("slack_events")(event("app_mention"), Context(remaining_ms=3000))
    load_handler("answer_worker")({"Records": stack.queued()}, Context())
    everything = json.dumps([r.raw.decode() for r in stack.model.requests])
    assert "payroll" not in everything  # never searched, listed, read or named
    reply = [m for m in stack.slack.messages(CHANNEL, "1764430000.000100") if m.get("bot_id")][0]
    blob = json.dumps(reply["blocks"])
    assert f"billing@{stack.repo.head()[:7]}" in blob and f"notify@{two.head()[:7]}" in blob
