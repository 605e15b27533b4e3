"""Search-only quality on questions with known answers, beside a naive grep baseline run on the same trees.

Sets: `bench/eval/` (pytest, pip; pip-installed, so they run everywhere) and, when the corpora
are in /work/corpora, `bench/tuning/` (hard and easy) and `bench/tuning/independent/`. The ranking
was tuned on pytest and on half of the hard set (`split`); pip, the other half and the independent
set are held out and reported apart (-v never lists the independent set's cases).

    python bench/search_quality.py [--sets eval,tuning,independent] [-v] [--json] [--dump FILE]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "tuning"))

from codeask import search_only  # noqa: E402
from codeask.mirror import MirrorStore, RepoSpec  # noqa: E402
from codeask.search.definition_index import DefinitionIndex, index_for  # noqa: E402
from codeask.search.ripgrep import find_rg  # noqa: E402
from codeask.settings import Settings  # noqa: E402
from codeask.snapshot import Snapshot  # noqa: E402
from codeask.tools import Toolbox  # noqa: E402
from codeask.verify import verify_answer  # noqa: E402

LINE_TOLERANCE = 15  # as `codeask eval`: a citation this close points at the same thing
TOP = 3
CORPORA_ROOT = Path(os.environ.get("CODEASK_CORPORA", "/work/corpora"))
TUNING = ("glibc", "pylint", "charts")
INDEPENDENT = ("git", "ansible", "slack-sdk")  # never tuned on: measured, never read case by case

# The naive baseline's own stop list (plain English), so that it does not move with the ranker's.
_ENGLISH_STOP = set(
    """the and for are but not you all any can had her was one our out has him his how its may new
    now old see two way who did does doing done what when where which while why with would could
    should there their them they this that these those from into onto than then have been being
    about above after again also because before below between both each few more most other some
    such only own same very just over under until upon your yours were will shall might must""".split()
)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")


@dataclass
class Case:
    id: str
    repo: str
    question: str
    expected: list[dict[str, Any]]
    set: str
    split: str  # "tuned" (looked at while tuning) or "held-out"
    kind: str = ""


@dataclass
class Score:
    file_top3: bool = False
    line_top3: bool = False
    file_any: bool = False
    line_any: bool = False
    invented: int = 0
    cited: list[str] = field(default_factory=list)


Cite = tuple[str, int | None, int | None]  # path, first line, last line (None: one line)


def score(case: Case, cites: list[Cite], invented: int = 0) -> Score:
    """As `codeask eval` scores, but stricter on ranges: a line hit is a citation whose first or
    last line is within 15 lines of an expected line (`codeask eval` also counts the lines between);
    only the first three citations count for the top-3 figures."""
    s = Score(invented=invented)
    for path, start, end in cites:
        s.cited.append(path + (f":{start}" if start else "") + (f"-{end}" if end else ""))
    for i, (path, start, end) in enumerate(cites):
        for exp in case.expected:
            if path != exp["path"]:
                continue
            ends = [n for n in (start, end) if n is not None]
            near = any(abs(n - exp["line"]) <= LINE_TOLERANCE for n in ends)
            s.file_any = True
            s.line_any = s.line_any or near
            if i < TOP:
                s.file_top3 = True
                s.line_top3 = s.line_top3 or near
    return s


# -- the cases ---------------------------------------------------------------------------------------


def _read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def eval_cases() -> list[Case]:
    out = []
    for name, split in (("pytest", "tuned"), ("pip", "held-out")):
        for raw in _read(HERE / "eval" / f"{name}.jsonl"):
            out.append(Case(raw["id"], raw["repo"], raw["question"], raw["expected"], name, split,
                            raw.get("kind", "")))  # fmt: skip
    return out


def tuning_cases() -> list[Case]:
    """The hard set split in two, alternately in order of corpus, kind and id (so each half has
    every corpus and kind), and the easy set."""
    out = []
    hard = sorted(
        _read(HERE / "tuning" / "hard.jsonl"), key=lambda r: (r["repo"], r["kind"], r["id"])
    )
    for i, raw in enumerate(hard):
        split = "tuned" if i % 2 == 0 else "held-out"
        out.append(Case(raw["id"], raw["repo"], raw["question"], raw["expected"], "hard", split,
                        raw["kind"]))  # fmt: skip
    for raw in _read(HERE / "tuning" / "easy.jsonl"):
        out.append(Case(raw["id"], raw["repo"], raw["question"], raw["expected"], "easy", "check",
                        raw.get("kind", "")))  # fmt: skip
    return out


def independent_cases() -> list[Case]:
    """The independent check (bench/tuning/independent/): held out from tuning, hard and easy."""
    out = []
    for name in ("hard", "easy"):
        for raw in _read(HERE / "tuning" / "independent" / f"{name}.jsonl"):
            out.append(Case(raw["id"], raw["repo"], raw["question"], raw["expected"],
                            f"independent {name}", "held-out", raw.get("kind", "")))  # fmt: skip
    return out


def corpora_present(names: tuple[str, ...] = TUNING) -> str | None:
    """None when every named corpus is in place, else why not."""
    missing = [n for n in names if not (CORPORA_ROOT / n / ".git").exists()]
    if missing:
        return (f"tuning corpora not found under {CORPORA_ROOT} ({', '.join(missing)}); "
                "`python3 bench/tuning/corpora.py --create` builds them")  # fmt: skip
    return None


def cases_for(sets: list[str]) -> list[Case]:
    """The cases of the named sets (eval, tuning, independent); a set whose corpora are missing is
    skipped with a note on stderr."""
    cases = eval_cases() if "eval" in sets else []
    for name, names, read in (("tuning", TUNING, tuning_cases),
                              ("independent", INDEPENDENT, independent_cases)):  # fmt: skip
        if name not in sets:
            continue
        why = corpora_present(names)
        if why:
            print(f"skipped the {name} set: {why}", file=sys.stderr)
        else:
            cases += read()
    return cases


def repo_path(name: str) -> Path:
    if name in TUNING + INDEPENDENT:
        return CORPORA_ROOT / name
    import eval_search_only

    return eval_search_only.corpus(name)


# -- the naive baseline --------------------------------------------------------------------------------


def naive(root: Path, rg: str, question: str) -> list[Cite]:
    """Grep each question word, count hits per file; cite the best three files at the line with
    the most of the words."""
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(question)))
    words = [w for w in words if w not in _ENGLISH_STOP]
    counts: Counter[str] = Counter()
    for w in words:
        out = subprocess.run(
            [rg, "--no-config", "--count-matches", "--ignore-case", "--fixed-strings", "--hidden",
             "--no-ignore", "--glob", "!.git", "-e", w, "--", "."],
            cwd=root, capture_output=True, text=True, check=False,
        )  # fmt: skip
        for line in out.stdout.splitlines():
            path, _, n = line.rpartition(":")
            if n.isdigit():
                counts[path.removeprefix("./")] += int(n)
    cites: list[Cite] = []
    for path, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP]:
        best, best_n = None, 0
        try:
            text = (root / path).read_text(errors="replace")
        except OSError:
            text = ""
        for n, line in enumerate(text.splitlines(), 1):
            low = line.lower()
            k = sum(1 for w in words if w in low)
            if k > best_n:
                best, best_n = n, k
        cites.append((path, best, None))
    return cites


# -- running --------------------------------------------------------------------------------------------


def settings() -> Settings:
    return Settings.from_env(
        {"HOME": str(OUT / "home"), "MIRROR_ROOT": str(OUT / "mirrors"),
         "SNAPSHOT_ROOT": str(OUT / "snapshots")}
    )  # fmt: skip


def run(cases: list[Case], *, with_naive: bool = True, unindexed: bool = False) -> dict[str, Any]:
    """Each case answered search-only, its index built first (timed); with `unindexed`, as a first
    question that cannot wait for the index (ranked by ripgrep's hits, on-the-spot parses)."""
    s = settings()
    store = MirrorStore.from_settings(s)
    rg = find_rg(s.rg_path)
    results: dict[str, Any] = {"cases": [], "repos": {}}
    by_repo: dict[str, list[Case]] = {}
    for c in cases:
        by_repo.setdefault(c.repo, []).append(c)
    for repo, rcases in by_repo.items():
        root = repo_path(repo)
        t = time.perf_counter()
        snap = store.sync(RepoSpec.parse(str(root), name=repo)).snapshot
        sync_s = time.perf_counter() - t
        deadline = None
        if unindexed:  # an index path nobody builds to, and no time to wait for it
            snap = Snapshot(snap.root, snap.sha, snap.repo, snap.deny,
                            index_path=OUT / "unindexed" / f"{repo}-{time.time_ns()}.defs")  # fmt: skip
        toolbox = Toolbox(snap, rg_path=s.rg_path)
        t = time.perf_counter()
        info: dict[str, Any] = {}
        if not unindexed:
            index = index_for(snap, wait_s=None)
            assert isinstance(index, DefinitionIndex)
            st = index.stats
            info = {"index_rows": index.rows, "index_parsed": st.parsed, "index_reused": st.reused}
        prepare_s = time.perf_counter() - t
        results["repos"][repo] = {"files": len(snap.files), "sync_s": round(sync_s, 2),
                                  "index_s": round(prepare_s, 2), **info}  # fmt: skip
        for c in rcases:
            toolbox.searches.clear()
            if unindexed:
                deadline = time.monotonic()
            t = time.perf_counter()
            ans = search_only.answer(c.question, toolbox, deadline=deadline)
            secs = time.perf_counter() - t
            v = verify_answer(ans.text, snap)
            cites = [(m.path, m.start_line, m.end_line) for m in v.citations]
            ours = score(c, cites, len(v.unverified))
            row: dict[str, Any] = {"case": c, "ours": ours, "seconds": secs, "text": ans.text}
            if with_naive:
                row["naive"] = score(c, naive(snap.root, rg, c.question))
            results["cases"].append(row)
    return results


def summarise(results: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per (set, split): top-3 file and line rates, ours and naive."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in results["cases"]:
        c = row["case"]
        groups.setdefault((c.set, c.split), []).append(row)
    out = []
    for (name, split), rows in groups.items():
        n = len(rows)

        def rate(who: str, attr: str, rows: list[dict[str, Any]] = rows, n: int = n) -> float:
            return round(sum(getattr(r[who], attr) for r in rows if who in r) / n, 3)

        entry = {"set": name, "split": split, "cases": n,
                 "file_top3": rate("ours", "file_top3"), "line_top3": rate("ours", "line_top3"),
                 "file_any": rate("ours", "file_any"), "line_any": rate("ours", "line_any"),
                 "invented": sum(r["ours"].invented for r in rows),
                 "p50_ms": round(statistics.median(r["seconds"] for r in rows) * 1000)}  # fmt: skip
        if all("naive" in r for r in rows):
            entry["naive_file_top3"] = rate("naive", "file_top3")
            entry["naive_line_top3"] = rate("naive", "line_top3")
        out.append(entry)
    return out


def dump(results: dict[str, Any], path: Path) -> None:
    """One line per case, sorted by id: what a ranking change must leave alone when it only means
    to be faster. An independent case is written as a digest of its answer, never its citations."""
    lines = []
    for row in results["cases"]:
        c = row["case"]
        if c.set.startswith("independent"):
            digest = hashlib.sha256(row["text"].encode()).hexdigest()[:16]
            lines.append(json.dumps({"id": c.id, "answer_sha": digest}))
        else:
            lines.append(json.dumps({"id": c.id, "cited": row["ours"].cited, "text": row["text"]}))
    path.write_text("\n".join(sorted(lines)) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="eval,tuning,independent")
    ap.add_argument("-v", action="store_true", help="list each tuned-on case that missed")
    ap.add_argument("--all", action="store_true", help="with -v, held-out cases too")
    ap.add_argument("--only", help="comma-separated case ids")
    ap.add_argument("--tuned", action="store_true", help="only the cases tuned on")
    ap.add_argument("--no-naive", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--unindexed", action="store_true", help="as first questions that cannot wait")
    ap.add_argument("--dump", type=Path, help="write each case's answer here (to diff two runs)")
    args = ap.parse_args()
    cases = cases_for(args.sets.split(","))
    if args.tuned:
        cases = [c for c in cases if c.split == "tuned"]
    if args.only:
        ids = set(args.only.split(","))
        cases = [c for c in cases if c.id in ids]
    results = run(cases, with_naive=not args.no_naive, unindexed=args.unindexed)
    rows = summarise(results)
    if args.dump:
        dump(results, args.dump)
    if args.json:
        print(json.dumps({"summary": rows, "repos": results["repos"]}, indent=2))
    else:
        for repo, info in results["repos"].items():
            print(f"{repo}: {json.dumps(info)}")
        for r in rows:
            print(json.dumps(r))
    if args.v:
        for row in results["cases"]:
            c, ours = row["case"], row["ours"]
            if c.split == "held-out" and not args.all or c.set.startswith("independent"):
                continue
            mark = "✓" if ours.line_top3 else ("~" if ours.file_top3 else "✗")
            print(f"{mark} {c.id} [{c.set}/{c.split}] {row['seconds'] * 1000:.0f} ms")
            if not ours.line_top3:
                want = ", ".join(f"{e['path']}:{e['line']}" for e in c.expected)
                print(f"    cited {', '.join(ours.cited[:5])}\n    want  {want}")


if __name__ == "__main__":
    main()
