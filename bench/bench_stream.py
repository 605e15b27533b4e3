"""Streamed answers on loopback: the first words shown against today's posted answer, and the
chat.update interval a Tier 3 budget holds (fake Messages API at a model's pace, fake Slack)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import boto3  # noqa: E402
from slack_sdk import WebClient  # noqa: E402
from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler  # noqa: E402

from codeask import worker  # noqa: E402
from codeask.holdback import HoldBack  # noqa: E402
from codeask.job import Job  # noqa: E402
from codeask.mirror import MirrorStore  # noqa: E402
from codeask.model import make_client  # noqa: E402
from codeask.settings import Settings  # noqa: E402
from codeask.slack_stream import SlackStream  # noqa: E402
from codeask.snapshot import RepoRef, Snapshot  # noqa: E402
from codeask.state import StateStore  # noqa: E402
from fakes import billing  # noqa: E402
from fakes.aws import MotoServer  # noqa: E402
from fakes.messages_api import FakeMessagesAPI, Reply, text, tokens_of, tool_use  # noqa: E402
from fakes.slack_api import Channel, FakeSlack  # noqa: E402

TOKENS_PER_S = 65.0  # a model writing at 50–80 tokens a second
FIRST_TOKEN_S = 0.8  # and taking this long to start each reply
REPEATS = 3
CHANNEL, THREAD, USER, TEAM = "C0BENCH01", "1764430000.000100", "U0HUMAN", "T0001"
TOKEN = "xoxb-bench"
# Slack's Tier 3 (chat.update): "50+ a minute", bursts allowed; modelled as 50 a minute with a
# burst of a sixth of that, shared by every answer streaming in the workspace at once.
TIER3_PER_MINUTE = 50.0
EDIT_INTERVALS = (1.0, 1.5, 2.0, 2.5)
CONCURRENT = (1, 2, 3)
TIER4_PER_MINUTE = 100.0  # chat.appendStream: "100+ a minute"
APPEND_INTERVALS = (0.3, 0.6, 1.0)

ANSWER = (
    "Failed jobs are retried by `retry_job` in `billing/worker.py:6-11`: it runs the job up to "
    "`policy.max_attempts` times and, after each failure, sleeps for `policy.backoff(attempt)` "
    "seconds before the next try. The backoff doubles every attempt, 2^attempt seconds, as "
    "`RetryPolicy.backoff` computes it in `billing/policy.py:4-5`, and the number of attempts "
    "is the class attribute `max_attempts = 5` (`billing/policy.py:2`).\n\n"
    "- `billing/worker.py:6` — `retry_job(job, policy)`, the loop\n"
    "- `billing/worker.py:8` — `job.run()`; a truthy result ends the retries\n"
    "- `billing/worker.py:10` — the sleep between attempts\n"
    "- `billing/policy.py:4-5` — `backoff(attempt)`: `2 ** attempt`\n"
    "- `billing/policy.py:2` — `max_attempts = 5`\n\n"
    "So a job that keeps failing is tried five times over about 31 seconds (1 + 2 + 4 + 8 + "
    "16) and then `retry_job` returns `False`; nothing re-queues it after that. If you want a "
    "cap on the delay, `RetryPolicy.backoff` is the one place to add it, and a test that pins "
    "the schedule would sit next to the worker's tests."
)


def _script() -> list[Reply]:
    return [
        Reply(
            [
                text("Let me find where jobs are retried."),
                tool_use("search_code", {"pattern": "retry"}),
            ],
            delay_s=FIRST_TOKEN_S,
        ),
        Reply([tool_use("read_file", {"path": "billing/policy.py"})], delay_s=FIRST_TOKEN_S),
        Reply([text(ANSWER)], delay_s=FIRST_TOKEN_S),
    ]


def _repo(root: Path) -> Path:
    repo = root / "billing"
    for rel, body in billing.FILES.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(body)
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["-c", "user.name=b", "-c", "user.email=b@x", "commit", "-qm", "initial"]):  # fmt: skip
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
    return repo


class _Loopback:
    """moto, the fake Slack and the fake Messages API, and what a worker needs to use them."""

    def __init__(self, root: Path, moto: MotoServer, slack: FakeSlack, model: FakeMessagesAPI):
        self.root, self.slack, self.model = root, slack, model
        self.repo = _repo(root)
        self.db = boto3.client(
            "dynamodb", endpoint_url=moto.url, region_name="us-east-1",
            aws_access_key_id="x", aws_secret_access_key="x",
        )  # fmt: skip
        self.table = f"state-{uuid.uuid4().hex[:8]}"
        self.db.create_table(
            TableName=self.table,
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        slack.channels[CHANNEL] = Channel(id=CHANNEL, name="bench")

    def settings(self, **env: str) -> Settings:
        config = {"repos": {"billing": {"url": str(self.repo), "branch": "main"}},
                  "channels": {CHANNEL: ["billing"]}}  # fmt: skip
        return Settings.from_env({
            "HOME": str(self.root / "home"), "MIRROR_ROOT": str(self.root / "mirrors"),
            "SNAPSHOT_ROOT": str(self.root / "snapshots"), "ANTHROPIC_API_KEY": "bench",
            "ANTHROPIC_BASE_URL": self.model.base_url, "CODEASK_CONFIG": json.dumps(config),
            **env,
        })  # fmt: skip

    def job(self, thread: str) -> Job:
        return Job(event_id=f"Ev{uuid.uuid4().hex[:8]}", team_id=TEAM, channel=CHANNEL,
                   user=USER, text="Where are failed jobs retried?", message_ts=thread,
                   thread_ts=thread, repos=("billing",), event_time=time.time(),
                   received_at=time.time())  # fmt: skip

    def answer(self, thread: str, **env: str) -> float:
        """One question answered by the worker; returns when it started (time.monotonic)."""
        settings = self.settings(**env)
        self.model.script = _script()
        self.slack.add_thread_message(CHANNEL, thread, "Where are failed jobs retried?")
        started = time.monotonic()
        outcome = worker.answer_job(
            self.job(thread),
            settings=settings,
            store=StateStore(self.table, self.db),
            slack=WebClient(token=TOKEN, base_url=self.slack.base_url,
                            retry_handlers=[RateLimitErrorRetryHandler(max_retry_count=3)]),
            mirrors=MirrorStore.from_settings(settings),
            deadline=started + 120,
            owner="bench",
            model_client=lambda: make_client(settings),
            stream_slack=WebClient(token=TOKEN, base_url=self.slack.base_url, retry_handlers=[]),
        )  # fmt: skip
        assert outcome.status == "answered", outcome
        return started


def _in_thread(slack: FakeSlack, thread: str) -> list[Any]:
    ts = {m["ts"] for s in slack.thread_states(CHANNEL, thread) for m in s}
    return [c for c in slack.calls if c.args.get("thread_ts") == thread or c.args.get("ts") in ts]


def _first_words(calls: list[Any]) -> float:
    """When the reader first saw words of the answer: a stream started, or a partial edit."""
    for c in calls:
        if c.method == "chat.startStream" and c.error is None:
            return float(c.at)
        if c.method == "chat.update" and c.error is None and "still writing" in json.dumps(c.args):
            return float(c.at)
    raise AssertionError("no words were shown before the answer was posted")


def _posted(calls: list[Any]) -> float:
    """When the finished answer was posted: the update that carries the feedback buttons."""
    return next(
        float(c.at) for c in calls
        if c.method == "chat.update" and c.error is None and "codeask_feedback" in json.dumps(c.args)
    )  # fmt: skip


def first_words_against_posted(env: _Loopback) -> list[dict[str, Any]]:
    today: list[float] = []
    first: list[float] = []
    streamed_posted: list[float] = []
    for i in range(REPEATS):
        for streaming in (False, True):
            thread = f"17644300{i}{int(streaming)}.000100"
            started = env.answer(thread, CODEASK_STREAM="on" if streaming else "off")
            calls = _in_thread(env.slack, thread)
            if streaming:
                first.append(_first_words(calls) - started)
                streamed_posted.append(_posted(calls) - started)
            else:
                today.append(_posted(calls) - started)
    t, f, p = statistics.median(today), statistics.median(first), statistics.median(streamed_posted)
    return [
        {"name": "streamed answer: first words shown vs today's posted answer",
         "ratio": round(f / t, 2), "a_ms": round(f * 1000), "b_ms": round(t * 1000),
         "note": f"{TOKENS_PER_S:.0f} tokens/s, 3 rounds, {len(tokens_of(ANSWER))}-token answer",
         "aim": "< 0.6"},
        {"name": "streamed answer: finished answer posted vs today's",
         "ratio": round(p / t, 2), "a_ms": round(p * 1000), "b_ms": round(t * 1000),
         "aim": "~1.0"},
    ]  # fmt: skip


class _Feed:
    """The model's side, without a model: the answer's tokens into a HoldBack at TOKENS_PER_S."""

    def __init__(self, snapshot: Snapshot, sink: SlackStream) -> None:
        self.hold = HoldBack(snapshot, sink)

    def run(self) -> None:
        for token in tokens_of(ANSWER * 3):
            self.hold.write(token)
            time.sleep(1 / TOKENS_PER_S)
        self.hold.finish()


def _paced(
    env: _Loopback,
    method: str,
    per_minute: float,
    intervals: tuple[float, ...],
    concurrent: tuple[int, ...],
) -> list[dict[str, Any]]:
    """Answers streamed under a per-minute budget for `method` (chat.update: by edits, with
    chat.startStream refused; chat.appendStream: a stream of its own), one to a few at once:
    the 429s each interval draws, and how often the reader's view moved on. The worker's stream
    client backs off by itself on a 429 (Retry-After, then doubling, and stays slower)."""
    snapshot = Snapshot(env.repo, "0" * 40, RepoRef("billing", str(env.repo)))
    edits = method == "chat.update"
    rows = []
    for at_once in concurrent:
        for interval in intervals:
            env.slack.limit(method, per_minute)
            if edits:
                env.slack.fail("chat.startStream", "not_allowed_token_type", times=at_once)
            streams, feeds = [], []
            for n in range(at_once):
                thread = f"17644{uuid.uuid4().int % 10**5:05d}.{n:06d}"
                env.slack.add_thread_message(CHANNEL, thread, "q")
                client = WebClient(token=TOKEN, base_url=env.slack.base_url, retry_handlers=[])
                placeholder = client.chat_postMessage(channel=CHANNEL, thread_ts=thread, text="…")
                stream = SlackStream(
                    client, StateStore(env.table, env.db), env.job(thread), str(placeholder["ts"]),
                    edit_interval_s=interval, append_interval_s=interval,
                )  # fmt: skip
                streams.append(stream)
                feeds.append(threading.Thread(target=_Feed(snapshot, stream).run))
            before = len(env.slack.calls)
            for f in feeds:
                f.start()
            for f in feeds:
                f.join()
            for s in streams:
                s.close()
            calls = [c for c in env.slack.calls[before:] if c.method == method]
            limited = sum(1 for c in calls if c.error == "ratelimited")
            shown = sum(1 for c in calls if c.error is None)
            seconds = len(tokens_of(ANSWER * 3)) / TOKENS_PER_S
            rows.append({
                "name": f"{method} every {interval} s, {at_once} answer(s) at once: 429s",
                "ratio": limited,
                "note": f"{shown} calls went through over {seconds:.0f} s of writing "
                        f"(budget {per_minute:.0f}/min)",
            })  # fmt: skip
            env.slack.limit(method, 1e9)  # a fresh budget for the next setting
    return rows


def run() -> list[dict[str, Any]]:
    with (
        tempfile.TemporaryDirectory() as tmp,
        MotoServer() as moto,
        FakeSlack(bot_token=TOKEN) as slack,
        FakeMessagesAPI(tokens_per_s=TOKENS_PER_S) as model,
    ):
        env = _Loopback(Path(tmp), moto, slack, model)
        return (
            first_words_against_posted(env)
            + _paced(env, "chat.update", TIER3_PER_MINUTE, EDIT_INTERVALS, CONCURRENT)
            + _paced(env, "chat.appendStream", TIER4_PER_MINUTE, APPEND_INTERVALS, (1, 3))
        )


if __name__ == "__main__":
    for row in run():
        print(json.dumps(row, ensure_ascii=False))
