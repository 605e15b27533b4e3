"""`codeask ask` and `codeask tool` on repositories on this disk: read in place, every shape of them."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import GitWorkTree, cli_env, run_git
from conftest import run_codeask as codeask
from conftest import tree_state as state
from fakes import billing


def ask_json(repo: Path | str, question: str, env: dict[str, str]) -> dict[str, Any]:
    done = codeask("ask", "--json", "--repo", str(repo), question, env=env)
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def listed(repo: Path | str, env: dict[str, str]) -> list[str]:
    done = codeask("tool", "list_files", "--repo", str(repo), "{}", env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return cli_env(tmp_path)


@pytest.fixture
def work(git_repo: Callable[..., GitWorkTree]) -> GitWorkTree:
    w = git_repo("billing")
    w.commit(billing.FILES, message="v1")
    w.git("tag", "-a", "v1.0", "-m", "release 1.0")
    w.git("branch", "release-1")
    w.commit({"billing/policy.py": "class RetryPolicy:\n    max_attempts = 9\n"}, message="v2")
    return w


def test_a_work_tree_is_answered_in_place_and_left_untouched(
    work: GitWorkTree, env: dict[str, str], tmp_path: Path
) -> None:
    # Given a work tree with history
    before = state(work.path)

    # When a question is asked about it, and a tool run on it
    out = ask_json(work.path, "How many retry attempts?", env)
    files = listed(work.path, env)

    # Then its head commit is answered, without a mirror of it, and not a byte of it changed
    assert (out["repos"][0]["sha"], out["repos"][0]["branch"]) == (work.head(), "main")
    assert out["uncommitted"] == []
    assert "billing/policy.py" in files
    assert not (tmp_path / "mirrors").exists()
    assert state(work.path) == before


def test_uncommitted_changes_are_said_to_be_left_out_everywhere(
    work: GitWorkTree, env: dict[str, str]
) -> None:
    # Given a work tree with an edited file and a new, untracked one
    (work.path / "billing/policy.py").write_text("class RetryPolicy:\n    max_attempts = 99\n")
    (work.path / "billing/draft.py").write_text("def draft_retry():\n    pass\n")

    # When asked on the terminal, as JSON, and through a tool
    text = codeask("ask", "--repo", str(work.path), "How many retry attempts?", env=env)
    out = ask_json(work.path, "How many retry attempts?", env)
    tool = codeask("tool", "list_files", "--repo", str(work.path), "{}", env=env)

    # Then each says which commit it read and that the changes are not included
    note = (
        "billing: uncommitted changes in the working tree (1 changed file, 1 untracked) are not "
        f"included; this reads commit {work.head()[:7]}"
    )
    assert text.returncode == 0 and f"⚠️ {note}" in text.stdout
    assert out["uncommitted"] == [
        {"repo": "billing", "sha": work.head(), "changed": 1, "untracked": 1, "message": note}
    ]
    assert note in tool.stderr and "draft.py" not in tool.stdout and note not in tool.stdout


def test_a_new_commit_between_two_questions_is_read(work: GitWorkTree, env: dict[str, str]) -> None:
    # Given a repository asked about once
    first = ask_json(work.path, "retry policy?", env)

    # When a commit adds a file, and the next question comes
    sha = work.commit({"billing/backoff.py": "def backoff_seconds(n):\n    return 2**n\n"})
    second = ask_json(work.path, "retry policy?", env)

    # Then the second question reads the new commit and sees the new file
    assert (first["repos"][0]["sha"], second["repos"][0]["sha"]) == (
        work.git("rev-parse", "HEAD~1"),
        sha,
    )
    assert "billing/backoff.py" in listed(work.path, env)


def test_a_bare_repository_and_a_file_url(
    work: GitWorkTree, env: dict[str, str], tmp_path: Path
) -> None:
    # Given a bare clone of the repository
    bare = tmp_path / "billing.git"
    run_git("clone", "-q", "--bare", work.path, bare)
    before = state(bare)

    # When asked by path and by file:// URL
    by_path = ask_json(bare, "How many retry attempts?", env)
    by_url = ask_json(bare.as_uri(), "How many retry attempts?", env)

    # Then both read main at its head, and the bare repository is untouched
    for out in (by_path, by_url):
        assert (out["repos"][0]["sha"], out["repos"][0]["branch"]) == (work.head(), "main")
    assert state(bare) == before


def test_a_worktree_is_read_at_its_own_branch(
    work: GitWorkTree, env: dict[str, str], tmp_path: Path
) -> None:
    # Given a worktree on the release branch
    wt = tmp_path / "release-wt"
    work.git("worktree", "add", "-q", str(wt), "release-1")

    # When asked about
    out = ask_json(wt, "How many retry attempts?", env)

    # Then the worktree's branch is read, not the main work tree's
    assert (out["repos"][0]["branch"], out["repos"][0]["sha"]) == (
        "release-1",
        work.git("rev-parse", "release-1"),
    )


def test_a_clone_with_alternates_is_read(
    work: GitWorkTree, env: dict[str, str], tmp_path: Path
) -> None:
    # Given a clone that borrows its objects (git clone --shared)
    clone = tmp_path / "shared"
    run_git("clone", "-q", "--shared", work.path, clone)

    # When asked about  Then its files and commit are read through the alternates
    out = ask_json(clone, "How many retry attempts?", env)
    assert out["repos"][0]["sha"] == work.head()
    assert "billing/policy.py" in listed(clone, env)


def test_a_detached_head_is_read_and_named(work: GitWorkTree, env: dict[str, str]) -> None:
    # Given a work tree checked out at the tag, detached
    work.git("checkout", "-q", "v1.0")

    # When asked about  Then the tag's commit is read and the footer says the HEAD is detached
    out = ask_json(work.path, "How many retry attempts?", env)
    assert (out["repos"][0]["sha"], out["repos"][0]["branch"]) == (
        work.git("rev-parse", "v1.0^{commit}"),
        "detached HEAD",
    )
    text = codeask("ask", "--repo", str(work.path), "How many retry attempts?", env=env)
    assert f"billing@{out['repos'][0]['sha'][:7]} (detached HEAD)" in text.stdout


@pytest.mark.parametrize(
    ("question", "ref", "label"),
    [
        ("How many retry attempts at v1.0?", "v1.0^{commit}", "tag v1.0"),
        ("Where is retry on branch release-1?", "release-1", "release-1"),
        ("How did retry work as of {short}?", "HEAD~1", "commit {short}"),
    ],
)
def test_a_ref_named_in_the_question_is_read_from_the_repository(
    work: GitWorkTree, env: dict[str, str], question: str, ref: str, label: str
) -> None:
    # Given a repository whose older commit is also a tag, a branch and a short SHA
    sha = work.git("rev-parse", ref)
    short = sha[:7]

    # When a question names it
    out = ask_json(work.path, question.format(short=short), env)

    # Then that commit is read from the repository's own history and labelled as asked
    assert (out["repos"][0]["sha"], out["repos"][0]["branch"]) == (sha, label.format(short=short))
