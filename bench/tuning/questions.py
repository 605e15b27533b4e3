"""Print the tuning questions without their answers (id, repo, question), for a model-player."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from check_cases import load  # noqa: E402

SHOWN = ("id", "repo", "question")


def questions_only(cases: list[dict]) -> list[dict]:
    return [{k: c[k] for k in SHOWN} for c in cases]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument(
        "files", nargs="*", type=Path, default=[HERE / "hard.jsonl", HERE / "easy.jsonl"]
    )
    ap.add_argument("--text", action="store_true", help="one question per paragraph, not JSONL")
    args = ap.parse_args(argv)
    for q in questions_only([c for f in args.files for c in load(f)]):
        if args.text:
            print(f"[{q['id']}] (repo: {q['repo']})\n{q['question']}\n")
        else:
            print(json.dumps(q, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
