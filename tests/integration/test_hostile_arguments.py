"""Hostile tool arguments and file names through the real command line and the real Claude loop."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from codeask.answer import ask
from codeask.mirror import RepoSpec
from codeask.settings import Settings
from fakes.messages_api import FakeMessagesAPI, Reply, text, tool_use

FILES = {
    "billing/worker.py": "def retry_job(job):\n    return job\n",
    "new\nline.py": "retry_marker = 1\n",
    "e\x1b[31mred.py": "retry_marker = 2\n",
}
FINAL = "Retries are in `billing/worker.py:1`, and the marker in `new\\nline.py:1`."

# One of each kind of malformed argument a model has been seen to send, or could.
BAD_CALLS: list[tuple[str, Any]] = [
    ("search_code", {"pattern": "a\x00b"}),
    ("search_code", {"pattern": "\ud800"}),
    ("search_code", {"pattern": "retry", "glob": "{a,{b}}"}),
    ("search_code", {"pattern": "retry", "path": "x\udfff"}),
    ("search_code", {"pattern": "x" * 5000}),
    ("search_code", {"pattern": ["retry"]}),
    ("search_code", {"pattern": "retry", "flags": "--pre=sh"}),
    ("read_file", {"path": "billing/worker.py", "start_line": "²"}),
    ("read_file", {"path": "billing/worker.py", "start_line": "٣"}),
    ("read_file", {"path": "billing/worker.py", "start_line": "9" * 5000}),
    ("read_file", {"path": "billing/worker.py", "start_line": int("9" * 4000)}),
    ("read_file", {"path": "billing/worker.py", "start_line": 1.5}),
    ("read_file", {"path": "billing/worker.py", "end_line": -3}),
    ("read_file", {"path": "billing/worker.py", "start_line": True}),
    ("read_file", {"path": None}),
    ("read_file", {"path": {"nested": "dict"}}),
    ("list_files", {"glob": "[z-a]"}),
    ("delete_everything", {}),
]


@pytest.fixture
def repo(git_repo: Callable[..., Any]) -> Any:
    work = git_repo("billing")
    work.commit(FILES, message="initial")
    return work


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "SYSTEMROOT")}
    return {
        **keep,
        "HOME": str(tmp_path / "home"),
        "MIRROR_ROOT": str(tmp_path / "mirrors"),
        "SNAPSHOT_ROOT": str(tmp_path / "snapshots"),
    }


def tool(repo: Any, env: dict[str, str], name: str, args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codeask.cli", "tool", name, "--repo", str(repo.path), args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        errors="surrogateescape",
    )


@pytest.mark.parametrize(
    ("name", "args"), BAD_CALLS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(BAD_CALLS)]
)
def test_codeask_tool_turns_every_bad_argument_into_an_error_result(
    repo: Any, env: dict[str, str], name: str, args: Any
) -> None:
    # Given a malformed call, written as JSON the way the model's would arrive
    done = tool(repo, env, name, json.dumps(args))
    # Then: exit 1 with the error result on stdout for a tool error, 2 for an unknown tool,
    # and never a traceback
    assert "Traceback" not in done.stderr + done.stdout
    if name == "delete_everything":
        assert done.returncode == 2 and "unknown tool" in done.stderr
    else:
        assert done.returncode == 1, done.stdout + done.stderr
        assert done.stdout.startswith("Error: ")


@pytest.mark.parametrize(
    "args",
    ['{"pattern": 1' + "0" * 5000 + "}", "[" * 30_000 + "]" * 30_000, "not json", '"a string"'],
)
def test_codeask_tool_arguments_that_are_no_json_object_are_bad_input(
    repo: Any, env: dict[str, str], args: str
) -> None:
    done = tool(repo, env, "search_code", args)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("codeask: tool arguments must be a JSON object")


def test_codeask_tool_shows_odd_names_escaped_and_reads_them_back(
    repo: Any, env: dict[str, str]
) -> None:
    found = tool(repo, env, "search_code", '{"pattern": "retry_marker"}')
    assert found.returncode == 0
    assert (
        "new\\nline.py — 1 match" in found.stdout and "e\\x1b[31mred.py — 1 match" in found.stdout
    )
    assert "\x1b" not in found.stdout
    read = tool(repo, env, "read_file", json.dumps({"path": "e\\x1b[31mred.py"}))
    assert read.returncode == 0 and "retry_marker = 2" in read.stdout


@pytest.fixture
def fake() -> Iterator[FakeMessagesAPI]:
    with FakeMessagesAPI() as api:
        yield api


def test_the_loop_survives_every_bad_call_and_posts_its_answer(
    tmp_path: Path, repo: Any, fake: FakeMessagesAPI
) -> None:
    # Given a model that makes every malformed call in one turn, then answers (the API itself
    # refuses a history that calls a tool it did not offer, so that one is left to the CLI test)
    calls = [(name, args) for name, args in BAD_CALLS if name != "delete_everything"]
    fake.script = [
        Reply([tool_use(name, args) for name, args in calls]),
        Reply([text(FINAL)]),
    ]
    settings = Settings.from_env(
        {
            "HOME": str(tmp_path / "home"),
            "MIRROR_ROOT": str(tmp_path / "mirrors"),
            "SNAPSHOT_ROOT": str(tmp_path / "snapshots"),
            "ANTHROPIC_API_KEY": "sk-ant-test",
            "ANTHROPIC_BASE_URL": fake.base_url,
        }
    )
    # When the question is asked
    ans = ask("Where are retries?", RepoSpec.parse(str(repo.path)), settings)
    # Then the answer is the model's, and its citation of an escaped name verifies
    assert ans.mode == "claude" and ans.text == FINAL
    assert ans.verification.ok and {m.path for m in ans.verification.citations} == {
        "billing/worker.py",
        "new\nline.py",
    }
    # And every bad call came back to the model as an is_error result, in the order asked
    results = [
        b
        for b in fake.requests[1].body["messages"][-1]["content"]
        if b.get("type") == "tool_result"
    ]
    assert len(results) == len(calls)
    assert all(r.get("is_error") is True and r["content"].startswith("Error: ") for r in results)


@pytest.mark.parametrize("variable", ["XDG_CACHE_HOME", "SNAPSHOT_ROOT", "MIRROR_ROOT"])
def test_codeask_tool_with_a_file_where_its_storage_goes_is_one_line_of_bad_input(
    repo: Any, env: dict[str, str], tmp_path: Path, variable: str
) -> None:
    # Given a file where the cache home, the snapshots or the mirrors would be made
    (tmp_path / "a-file").write_text("x")
    env = {k: v for k, v in env.items() if k not in ("MIRROR_ROOT", "SNAPSHOT_ROOT")}
    env[variable] = str(tmp_path / "a-file" / ("" if variable == "XDG_CACHE_HOME" else "sub"))

    # When a tool runs
    done = tool(repo, env, "list_files", "{}")

    # Then it is bad input, told in one line that names the setting, with no traceback
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "is not a directory" in done.stderr and len(done.stderr.strip().splitlines()) == 1
