"""How often search-only mode puts the right file in its top three, on real code (pinned pytest and pip)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from codeask import evaluate
from codeask.settings import Settings

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
# The eval cases were written against these exact releases; line numbers drift with others.
CORPORA = {
    "pytest": ("pytest==9.2.0", "_pytest"),
    "pip": ("pip==26.3", "pip/_internal"),
}
GIT_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@example.invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@example.invalid",
           "PATH": "/usr/bin:/bin:/usr/local/bin"}  # fmt: skip


def corpus(name: str) -> Path:
    """The package's source as a one-commit git repository (codeask reads repositories)."""
    requirement, subdir = CORPORA[name]
    target = OUT / "corpus" / name
    root = target / subdir
    if not root.is_dir():
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-compile",
             "--target", str(target), requirement],
            check=True,
        )  # fmt: skip
    if not (root / ".git").is_dir():
        for cmd in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"],
                    ["git", "commit", "-q", "-m", requirement]):  # fmt: skip
            subprocess.run(cmd, cwd=root, check=True, env={**GIT_ENV, "HOME": str(OUT)})
    return root


def evaluate_repo(name: str) -> dict:
    root = corpus(name)
    settings = Settings.from_env(
        {"HOME": str(OUT / "home"), "MIRROR_ROOT": str(OUT / "mirrors"),
         "SNAPSHOT_ROOT": str(OUT / "snapshots")}
    )  # fmt: skip
    cases = evaluate.load_cases(HERE / "eval" / f"{name}.jsonl")
    results = evaluate.run_eval(cases, settings, repos={name: str(root)})
    summary = evaluate.summarise(results)
    n = summary["cases"]
    return {
        "repo": name,
        "cases": n,
        "top1": sum(1 for r in results if r.rank == 1) / n,
        "top3": summary["top3_rate"],
        "top5": sum(1 for r in results if r.rank is not None and r.rank <= 5) / n,
        "line_hit": summary["hit_rate"],
        "seconds_per_question": summary["mean_seconds"],
        "misses": [
            {"id": r.id, "rank": r.rank, "top": r.cited[:3], "want": r.expected}
            for r in results
            if r.rank is None or r.rank > 3
        ],
    }


def run() -> list[dict]:
    return [evaluate_repo(name) for name in CORPORA]


if __name__ == "__main__":
    verbose = "-v" in sys.argv
    for res in run():
        misses = res.pop("misses")
        print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in res.items()}))
        if verbose:
            for m in misses:
                print("   miss", json.dumps(m))
