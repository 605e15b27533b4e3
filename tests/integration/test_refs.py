"""Questions about a ref: "… at v1.0", "… on branch release-1", "… as of <sha>" read that ref."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from codeask.answer import ask
from codeask.mirror import RepoSpec
from codeask.settings import Settings
from conftest import run_git
from fakes import billing


@pytest.fixture
def remote(git_repo: Callable[..., Any], git_daemon: Any) -> dict[str, str]:
    work = git_repo("billing")
    first = work.commit(billing.FILES, message="v1")
    work.git("tag", "-a", "v1.0", "-m", "release 1.0")
    work.git("branch", "release-1")
    latest = work.commit({"billing/policy.py": "class RetryPolicy:\n    max_attempts = 9\n"})
    url = git_daemon.publish(work, "billing.git")
    bare = git_daemon.base / "billing.git"
    run_git("push", "-q", "--tags", str(bare), cwd=work.path)
    run_git("config", "uploadpack.allowAnySHA1InWant", "true", cwd=bare)
    return {"url": url, "first": first, "latest": latest}


def settings(tmp_path: Path) -> Settings:
    return Settings.from_env({"HOME": str(tmp_path / "h"), "MIRROR_ROOT": str(tmp_path / "m"),
                              "SNAPSHOT_ROOT": str(tmp_path / "s")})  # fmt: skip


def test_a_tag_in_the_question_is_read_and_named(remote: dict[str, str], tmp_path: Path) -> None:
    ans = ask("How many retry attempts at v1.0?", RepoSpec.parse(remote["url"]), settings(tmp_path))
    assert ans.snapshot.sha == remote["first"] and ans.branch == "tag v1.0"
    assert "max_attempts = 5" in (ans.snapshot.root / "billing/policy.py").read_text()


def test_a_branch_in_the_question_is_read(remote: dict[str, str], tmp_path: Path) -> None:
    ans = ask(
        "Where is retry on branch release-1?", RepoSpec.parse(remote["url"]), settings(tmp_path)
    )
    assert ans.snapshot.sha == remote["first"] and ans.branch == "release-1"


def test_a_sha_in_the_question_is_fetched_on_demand(remote: dict[str, str], tmp_path: Path) -> None:
    s = settings(tmp_path)
    spec = RepoSpec.parse(remote["url"])
    assert ask("Where is retry?", spec, s).snapshot.sha == remote["latest"]  # a shallow mirror
    ans = ask(f"How did retry work as of {remote['first']}?", spec, s)
    assert ans.snapshot.sha == remote["first"] and ans.branch == f"commit {remote['first'][:7]}"


def test_a_number_that_is_no_ref_reads_the_default_branch_and_says_so(
    remote: dict[str, str], tmp_path: Path
) -> None:
    ans = ask(
        "Why does retry stop at 3.5 seconds?", RepoSpec.parse(remote["url"]), settings(tmp_path)
    )
    assert ans.snapshot.sha == remote["latest"]
    assert ans.text.startswith("_I could not read tag `3.5`")
    assert ans.verification.unverified == []
