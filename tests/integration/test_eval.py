"""`codeask eval`: questions with known answers, scored on a real repository in search-only mode."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import cli_env, run_codeask
from fakes import billing


def codeask(*args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    return run_codeask(*args, env=cli_env(tmp))


@pytest.fixture
def cases(tmp_path: Path, git_repo: Callable[..., Any]) -> Path:
    repo = git_repo("billing")
    repo.commit(billing.FILES)
    rows = [
        {"id": "retry", "repo": "billing", "question": "Where is the retry backoff computed?",
         "expected": [{"path": "billing/policy.py", "line": 4}]},
        {"id": "miss", "repo": "billing", "question": "Where is the retry backoff computed?",
         "expected": [{"path": "billing/nowhere.py"}]},
        {"id": "by-path", "repo": str(repo.path), "question": "Where do jobs get retried?",
         "expected": [{"path": "billing/worker.py"}]},
    ]  # fmt: skip
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (tmp_path / "repo-path").write_text(str(repo.path))
    return path


def test_eval_scores_each_case_and_sums_up(cases: Path, tmp_path: Path) -> None:
    repo = (tmp_path / "repo-path").read_text()
    done = codeask("eval", str(cases), "--repo", f"billing={repo}", tmp=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("✓ retry  rank 1")
    assert lines[1].startswith("✗ miss") and "expected: billing/nowhere.py" in lines[2]
    assert any(line.startswith("✓ by-path") for line in lines)
    assert "3 cases (search-only): 67% hit the expected location" in done.stdout
    assert "0 invented paths" in done.stdout


def test_eval_json_gives_one_result_per_case_and_a_summary(cases: Path, tmp_path: Path) -> None:
    repo = (tmp_path / "repo-path").read_text()
    done = codeask("eval", str(cases), "--json", "--repo", f"billing={repo}", tmp=tmp_path)
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["id"] for r in rows[:3]] == ["retry", "miss", "by-path"]
    assert rows[0]["hit"] is True and rows[0]["mode"] == "search-only" and rows[0]["tool_calls"] > 0
    assert rows[3]["summary"]["cases"] == 3 and rows[3]["summary"]["top3_rate"] == pytest.approx(
        2 / 3
    )


def test_a_bad_case_file_names_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"repo": "x", "question": "q", "expected": [{"path": "a.py"}]}\n{"repo": "x"}\n'
    )
    done = codeask("eval", str(bad), tmp=tmp_path)
    assert done.returncode == 2 and "bad.jsonl:2" in done.stderr


@pytest.mark.parametrize("json_out", [False, True])
def test_a_case_that_could_not_run_fails_the_run_after_every_result(
    cases: Path, tmp_path: Path, json_out: bool
) -> None:
    # Given the cases above, one of them about a repository that cannot be synced
    rows = [json.loads(line) for line in cases.read_text().splitlines()]
    gone = {"id": "gone", "repo": str(tmp_path / "no-such-repo"), "question": "Where is it?",
            "expected": [{"path": "a.py"}]}  # fmt: skip
    cases.write_text("\n".join(json.dumps(r) for r in [rows[0], gone, *rows[1:]]) + "\n")
    repo = (tmp_path / "repo-path").read_text()

    # When the cases are run
    flags = ["--json"] if json_out else []
    done = codeask("eval", str(cases), *flags, "--repo", f"billing={repo}", tmp=tmp_path)

    # Then the run fails, yet every case's result and the summary are printed
    assert done.returncode == 1, done.stderr
    if json_out:
        out = [json.loads(line) for line in done.stdout.splitlines()]
        assert [r["id"] for r in out[:4]] == ["retry", "gone", "miss", "by-path"]
        assert out[1]["error"] and out[0]["hit"] is True
        assert out[4]["summary"]["cases"] == 4 and out[4]["summary"]["errors"] == 1
    else:
        assert done.stdout.startswith("✓ retry")
        assert "✗ gone  error:" in done.stdout and "✓ by-path" in done.stdout
        assert "4 cases (error, search-only)" in done.stdout and "1 errors" in done.stdout


def test_a_run_whose_cases_all_ran_exits_0_even_when_every_case_missed(
    cases: Path, tmp_path: Path
) -> None:
    rows = [json.loads(line) for line in cases.read_text().splitlines()]
    cases.write_text(json.dumps(rows[1]) + "\n")  # the case whose expected file does not exist
    repo = (tmp_path / "repo-path").read_text()
    done = codeask("eval", str(cases), "--repo", f"billing={repo}", tmp=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("✗ miss") and "0% hit the expected location" in done.stdout


def test_eval_help_names_its_exit_codes(tmp_path: Path) -> None:
    done = codeask("eval", "--help", tmp=tmp_path)
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    assert "1 when any case errored" in text and "Exit 0 when every case ran" in text
