"""The `codeask` command line end to end: a real git repo, a real mirror, real ripgrep, no model."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import GitWorkTree, cli_env
from conftest import run_codeask as codeask
from fakes import billing

SLACK_TOKEN = "xoxb-" + "2222222222-3333333333-" + "ZyXwVuTsRqPoNmLkJiHgFeDc"

FILES = {
    **billing.FILES,
    "billing/slack.py": f"TOKEN = '{SLACK_TOKEN}'  # retry notifications\n",
    "tests/test_worker.py": "def test_retry_job():\n    assert retry_job\n",
    ".env": "DATABASE_PASSWORD=retry-hunter2-Zk8q\n",
}


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return cli_env(tmp_path)


@pytest.fixture
def repo(git_repo: Callable[..., GitWorkTree]) -> GitWorkTree:
    work = git_repo("billing")
    work.commit(FILES, message="initial")
    return work


def test_ask_json_has_the_documented_shape(repo, env: dict[str, str]) -> None:
    # Given a repository and no model key
    # When a question is asked with --json
    done = codeask(
        "ask", "--json", "--repo", str(repo.path), "How does the retry backoff work?", env=env
    )
    # Then it answers in search-only mode from the current head, with verified citations
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["mode"] == "search-only"
    assert out["repos"][0]["sha"] == repo.head()
    assert out["repos"][0]["name"] == "billing"
    cited = {c["path"] for c in out["citations"]}
    assert {"billing/worker.py", "billing/policy.py"} & cited
    assert all(c["verified"] for c in out["citations"]) and out["unverified"] == []
    for key in ("answer", "searches", "tool_calls", "timings_ms", "usage", "stale", "warning"):
        assert key in out
    assert out["searches"] and out["tool_calls"] >= len(out["searches"])
    assert out["answer"].startswith("**Search-only answer**")
    # progress went to stderr, not into the JSON
    assert "reading in place billing" in done.stderr and "searched" in done.stderr


def test_ask_text_states_the_sha_and_never_prints_secrets(repo, env: dict[str, str]) -> None:
    done = codeask("ask", "--repo", str(repo.path), "Where are retry notifications sent?", env=env)
    assert done.returncode == 0, done.stderr
    assert f"billing@{repo.head()[:7]}" in done.stdout
    assert SLACK_TOKEN not in done.stdout + done.stderr
    assert "hunter2" not in done.stdout + done.stderr


def test_a_new_commit_is_picked_up_by_the_next_question(repo, env: dict[str, str]) -> None:
    first = json.loads(
        codeask("ask", "--json", "--repo", str(repo.path), "retry policy?", env=env).stdout
    )
    sha = repo.commit({"billing/policy.py": "class RetryPolicy:\n    max_attempts = 9\n"})
    second = json.loads(
        codeask("ask", "--json", "--repo", str(repo.path), "retry policy?", env=env).stdout
    )
    assert first["repos"][0]["sha"] != sha and second["repos"][0]["sha"] == sha


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["ask", "--repo", "/no/such/dir", "where?"], "/no/such/dir"),
        (["ask", "--repo", ".", "   "], "question is empty"),
        (["tool", "search_code", "{not json", "--repo", "."], "JSON"),
        (["tool", "search_code", "[1, 2]", "--repo", "."], "JSON object"),
        (["tool", "rm_rf", "{}", "--repo", "."], "unknown tool"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(
    repo, env: dict[str, str], args: list[str], message: str
) -> None:
    args = [str(repo.path) if a == "." else a for a in args]
    done = codeask(*args, env=env)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_unreachable_remote_without_a_mirror_exits_3(env: dict[str, str]) -> None:
    from conftest import free_port

    url = f"git://127.0.0.1:{free_port()}/nothing.git"
    done = codeask("ask", "--repo", url, "where is anything?", env=env)
    assert done.returncode == 3, (done.stdout, done.stderr)
    assert "127.0.0.1" in done.stderr and "Traceback" not in done.stderr


def test_unreachable_remote_with_a_mirror_answers_marked_stale(
    repo, git_daemon, env: dict[str, str]
) -> None:
    # Given a remote that answered once
    url = git_daemon.publish(repo, "billing.git")
    ok = json.loads(codeask("ask", "--json", "--repo", url, "retry policy?", env=env).stdout)
    assert ok["stale"] is None
    # When it goes away
    git_daemon.stop()
    done = codeask("ask", "--repo", url, "retry policy?", env=env)
    # Then the answer still comes, from the last good mirror, with a visible note
    assert done.returncode == 0, done.stderr
    assert f"may be stale — as of {repo.head()[:7]}" in done.stdout


def test_tool_prints_exactly_what_the_model_receives(repo, env: dict[str, str]) -> None:
    # the documented order: options before the JSON arguments
    done = codeask(
        "tool", "search_code", "--repo", str(repo.path), '{"pattern": "def retry_job"}', env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("1 match in 1 file for `def retry_job`")
    assert "\nD  6  def retry_job(job, policy: RetryPolicy):\n" in done.stdout
    assert "time.sleep(policy.backoff(attempt))" in done.stdout  # a small function comes whole
    denied = codeask("tool", "read_file", '{"path": ".env"}', "--repo", str(repo.path), env=env)
    assert (
        denied.returncode == 1 and "deny-list" in denied.stdout and "hunter2" not in denied.stdout
    )
    secret = codeask(
        "tool", "read_file", '{"path": "billing/slack.py"}', "--repo", str(repo.path), env=env
    )
    assert SLACK_TOKEN not in secret.stdout and "[REDACTED:slack-token]" in secret.stdout


def test_verify_flags_invented_paths(repo, env: dict[str, str]) -> None:
    answer = "Retries live in `billing/worker.py:6`, configured by `utils/validation.py`."
    done = codeask("verify", "--repo", str(repo.path), env=env, stdin=answer)
    assert done.returncode == 1
    assert "✓ billing/worker.py:6" in done.stdout
    assert "✗ utils/validation.py" in done.stdout and "no such file" in done.stdout
    good = codeask("verify", "--repo", str(repo.path), env=env, stdin="See billing/policy.py:1-5.")
    assert good.returncode == 0 and "verified" in good.stdout


def test_credentials_in_a_remote_url_are_never_printed(env: dict[str, str]) -> None:
    from conftest import free_port

    url = f"http://x-access-token:{'ghp_' + 'S3cr3tT0ken' * 4}@127.0.0.1:{free_port()}/acme/x.git"
    done = codeask("ask", "--repo", url, "where is anything?", env=env)
    assert done.returncode == 3
    assert "S3cr3tT0ken" not in done.stdout + done.stderr
    assert "127.0.0.1" in done.stderr
