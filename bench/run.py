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

from codeask.search import syntax  # noqa: E402
from codeask.search.ripgrep import find_rg  # noqa: E402
from codeask.snapshot import RepoRef, Snapshot  # noqa: E402
from codeask.tools import Toolbox  # noqa: E402
from corpus import make_corpus  # noqa: E402

OUT = HERE / "out"
REPEATS = 7
SEARCHES = [
    {"pattern": r"def check_report_\d+"},  # definitions, a few hundred hits: a called-from lookup
    {"pattern": r"class AccountBilling\d+"},  # rare, whole classes: a called-from lookup
    {"pattern": r"redistribute"},  # in every licence header: a flood
    {"pattern": r"webhook|signature"},  # alternation
    {"pattern": r"zzz_no_such_thing"},  # no match: the whole tree is read
    {"pattern": r"retry_\w+_2\(", "path": "pkg3"},  # filtered: the matches outside are counted
    {"pattern": r"billing_helper", "glob": "*/mod1/*.py"},  # likewise, by glob
]


def bare_rg(rg: str, tree: Path, args: dict) -> list[str]:
    """The same search as plain rg: its pattern, glob and path, nothing else."""
    glob = ["--glob", args["glob"]] if "glob" in args else []
    return [rg, "-n", "--no-heading", *glob, "-e", args["pattern"], "--", args.get("path", ".")]


def paired_samples(a, b, repeats: int = REPEATS) -> tuple[list[float], list[float]]:
    """Wall times of a and b in ms, interleaved so that load on the machine hits both alike."""
    a(), b()  # warm the page cache and the grammars
    ta, tb = [], []
    for _ in range(repeats):
        for fn, acc in ((a, ta), (b, tb)):
            t = time.perf_counter()
            fn()
            acc.append((time.perf_counter() - t) * 1000)
    return ta, tb


def bench_search(tree: Path, repeats: int = REPEATS) -> list[dict]:
    """search_code (rg, ranking, parsing the files it shows, rendering) against bare rg.

    Every call gets a fresh toolbox and an empty parse cache, so the figures are a first search
    over a snapshot, the slowest case; later searches in a question reuse the parses."""
    rg = find_rg()
    snap = Snapshot(tree, "0" * 40, RepoRef("corpus", str(tree)))
    rows = []
    all_tool: list[float] = []
    all_rg: list[float] = []
    per_tool: list[list[float]] = []
    per_rg: list[list[float]] = []

    def tool(args: dict) -> None:
        syntax.clear_cache()
        Toolbox(snap).run("search_code", args)

    for args in SEARCHES:
        tool_ms, rg_ms = paired_samples(
            lambda a=args: tool(a),
            lambda a=args: subprocess.run(bare_rg(rg, tree, a), cwd=tree, capture_output=True),
            repeats,
        )
        all_tool += tool_ms
        all_rg += rg_ms
        per_tool.append(tool_ms)
        per_rg.append(rg_ms)
        a, b = statistics.median(tool_ms), statistics.median(rg_ms)
        name = " ".join(f"{k}={v}" for k, v in args.items())
        rows.append({"name": f"search_code vs rg: {name}", "ratio": round(a / b, 2),
                     "a_ms": round(a, 1), "b_ms": round(b, 1)})  # fmt: skip
    plain_tool = [
        t for args, ts in zip(SEARCHES, per_tool, strict=True) if len(args) == 1 for t in ts
    ]
    plain_rg = [t for args, ts in zip(SEARCHES, per_rg, strict=True) if len(args) == 1 for t in ts]
    a, b = statistics.median(plain_tool), statistics.median(plain_rg)
    rows.append({"name": "search_code vs bare rg, p50 of the unfiltered searches",
                 "ratio": round(a / b, 2), "a_ms": round(a, 1), "b_ms": round(b, 1)})  # fmt: skip
    a, b = statistics.median(all_tool), statistics.median(all_rg)
    rows.append({"name": "search_code vs bare rg, p50 of all searches", "ratio": round(a / b, 2),
                 "a_ms": round(a, 1), "b_ms": round(b, 1), "aim": "<= 2x and < 250 ms"})  # fmt: skip
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


# `make bench-tuning`: search-only quality alone, on every set (needs /work/corpora)
TUNING = "--tuning" in sys.argv


def quality_rows(search_quality, sets: list[str]) -> list[dict]:
    """Search-only top-3 file and line hits per set, beside the naive grep baseline run alongside."""
    cases = search_quality.cases_for(sets)
    out = []
    for r in search_quality.summarise(search_quality.run(cases)):
        out.append({"name": f"search-only top-3 line / file on {r['set']} ({r['split']}, "
                    f"{r['cases']} cases)", "ratio": r["line_top3"], "file_top3": r["file_top3"],
                    "naive_line_top3": r.get("naive_line_top3"),
                    "naive_file_top3": r.get("naive_file_top3"),
                    "invented": r["invented"], "p50_ms": r["p50_ms"]})  # fmt: skip
    return out


def report(rows: list[dict]) -> None:
    (OUT / "results.json").write_text(json.dumps(rows, indent=2))
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        ratio = f"{r['ratio']:>6}" if "ratio" in r else "      "
        detail = " ".join(f"{k}={v}" for k, v in r.items() if k not in ("name", "ratio"))
        print(f"{r['name']:<{width}}  {ratio}  {detail}")


def main() -> None:
    OUT.mkdir(exist_ok=True)
    if TUNING:
        import search_quality

        report(quality_rows(search_quality, ["eval", "tuning", "independent"]))
        return
    tree = make_corpus(OUT / "corpus10k")
    print(f"corpus: {tree} ({sum(1 for _ in tree.rglob('*.py'))} files)", file=sys.stderr)
    import bench_cold
    import bench_local
    import bench_redact
    import bench_sync

    rows = bench_search(tree) + bench_imports() + bench_redact.run()

    # The corpus again with thousands of commits on top: a repository with a long history.
    history = bench_local.make_history_repo(tree, OUT / "history")
    rows += bench_local.run(history, OUT / "local", label="synthetic (10k files, 5k commits)")
    rows += bench_sync.run(history, OUT / "sync")
    rows += bench_cold.run(OUT)
    import bench_monorepo

    # A 100k-file monorepo (built once): snapshots of new commits, disk, and search at that size.
    rows += bench_monorepo.run(OUT, lambda tree: bench_search(tree, repeats=3))
    import bench_holdback
    import bench_index
    import bench_loop
    import bench_stream
    import eval_search_only
    import search_quality

    rows += bench_index.run(tree)
    rows += bench_loop.run(eval_search_only.corpus("pip"))
    rows += bench_stream.run()
    rows += bench_holdback.run()
    rows += quality_rows(search_quality, ["eval"])
    report(rows)


if __name__ == "__main__":
    main()
