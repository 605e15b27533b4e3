"""The Claude loop through the real anthropic SDK against a scripted fake Messages API on 127.0.0.1."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from codeask.agent import SYSTEM_PROMPT, Turn
from codeask.answer import ask
from codeask.mirror import MirrorStore, RepoSpec
from codeask.model import ModelRejected
from codeask.settings import Settings
from codeask.tools import SEARCH_MAX_CHARS
from fakes import billing
from fakes.messages_api import Fail, FakeMessagesAPI, Reply, text, tool_use

AWS_KEY = "AKIA" + "ZZTESTPLANTED123"
FILES = {
    **billing.FILES,
    "billing/settings.py": f"AWS_ACCESS_KEY_ID = '{AWS_KEY}'\nRETRY_LIMIT = 5\n",
    "tests/test_worker.py": "def test_retry_job():\n    assert retry_job\n",
}
FINAL = (
    "Failed jobs are retried by `retry_job` in `billing/worker.py:6-11`, which sleeps for "
    "`RetryPolicy.backoff` (`billing/policy.py:4-5`): 2^attempt seconds, up to 5 attempts "
    "(`billing/policy.py:2`)."
)


@pytest.fixture
def repo(git_repo: Callable[..., Any]) -> Any:
    work = git_repo("billing")
    work.commit(FILES, message="initial")
    return work


@pytest.fixture
def fake() -> Any:
    with FakeMessagesAPI() as api:
        yield api


def settings_for(tmp_path: Path, fake: FakeMessagesAPI, **env: str) -> Settings:
    return Settings.from_env(
        {
            "HOME": str(tmp_path / "home"),
            "MIRROR_ROOT": str(tmp_path / "mirrors"),
            "SNAPSHOT_ROOT": str(tmp_path / "snapshots"),
            "ANTHROPIC_API_KEY": "sk-ant-test",
            "ANTHROPIC_BASE_URL": fake.base_url,
            **env,
        }
    )


def spec(repo: Any) -> RepoSpec:
    return RepoSpec.parse(str(repo.path))


def investigation() -> list[Reply]:
    """A five-round investigation: search, read, follow the import, read, answer."""
    return [
        Reply(
            [
                text("Let me find the retry code."),
                tool_use("search_code", {"pattern": "def retry_job"}),
            ]
        ),
        Reply(
            [tool_use("read_file", {"path": "billing/worker.py", "start_line": 1, "end_line": 11})]
        ),
        Reply([tool_use("search_code", {"pattern": "class RetryPolicy"})]),
        Reply([tool_use("read_file", {"path": "billing/policy.py"})]),
        Reply([text(FINAL)]),
    ]


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    last = body["messages"][-1]
    return [b for b in last["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]


def test_multi_hop_investigation_answers_with_verified_citations(
    tmp_path: Path, repo: Any, fake: Any
) -> None:
    # Given a model that searches, reads, follows an import and answers
    fake.script = investigation()
    # When a question is asked
    ans = ask("How does retry work for failed jobs?", spec(repo), settings_for(tmp_path, fake))
    # Then the answer is the model's, every citation checks out, and usage is reported
    assert ans.mode == "claude" and ans.text == FINAL
    assert ans.verification.unverified == [] and len(ans.verification.citations) >= 2
    assert ans.tool_calls == 4 and ans.usage["rounds"] == 5
    assert ans.usage["input_tokens"] + ans.usage["cache_read_tokens"] > 0
    assert ans.usage["cost_usd"] > 0
    # And each round fed the previous tool result back, under the id the model gave
    bodies = [r.body for r in fake.requests]
    assert len(bodies) == 5
    first_result = tool_results(bodies[1])[0]
    assert first_result["tool_use_id"] == fake.requests[0].response["content"][1]["id"]
    assert "def retry_job" in first_result["content"]


def test_requests_offer_the_tools_and_mark_the_cache(tmp_path: Path, repo: Any, fake: Any) -> None:
    fake.script = investigation()
    ask("How does retry work?", spec(repo), settings_for(tmp_path, fake))
    for rec in fake.requests:
        body = rec.body
        assert [t["name"] for t in body["tools"]] == ["search_code", "read_file", "list_files"]
        assert body["system"][0]["text"] == SYSTEM_PROMPT
        assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
        marks = [
            b
            for m in body["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
            if "cache_control" in b
        ]
        assert len(marks) == 1 and marks[0] is body["messages"][-1]["content"][-1]
    # later rounds read the growing conversation from the cache
    assert fake.requests[-1].response["usage"]["cache_read_input_tokens"] > 0


def test_planted_secrets_never_reach_the_model_and_results_are_capped(
    tmp_path: Path, repo: Any, fake: Any
) -> None:
    fake.script = [
        Reply(
            [
                tool_use("read_file", {"path": "billing/settings.py"}),
                tool_use("search_code", {"pattern": "."}),
            ]
        ),
        Reply([text("The key is in `billing/settings.py:1`.")]),
    ]
    ask("Where is the AWS key configured?", spec(repo), settings_for(tmp_path, fake))
    for rec in fake.requests:
        assert AWS_KEY.encode() not in rec.raw
    results = tool_results(fake.requests[1].body)
    assert "[REDACTED:aws-access-key]" in results[0]["content"]
    assert all(len(r["content"]) <= SEARCH_MAX_CHARS + 2500 for r in results)


def test_parallel_tool_calls_run_concurrently_and_return_in_one_message(
    tmp_path: Path, repo: Any, fake: Any
) -> None:
    # Given a ripgrep that logs when each search starts and ends, and takes a moment
    log = tmp_path / "rg.log"
    real_rg = str(Path(sys.executable).parent / "rg")
    slow = tmp_path / "slow-rg"
    slow.write_text(
        f'#!/bin/sh\necho "start $$" >> {log}\nsleep 0.6\n"{real_rg}" "$@"\nrc=$?\necho "end $$" >> {log}\nexit $rc\n'
    )
    slow.chmod(slow.stat().st_mode | stat.S_IEXEC)
    fake.script = [
        Reply([
            tool_use("search_code", {"pattern": "retry_job"}),
            tool_use("search_code", {"pattern": "RetryPolicy"}),
            tool_use("search_code", {"pattern": "backoff"}),
        ]),
        Reply([text(FINAL)]),
    ]  # fmt: skip
    ask("How does retry work?", spec(repo), settings_for(tmp_path, fake, RG_PATH=str(slow)))
    # Then all three results come back together, in the order asked
    results = tool_results(fake.requests[1].body)
    calls = fake.requests[0].response["content"]
    assert [r["tool_use_id"] for r in results] == [c["id"] for c in calls]
    assert "retry_job" in results[0]["content"] and "backoff" in results[2]["content"]
    # And the searches overlapped: a second one started before the first one ended
    events = log.read_text().split()
    kinds = events[0::2]
    assert kinds.index("end") >= 2, f"searches ran one after another: {kinds}"


def test_a_tool_error_goes_back_to_the_model_which_recovers(
    tmp_path: Path, repo: Any, fake: Any
) -> None:
    fake.script = [
        Reply([tool_use("read_file", {"path": "../../etc/passwd"})]),
        Reply([tool_use("search_code", {"pattern": "def retry_job"})]),
        Reply([text("Retries are in `billing/worker.py:6`.")]),
    ]
    ans = ask("Where is retry?", spec(repo), settings_for(tmp_path, fake))
    err = tool_results(fake.requests[1].body)[0]
    assert err["is_error"] is True and "not allowed" in err["content"]
    assert ans.text == "Retries are in `billing/worker.py:6`." and ans.verification.ok


def test_an_invented_path_is_flagged_not_dropped(tmp_path: Path, repo: Any, fake: Any) -> None:
    fake.script = [
        Reply([text("Retries: `billing/worker.py:6`; validation: `utils/validation.py:12`.")])
    ]
    ans = ask("Where is retry?", spec(repo), settings_for(tmp_path, fake))
    assert "utils/validation.py" in ans.text
    assert [m.path for m in ans.verification.unverified] == ["utils/validation.py"]
    assert ans.warning and "utils/validation.py" in ans.warning
    assert [m.path for m in ans.verification.citations] == ["billing/worker.py"]


def test_overloaded_then_success_is_retried(tmp_path: Path, repo: Any, fake: Any) -> None:
    fake.script = [Fail(529), Fail(429, retry_after=0.2), Reply([text(FINAL)])]
    ans = ask("How does retry work?", spec(repo), settings_for(tmp_path, fake))
    assert ans.mode == "claude" and ans.text == FINAL
    assert [r.status for r in fake.requests] == [529, 429, 200]


@pytest.mark.timeout(120)  # retrying past the deadline would hang here and fail
def test_overloaded_until_the_deadline_falls_back_to_search_only(
    tmp_path: Path, repo: Any, fake: Any
) -> None:
    fake.script = lambda body: Fail(529)
    settings = settings_for(tmp_path, fake)
    ans = ask(
        "How does the retry policy work?", spec(repo), settings, deadline=time.monotonic() + 6
    )
    assert ans.mode == "search-only"
    assert ans.text.startswith("**Search-only answer** (the model was unavailable")
    assert ans.verification.ok and ans.verification.citations
    assert len(fake.requests) >= 2  # it did retry


def test_a_bad_key_is_a_clear_error_not_a_retry_loop(tmp_path: Path, repo: Any, fake: Any) -> None:
    fake.script = lambda body: Fail(401, message="invalid x-api-key")
    with pytest.raises(ModelRejected, match="invalid x-api-key"):
        ask("Where is retry?", spec(repo), settings_for(tmp_path, fake))
    assert len(fake.requests) == 1


def test_round_budget_asks_for_the_best_answer_and_says_it_stopped(
    tmp_path: Path, repo: Any, fake: Any
) -> None:
    # Given a model that would search forever
    def script(body: dict[str, Any]) -> Reply:
        if body.get("tool_choice") == {"type": "none"}:
            return Reply([text("Best so far: `billing/worker.py:6`.")])
        return Reply([tool_use("search_code", {"pattern": "retry"})])

    fake.script = script
    ans = ask("Where is retry?", spec(repo), settings_for(tmp_path, fake, CODEASK_MAX_ROUNDS="3"))
    # Then the third call has no tools, asks for an answer, and the answer says it stopped early
    assert len(fake.requests) == 3
    last = fake.requests[-1].body
    assert last["tool_choice"] == {"type": "none"}
    assert "budget for this question is used up" in json.dumps(last["messages"][-1])
    assert ans.stopped_early == "rounds"
    assert ans.text.startswith("_Stopped early (it reached the tool-call limit)")
    assert "`billing/worker.py:6`" in ans.text


def test_deadline_too_close_for_any_call_answers_honestly(
    tmp_path: Path, repo: Any, fake: Any
) -> None:
    fake.script = [Reply([text(FINAL)])]
    ans = ask(
        "Where is retry?", spec(repo), settings_for(tmp_path, fake), deadline=time.monotonic() + 1
    )
    assert ans.text.startswith("I ran out of time")
    assert fake.requests == []


def test_follow_up_reads_the_threads_commit_unless_asked_for_the_latest(
    tmp_path: Path, repo: Any, fake: Any
) -> None:
    settings = settings_for(tmp_path, fake)
    store = MirrorStore.from_settings(settings)
    first_sha = repo.head()
    fake.script = [Reply([text(FINAL)])]
    first = ask("How does retry work?", spec(repo), settings, store=store)
    assert first.snapshot.sha == first_sha
    repo.commit({"billing/policy.py": "class RetryPolicy:\n    max_attempts = 9\n"})
    history = [Turn("How does retry work?", first.text, first_sha)]
    # a follow-up stays on the thread's commit
    fake.script = [Reply([text("Five attempts, see `billing/policy.py:2`.")])]
    follow = ask("And how many attempts?", spec(repo), settings, store=store, history=history)
    assert follow.snapshot.sha == first_sha
    body = fake.requests[-1].body
    assert body["messages"][0]["content"] == "Question: How does retry work?"
    assert FINAL in json.dumps(body["messages"][1])
    # unless the asker wants the latest code
    fake.script = [Reply([text("Now nine, see `billing/policy.py:2`.")])]
    latest = ask(
        "What about on the latest main?", spec(repo), settings, store=store, history=history
    )
    assert latest.snapshot.sha == repo.head() != first_sha


def test_bedrock_provider_goes_through_invoke_model(tmp_path: Path, repo: Any, fake: Any) -> None:
    fake.script = [Reply([text(FINAL)])]
    settings = Settings.from_env(
        {
            "HOME": str(tmp_path / "home"),
            "MIRROR_ROOT": str(tmp_path / "mirrors"),
            "SNAPSHOT_ROOT": str(tmp_path / "snapshots"),
            "CODEASK_PROVIDER": "bedrock",
            "AWS_REGION": "us-east-1",
            "ANTHROPIC_BEDROCK_BASE_URL": fake.base_url,
            "CODEASK_MODEL": "us.anthropic.claude-sonnet-5-v1:0",
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
        }
    )
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    ans = ask("How does retry work?", spec(repo), settings)
    assert ans.mode == "claude" and ans.text == FINAL
    assert fake.requests[0].path.startswith("/model/us.anthropic.claude-sonnet-5-v1")


def test_cli_deadline_and_json_report_usage(tmp_path: Path, repo: Any, fake: Any) -> None:
    fake.script = investigation()
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path / "home"),
        "MIRROR_ROOT": str(tmp_path / "mirrors"),
        "SNAPSHOT_ROOT": str(tmp_path / "snapshots"),
        "ANTHROPIC_API_KEY": "sk-ant-test",
        "ANTHROPIC_BASE_URL": fake.base_url,
    }
    done = subprocess.run(
        [sys.executable, "-m", "codeask.cli", "ask", "--json", "--deadline", "60", "--repo",
         str(repo.path), "How does retry work?"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["mode"] == "claude" and out["model"] == "claude-sonnet-5"
    for key in (
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "cost_usd",
    ):
        assert key in out["usage"]
    assert "search `def retry_job`" in done.stderr  # each tool call shows as it happens
    bad = subprocess.run(
        [sys.executable, "-m", "codeask.cli", "ask", "--deadline", "-1", "--repo", str(repo.path), "q"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert bad.returncode == 2 and "--deadline" in bad.stderr


def test_cost_budget_stops_the_loop(tmp_path: Path, repo: Any, fake: Any) -> None:
    def script(body: dict[str, Any]) -> Reply:
        if body.get("tool_choice") == {"type": "none"}:
            return Reply([text("Best so far: `billing/worker.py:6`.")])
        return Reply([tool_use("search_code", {"pattern": "retry"})], output_tokens=2000)

    fake.script = script
    settings = settings_for(tmp_path, fake, CODEASK_MAX_COST_USD="0.01")
    ans = ask("Where is retry?", spec(repo), settings)
    # 2,000 output tokens cost $0.03 at the default price: one round is over the cap
    assert len(fake.requests) == 2 and ans.stopped_early == "cost"
    assert ans.text.startswith("_Stopped early (it reached the cost limit)")
    assert ans.usage["cost_usd"] >= 0.03


def test_an_answer_cut_at_the_output_limit_says_it_stopped_early(
    tmp_path: Path, repo: Any, fake: Any
) -> None:
    # Given a model whose answer runs into max_tokens
    fake.script = [
        Reply([text("Retries are in `billing/worker.py:6`, and")], stop_reason="max_tokens")
    ]
    ans = ask("Where is retry?", spec(repo), settings_for(tmp_path, fake))
    # Then what it wrote is the answer, marked where it was cut short by the output budget
    # (at its end: the note comes where the words stop, also when the answer streamed)
    assert ans.stopped_early == "output" and ans.usage["rounds"] == 1
    assert ans.text.startswith("Retries are in `billing/worker.py:6`, and\n\n")
    assert ans.text.endswith(
        "_Stopped early (it reached the answer-length limit), so this answer may be incomplete._"
    )


def test_a_final_round_with_no_text_answers_with_what_was_looked_at(
    tmp_path: Path, repo: Any, fake: Any
) -> None:
    # Given a model that searches, then writes nothing when it must answer
    def script(body: dict[str, Any]) -> Reply:
        if body.get("tool_choice") == {"type": "none"}:
            return Reply([text(" ")])
        return Reply([tool_use("search_code", {"pattern": "retry_job"})])

    fake.script = script
    ans = ask("Where is retry?", spec(repo), settings_for(tmp_path, fake, CODEASK_MAX_ROUNDS="2"))
    # Then the reply lists the search it ran instead of an empty answer
    assert len(fake.requests) == 2 and ans.stopped_early == "rounds"
    assert "• searched for `retry_job`" in ans.text
