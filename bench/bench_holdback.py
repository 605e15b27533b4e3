"""The hold-back's cost against an answer's length: a streamed answer of 30k characters against
one of 15k, through the terminal's sink, with an instant model (a ratio of ~2 is linear)."""

from __future__ import annotations

import contextlib
import io
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from bench_stream import ANSWER  # noqa: E402
from codeask.cli import _Terminal  # noqa: E402
from codeask.holdback import HoldBack  # noqa: E402
from codeask.snapshot import RepoRef, Snapshot  # noqa: E402
from fakes.billing import FILES  # noqa: E402
from fakes.messages_api import tokens_of  # noqa: E402

LONG = 30_000
REPEATS = 3
# Prose with citations (one invented, so the terminal marks it), and one long code block: the
# shape in which every check used to read the whole block again.
PROSE = ANSWER.replace("`billing/policy.py:2`", "`billing/ledger.py:2`") + "\n\n"
CODE_LINE = "    delay = policy.backoff(attempt)  # billing/policy.py:4\n"


def _answer(shape: str, n: int) -> str:
    if shape == "prose":
        return (PROSE * (n // len(PROSE) + 1))[:n]
    body = CODE_LINE * (n // len(CODE_LINE) + 1)
    return ("The loop:\n\n```python\n" + body)[: n - 5] + "\n```\n"


def _seconds(snapshot: Snapshot, text: str) -> float:
    """One answer written token by token into a HoldBack that prints to a terminal."""
    tokens = tokens_of(text)
    with contextlib.redirect_stdout(io.StringIO()) as out:
        started = time.perf_counter()
        hold = HoldBack(snapshot, _Terminal())
        for token in tokens:
            hold.write(token)
        hold.finish()
        took = time.perf_counter() - started
    assert out.getvalue(), "the terminal printed nothing"
    return took


def run() -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "billing"
        for rel, body in FILES.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(body)
        snapshot = Snapshot(root, "0" * 40, RepoRef("billing", "https://github.com/acme/billing"))
        rows = []
        for shape in ("prose", "code block"):
            long, half = _answer(shape, LONG), _answer(shape, LONG // 2)
            a, b = [], []
            for _ in range(REPEATS):  # interleaved, so load on the machine hits both alike
                a.append(_seconds(snapshot, long))
                b.append(_seconds(snapshot, half))
            ta, tb = statistics.median(a), statistics.median(b)
            rows.append({
                "name": f"hold-back, {shape}: a {LONG // 1000}k-character streamed answer vs "
                        f"{LONG // 2000}k",
                "ratio": round(ta / tb, 2), "a_ms": round(ta * 1000), "b_ms": round(tb * 1000),
                "note": f"{len(tokens_of(long))} tokens, instant model, terminal sink",
                "aim": "~2 (linear); ~4 would be quadratic",
            })  # fmt: skip
        return rows


if __name__ == "__main__":
    for row in run():
        print(json.dumps(row, ensure_ascii=False))
