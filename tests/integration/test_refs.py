"""Questions about a ref: "… at v1.0", "… on branch release-1", "… as of <sha>" read that ref,
from a remote's mirror (git daemon) and from a repository read in place alike."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from codeask.agent import Turn
from codeask.answer import ask
from codeask.mirror import RepoSpec
from codeask.settings import Settings
from conftest import run_git
from fakes import billing


@pytest.fixture(params=["git", "local"])
def source(request: pytest.FixtureRequest, git_repo: Callable[..., Any]) -> dict[str, Any]:
    work = git_repo("billing")
    first = work.commit(billing.FILES, message="v1")
    work.git("tag", "-a", "v1.0", "-m", "release 1.0")
    work.git("branch", "release-1")
    latest = work.commit({"billing/policy.py": "class RetryPolicy:\n    max_attempts = 9\n"})
    if request.param == "local":
        return {"url": str(work.path), "first": first, "latest": latest, "work": work}
    git_daemon = request.getfixturevalue("git_daemon")
    url = git_daemon.publish(work, "billing.git")
    bare = git_daemon.base / "billing.git"
    run_git("push", "-q", "--tags", str(bare), cwd=work.path)
    run_git("config", "uploadpack.allowAnySHA1InWant", "true", cwd=bare)
    publish = lambda: git_daemon.publish(work, "billing.git")  # noqa: E731
    return {"url": url, "first": first, "latest": latest, "work": work, "publish": publish}


def settings(tmp_path: Path) -> Settings:
    return Settings.from_env({"HOME": str(tmp_path / "h"), "MIRROR_ROOT": str(tmp_path / "m"),
                              "SNAPSHOT_ROOT": str(tmp_path / "s")})  # fmt: skip


def test_a_tag_in_the_question_is_read_and_named(source: dict[str, str], tmp_path: Path) -> None:
    ans = ask("How many retry attempts at v1.0?", RepoSpec.parse(source["url"]), settings(tmp_path))
    assert ans.snapshot.sha == source["first"] and ans.branch == "tag v1.0"
    assert "max_attempts = 5" in (ans.snapshot.root / "billing/policy.py").read_text()


def test_a_branch_in_the_question_is_read(source: dict[str, str], tmp_path: Path) -> None:
    ans = ask(
        "Where is retry on branch release-1?", RepoSpec.parse(source["url"]), settings(tmp_path)
    )
    assert ans.snapshot.sha == source["first"] and ans.branch == "release-1"


def test_a_sha_in_the_question_is_fetched_on_demand(source: dict[str, str], tmp_path: Path) -> None:
    s = settings(tmp_path)
    spec = RepoSpec.parse(source["url"])
    assert ask("Where is retry?", spec, s).snapshot.sha == source["latest"]  # a shallow mirror
    ans = ask(f"How did retry work as of {source['first']}?", spec, s)
    assert ans.snapshot.sha == source["first"] and ans.branch == f"commit {source['first'][:7]}"


def test_a_number_that_is_no_ref_reads_the_default_branch_and_says_so(
    source: dict[str, str], tmp_path: Path
) -> None:
    ans = ask(
        "Why does retry stop at 3.5 seconds?", RepoSpec.parse(source["url"]), settings(tmp_path)
    )
    assert ans.snapshot.sha == source["latest"]
    assert ans.text.startswith("_I could not read tag `3.5`")
    assert ans.verification.unverified == []


def test_a_follow_up_reads_the_commit_its_thread_read(
    source: dict[str, Any], tmp_path: Path
) -> None:
    # Given a thread answered at the latest commit, and a newer commit since
    s = settings(tmp_path)
    spec = RepoSpec.parse(source["url"])
    first = ask("Where is retry?", spec, s)
    newer = source["work"].commit(
        {"billing/policy.py": "class RetryPolicy:\n    max_attempts = 1\n"}
    )
    source.get("publish", lambda: None)()

    # When the thread follows up, and then asks for the latest code
    follow = ask(
        "And who calls it?",
        spec,
        s,
        history=[Turn("Where is retry?", first.text, first.snapshot.sha)],
    )
    latest = ask(
        "And who calls it now?",
        spec,
        s,
        history=[Turn("Where is retry?", first.text, first.snapshot.sha)],
    )

    # Then the follow-up reads the thread's commit, and "now" reads the new one
    assert first.snapshot.sha == follow.snapshot.sha == source["latest"]
    assert latest.snapshot.sha == newer
