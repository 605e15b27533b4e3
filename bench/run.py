"""`make bench`: the engine's overheads as ratios against baselines measured in the same run."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from codeask.ripgrep import find_rg  # noqa: E402
from codeask.snapshot import RepoRef, Snapshot  # noqa: E402
from codeask.tools import Toolbox  # noqa: E402
from corpus import make_corpus  # noqa: E402

OUT = HERE / "out"
REPEATS = 7
PATTERNS = [
    r"def check_report_\d+",  # definitions, a few hundred hits
    r"class AccountBilling\d+",  # rare
    r"redistribute",  # in every licence header: a flood
    r"webhook|signature",  # alternation
    r"zzz_no_such_thing",  # no match: the whole tree is read
]


def paired_ms(a, b, repeats: int = REPEATS) -> tuple[float, float]:
    """Median wall time of a and b, interleaved so that load on the machine hits both alike."""
    a(), b()  # warm the page cache and any lazy state
    ta, tb = [], []
    for _ in range(repeats):
        for fn, acc in ((a, ta), (b, tb)):
            t = time.perf_counter()
            fn()
            acc.append((time.perf_counter() - t) * 1000)
    return statistics.median(ta), statistics.median(tb)


def bench_search(tree: Path) -> list[dict]:
    rg = find_rg()
    snap = Snapshot(tree, "0" * 40, RepoRef("corpus", str(tree)))
    rows = []
    total_tool = total_rg = 0.0
    for pattern in PATTERNS:
        # A fresh toolbox per call: no file cache carried over from the previous repetition.
        tool_ms, rg_ms = paired_ms(
            lambda p=pattern: Toolbox(snap).run("search_code", {"pattern": p}),
            lambda p=pattern: subprocess.run(
                [rg, "-n", "--no-heading", "-e", p, "--", "."], cwd=tree, capture_output=True
            ),
        )
        total_tool += tool_ms
        total_rg += rg_ms
        rows.append({"name": f"search_code vs rg: {pattern}", "ratio": round(tool_ms / rg_ms, 2),
                     "a_ms": round(tool_ms, 1), "b_ms": round(rg_ms, 1)})  # fmt: skip
    rows.append({"name": "search_code vs bare rg (all patterns)", "ratio": round(total_tool / total_rg, 2),
                 "a_ms": round(total_tool, 1), "b_ms": round(total_rg, 1), "aim": "<= 1.3x"})  # fmt: skip
    return rows


def _import_ms(stmt: str) -> float:
    code = f"import time; t = time.perf_counter(); {stmt}; print((time.perf_counter() - t) * 1000)"
    runs = []
    for _ in range(5):
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        runs.append(float(out.stdout.strip()))
    return statistics.median(runs)


def bench_imports() -> list[dict]:
    ours = _import_ms("import codeask.answer, codeask.cli")
    try:
        boto = _import_ms("import boto3")
    except subprocess.CalledProcessError:
        return [
            {"name": "import codeask.answer", "a_ms": round(ours, 1), "note": "boto3 not installed"}
        ]
    return [{"name": "import codeask (worker path) vs import boto3", "ratio": round(ours / boto, 2),
             "a_ms": round(ours, 1), "b_ms": round(boto, 1)}]  # fmt: skip


def main() -> None:
    OUT.mkdir(exist_ok=True)
    tree = make_corpus(OUT / "corpus10k")
    print(f"corpus: {tree} ({sum(1 for _ in tree.rglob('*.py'))} files)", file=sys.stderr)
    rows = bench_search(tree) + bench_imports()
    try:
        import bench_sync

        rows += bench_sync.run(tree, OUT / "sync")
    except ImportError as e:
        rows.append({"name": "sync", "note": f"skipped: {e}"})
    import bench_loop
    import bench_stream
    import eval_search_only

    rows += bench_loop.run(eval_search_only.corpus("pip"))
    rows += bench_stream.run()

    for res in eval_search_only.run():
        res.pop("misses")
        rows.append({"name": f"search-only top-3 hit rate on {res['repo']}", "ratio": res["top3"],
                     "note": f"top1 {res['top1']:.2f}, top5 {res['top5']:.2f}, {res['cases']} cases"})  # fmt: skip
    (OUT / "results.json").write_text(json.dumps(rows, indent=2))
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        ratio = f"{r['ratio']:>6}" if "ratio" in r else "      "
        detail = " ".join(f"{k}={v}" for k, v in r.items() if k not in ("name", "ratio"))
        print(f"{r['name']:<{width}}  {ratio}  {detail}")


if __name__ == "__main__":
    main()
