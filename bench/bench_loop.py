"""The agent loop's own cost per round, and how much of the prompt prompt-caching serves, on real code."""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from codeask.agent import Budget, run_loop  # noqa: E402
from codeask.model import DEFAULT_PRICES, make_client  # noqa: E402
from codeask.settings import Settings  # noqa: E402
from codeask.snapshot import RepoRef, Snapshot  # noqa: E402
from codeask.tools import Toolbox  # noqa: E402
from fakes.messages_api import FakeMessagesAPI, Reply, text, tool_use  # noqa: E402

TYPICAL_MODEL_CALL_MS = 2000.0
ROUNDS = 6


def script() -> list[Reply]:
    """Six rounds on pip's source: five rounds of tools (one of them parallel), then the answer."""
    return [
        Reply([tool_use("search_code", {"pattern": "def user_agent"})]),
        Reply(
            [
                tool_use(
                    "read_file", {"path": "network/session.py", "start_line": 80, "end_line": 190}
                )
            ]
        ),
        Reply(
            [
                tool_use("search_code", {"pattern": r"user_agent\(\)"}),
                tool_use("search_code", {"pattern": "distro|libc_ver"}),
            ]
        ),  # fmt: skip
        Reply([tool_use("list_files", {"path": "network"})]),
        Reply(
            [
                tool_use(
                    "read_file", {"path": "network/session.py", "start_line": 300, "end_line": 380}
                )
            ]
        ),
        Reply([text("The User-Agent JSON is built in `network/session.py:84`.")]),
    ]


def run(root: Path, repeats: int = 5) -> list[dict]:
    snap = Snapshot(root, "0" * 40, RepoRef("pip", str(root)))
    per_round: list[float] = []
    shares: list[float] = []
    cumulative: list[float] = []
    for _ in range(repeats):
        # A fresh server each time: the cache share is that of one question, not of warm repeats.
        with FakeMessagesAPI(script(), min_cacheable_tokens=1024) as fake:
            settings = Settings.from_env(
                {"HOME": "/tmp", "ANTHROPIC_API_KEY": "bench", "ANTHROPIC_BASE_URL": fake.base_url}
            )
            client = make_client(settings)
            toolbox = Toolbox(snap)
            started = time.perf_counter()
            result = run_loop(
                client,
                "claude-sonnet-5",
                toolbox,
                "Our proxy logs show pip sending a JSON blob in a header. Where is it built?",
                budget=Budget(deadline=time.monotonic() + 120),
                price=DEFAULT_PRICES["claude-sonnet-5"],
            )
            elapsed = (time.perf_counter() - started) * 1000
            assert result.rounds == ROUNDS, result
            per_round.append(elapsed / result.rounds)
            last = fake.requests[-1].response["usage"]
            total = (
                last["input_tokens"]
                + last["cache_read_input_tokens"]
                + last["cache_creation_input_tokens"]
            )
            shares.append(last["cache_read_input_tokens"] / total)
            u = result.usage
            cumulative.append(u.cache_read_tokens / u.total_input_tokens)
    overhead = statistics.median(per_round)
    return [
        {"name": "loop overhead per round (fake model answers at once)", "ms": round(overhead, 1),
         "ratio": round(overhead / TYPICAL_MODEL_CALL_MS, 3), "aim": "< 0.05 of a 2 s model call"},
        {"name": f"cache-read share of input tokens at round {ROUNDS}", "ratio": round(statistics.median(shares), 3),
         "aim": "> 0.60"},
        {"name": f"cache-read share of all input tokens over {ROUNDS} rounds", "ratio": round(statistics.median(cumulative), 3),
         "aim": "info"},
    ]  # fmt: skip


if __name__ == "__main__":
    import json

    sys.path.insert(0, str(HERE))
    import eval_search_only

    for row in run(eval_search_only.corpus("pip")):
        print(json.dumps(row))
