"""How often search-only mode puts the right file in its top three, on real code (pinned pytest and pip)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from codeask import search_only
from codeask.snapshot import RepoRef, Snapshot
from codeask.tools import Toolbox

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
# The eval cases were written against these exact releases; line numbers drift with others.
CORPORA = {
    "pytest": ("pytest==9.2.0", "_pytest"),
    "pip": ("pip==26.3", "pip/_internal"),
}


def corpus(name: str) -> Path:
    requirement, subdir = CORPORA[name]
    target = OUT / "corpus" / name
    root = target / subdir
    if not root.is_dir():
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-compile",
             "--target", str(target), requirement],
            check=True,
        )  # fmt: skip
    return root


def evaluate(name: str) -> dict:
    root = corpus(name)
    snap = Snapshot(root, "0" * 40, RepoRef(name, str(root)))
    cases = [
        json.loads(line)
        for line in (HERE / "eval" / f"{name}.jsonl").read_text().splitlines()
        if line.strip()
    ]
    ranks: list[int | None] = []
    rows = []
    started = time.monotonic()
    for case in cases:
        toolbox = Toolbox(snap)
        result = search_only.answer(case["question"], toolbox)
        got = [e.path for e in result.evidence]
        want = {e["path"] for e in case["expected"]}
        rank = next((i + 1 for i, p in enumerate(got) if p in want), None)
        ranks.append(rank)
        rows.append({"id": case["id"], "rank": rank, "top": got[:3], "want": sorted(want)})
    elapsed = time.monotonic() - started
    n = len(cases)
    return {
        "repo": name,
        "cases": n,
        "top1": sum(1 for r in ranks if r == 1) / n,
        "top3": sum(1 for r in ranks if r is not None and r <= 3) / n,
        "top5": sum(1 for r in ranks if r is not None and r <= 5) / n,
        "mrr": sum(1 / r for r in ranks if r) / n,
        "seconds_per_question": elapsed / n,
        "misses": [r for r in rows if r["rank"] is None or r["rank"] > 3],
    }


def run() -> list[dict]:
    return [evaluate(name) for name in CORPORA]


if __name__ == "__main__":
    verbose = "-v" in sys.argv
    for res in run():
        misses = res.pop("misses")
        print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in res.items()}))
        if verbose:
            for m in misses:
                print("   miss", json.dumps(m))
