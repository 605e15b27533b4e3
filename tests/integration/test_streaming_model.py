"""The answer streamed from the model through the real anthropic SDK, the fake Messages API
speaking server-sent events: what reaches the reader, retries, and streams that break off."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from codeask.answer import ask
from codeask.holdback import Settled
from codeask.mirror import RepoSpec
from codeask.render import body_markdown
from codeask.settings import Settings
from fakes import billing
from fakes.messages_api import Cut, Fail, FakeMessagesAPI, Reply, text, tokens_of, tool_use

FINAL = (
    "Failed jobs are retried by `retry_job`, which sleeps 2^attempt seconds between tries.\n\n"
    "- `billing/worker.py:6-11` — the loop, up to `policy.max_attempts` times\n"
    "- `billing/policy.py:4-5` — `RetryPolicy.backoff`, the 2^attempt sleep"
)
PREAMBLE = "Let me find the retry code."


@pytest.fixture
def repo(git_repo: Callable[..., Any]) -> Any:
    work = git_repo("billing")
    work.commit(billing.FILES, message="initial")
    return work


@pytest.fixture
def fake() -> Any:
    with FakeMessagesAPI() as api:
        yield api


def env_for(tmp_path: Path, fake: FakeMessagesAPI) -> dict[str, str]:
    return {
        "HOME": str(tmp_path / "home"),
        "MIRROR_ROOT": str(tmp_path / "mirrors"),
        "SNAPSHOT_ROOT": str(tmp_path / "snapshots"),
        "ANTHROPIC_API_KEY": "sk-ant-test",
        "ANTHROPIC_BASE_URL": fake.base_url,
    }


def settings_for(tmp_path: Path, fake: FakeMessagesAPI) -> Settings:
    return Settings.from_env(env_for(tmp_path, fake))


class Screen:
    """Records what the reader was shown, update by update, as Slack would render it."""

    def __init__(self) -> None:
        self.updates: list[Settled] = []
        self.states: list[str] = []

    def show(self, settled: Settled) -> None:
        self.updates.append(settled)
        self.states.append(body_markdown(settled.text, settled.verification))


def run(tmp_path: Path, repo: Any, fake: Any, **kwargs: Any) -> tuple[Any, Screen, list[str]]:
    screen = Screen()
    progress: list[str] = []
    ans = ask(
        "Where are failed jobs retried?",
        RepoSpec.parse(str(repo.path)),
        settings_for(tmp_path, fake),
        on_event=progress.append,
        sink=screen,
        **kwargs,
    )
    return ans, screen, progress


def only_grew(states: list[str]) -> bool:
    return all(b.startswith(a) for a, b in zip(states, states[1:], strict=False))


def test_the_answer_streams_and_the_words_before_a_tool_call_go_to_the_status_line(
    tmp_path: Path, repo: Any, fake: Any
) -> None:
    # Given a model that says what it will do, calls a tool, then answers
    fake.script = [
        Reply([text(PREAMBLE), tool_use("search_code", {"pattern": "def retry_job"})]),
        Reply([text(FINAL)]),
    ]
    ans, screen, progress = run(tmp_path, repo, fake)
    # Then every round was streamed, the answer reached the reader in many growing steps,
    # ending as the posted body, and the preamble was a status line, never part of the answer
    assert all(r.streamed for r in fake.requests)
    assert len(screen.states) > 5 and only_grew(screen.states)
    assert screen.updates[-1].done and screen.updates[-1].text == ans.text == FINAL
    assert screen.states[-1] == body_markdown(ans.text, ans.verification)
    assert PREAMBLE in progress and not any("Let me" in s for s in screen.states)
    assert ans.verification.ok


def test_a_long_preamble_that_was_shown_stays_part_of_the_answer(
    tmp_path: Path, repo: Any, fake: Any
) -> None:
    # Given a model that writes a whole paragraph before it calls a tool
    opening = "The retry logic is spread over two files. " * 6
    fake.script = [
        Reply([text(opening), tool_use("read_file", {"path": "billing/policy.py"})]),
        Reply([text(FINAL)]),
    ]
    ans, screen, _ = run(tmp_path, repo, fake)
    # Then what the reader saw stays: the answer is both, and the stream only grew
    assert ans.text == opening.strip() + "\n\n" + FINAL
    assert only_grew(screen.states) and screen.updates[-1].text == ans.text


def test_a_stream_that_breaks_before_anything_was_shown_is_asked_again(
    tmp_path: Path, repo: Any, fake: Any
) -> None:
    # Given a stream that breaks after its first token (a word still being written: not shown)
    fake.script = [Reply([text(FINAL)], cut=Cut(1)), Reply([text(FINAL)])]
    ans, screen, progress = run(tmp_path, repo, fake)
    # Then it was asked again, and the answer came once, not twice
    assert len(fake.requests) == 2 and ans.text == FINAL
    assert ans.stopped_early is None and only_grew(screen.states)
    assert any("retrying" in p for p in progress)


def test_a_stream_that_breaks_after_words_were_shown_ends_honestly_without_repeating(
    tmp_path: Path, repo: Any, fake: Any
) -> None:
    # Given a stream that breaks with an overloaded error half-way through the answer, after
    # its first paragraph was shown
    shown = len(tokens_of(FINAL[: FINAL.index("- `billing/policy")]))
    fake.script = [Reply([text(FINAL)], cut=Cut(shown)), Reply([text("NOT ASKED AGAIN")])]
    ans, screen, _ = run(tmp_path, repo, fake)
    # Then it was not asked again (that would repeat what the reader saw), and the answer is
    # what came, with a closing line saying why it stops there
    assert len(fake.requests) == 1
    assert ans.stopped_early == "cut" and "NOT ASKED AGAIN" not in ans.text
    assert ans.text.startswith(FINAL[: FINAL.index("- `billing/worker")])
    assert ans.text.endswith(
        "_The answer was cut off here: the model stopped answering (Overloaded)._"
    )
    assert only_grew(screen.states) and screen.updates[-1].text == ans.text


def test_a_stream_still_going_at_the_deadline_is_cut_there(tmp_path: Path, repo: Any) -> None:
    # Given a model writing slowly and a deadline that comes mid-answer
    slow = "Retries happen in `billing/worker.py:6` and back off. " * 40
    with FakeMessagesAPI([Reply([text(slow)])], tokens_per_s=30) as fake:
        ans, screen, _ = run(tmp_path, repo, fake, deadline=time.monotonic() + 12.0)
    # Then the answer stops where the time ran out, and says so
    assert ans.text.endswith("_The answer was cut off here: the time for this answer ran out._")
    assert len(ans.text) < len(slow) and ans.stopped_early == "cut"
    assert only_grew(screen.states) and screen.updates[-1].text == ans.text


def test_overloaded_before_the_stream_starts_is_retried_as_before(
    tmp_path: Path, repo: Any, fake: Any
) -> None:
    fake.script = [Fail(529), Reply([text(FINAL)])]
    ans, _, _ = run(tmp_path, repo, fake)
    assert ans.text == FINAL and len(fake.requests) == 2


def test_streamed_usage_and_prompt_caching_are_counted_as_billed(tmp_path: Path, repo: Any) -> None:
    # Given a three-round investigation with caching on
    script: list[Reply | Fail] = [
        Reply([tool_use("search_code", {"pattern": "def retry_job"})]),
        Reply([tool_use("read_file", {"path": "billing/worker.py"})]),
        Reply([text(FINAL)]),
    ]
    with FakeMessagesAPI(script, min_cacheable_tokens=256) as fake:
        ans, _, _ = run(tmp_path, repo, fake)
        billed = fake.usage_totals()
    # Then the answer's usage is what the API billed, cache reads included
    usage = ans.usage
    assert usage["input_tokens"] == billed["input_tokens"]
    assert usage["output_tokens"] == billed["output_tokens"]
    assert usage["cache_read_tokens"] == billed["cache_read_input_tokens"] > 0
    assert usage["cache_write_tokens"] == billed["cache_creation_input_tokens"]
    assert usage["model_calls"] == 3


def test_the_command_line_prints_the_answer_as_it_is_written_marks_included(
    tmp_path: Path, repo: Any
) -> None:
    # Given a model writing at a reader's pace an answer with an invented path
    answer = FINAL + "\n- `billing/ledger.py:12` — the ledger"
    with FakeMessagesAPI([Reply([text(answer)])], tokens_per_s=60) as fake:
        env = {**env_for(tmp_path, fake), "PATH": os.environ["PATH"], "PYTHONUNBUFFERED": "1"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "codeask.cli", "ask", "--quiet", "--repo", str(repo.path),
             "Where are failed jobs retried?"],
            stdout=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        assert proc.stdout is not None
        # When the answer is read as it comes
        pieces: list[tuple[str, bool]] = []
        while chunk := os.read(proc.stdout.fileno(), 4096).decode():
            pieces.append((chunk, proc.poll() is None))
        proc.wait(60)
    out = "".join(p for p, _ in pieces)
    # Then it came in pieces while codeask was still running, not all at the end
    assert proc.returncode == 0
    assert sum(1 for _, running in pieces if running) >= 3
    # and what was printed is the answer with the invented path marked, then the footer
    assert out.startswith(FINAL + "\n- `billing/ledger.py:12` (⚠️ unverified) — the ledger\n")
    assert "Could not verify 1 reference" in out and "· claude" in out
    # and no invented path was ever printed bare in the answer: the mark came with it, in the
    # same piece (the warning below the answer names it too: that is the warning)
    printed = ""
    for piece, _ in pieces:
        printed += piece
        for hit in re.finditer(r"billing/ledger\.py", printed.split("⚠️ Could not verify")[0]):
            assert printed[hit.end() :].startswith(":12` (⚠️ unverified)")


def test_json_output_is_unchanged_and_not_streamed(tmp_path: Path, repo: Any, fake: Any) -> None:
    fake.script = [Reply([text(FINAL)])]
    env = {**env_for(tmp_path, fake), "PATH": os.environ["PATH"]}
    done = subprocess.run(
        [sys.executable, "-m", "codeask.cli", "ask", "--json", "--repo", str(repo.path), "q?"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    out = json.loads(done.stdout)
    assert out["answer"] == FINAL and out["mode"] == "claude"
