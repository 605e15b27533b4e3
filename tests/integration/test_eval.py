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
