"""Score model-player records against the tuning cases, per kind, one design or two side by side."""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from check_cases import Corpus, corpus_paths, load  # noqa: E402

LINE_TOLERANCE = 15  # as `codeask eval`: a citation this close to an expected line points at it
SITE_TOLERANCE = 2  # call sites sit a few lines apart, so finding one needs a near-exact citation
CALL_CAP = 8
_CITE = re.compile(r"^(?P<path>.+?)(?::(?P<start>\d+)(?:-(?P<end>\d+))?)?$")


@dataclass(frozen=True)
class Cite:
    path: str
    start: int | None
    end: int | None

    def near(self, line: int, tolerance: int) -> bool:
        if self.start is None:
            return False
        return self.start - tolerance <= line <= (self.end or self.start) + tolerance


def parse_cite(text: str) -> Cite | None:
    """`path`, `path:line` or `path:start-end`; a leading ./ is dropped."""
    m = _CITE.match(text.strip().strip("`"))
    if not m:
        return None
    start = int(m["start"]) if m["start"] else None
    end = int(m["end"]) if m["end"] else None
    return Cite(m["path"].removeprefix("./"), start, end)


def _unprefixed(c: Cite, repo: str, exists: Callable[[str], bool]) -> Cite:
    """Drop a leading `repo/` (as multi-repo answers write paths), unless the path is real as given."""
    inner = c.path.removeprefix(repo + "/")
    if inner != c.path and not exists(c.path) and exists(inner):
        return Cite(inner, c.start, c.end)
    return c


@dataclass
class Scored:
    id: str
    kind: str
    answered: bool
    tool_calls: int = 0
    rounds: int = 0
    line_hit: bool = False
    file_hit: bool = False
    sites_total: int = 0
    sites_found: int = 0
    invented: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # the record disagrees with itself


def score_one(
    case: Mapping[str, Any], record: Mapping[str, Any] | None, exists: Callable[[str], bool]
) -> Scored:
    cid, kind, repo = str(case["id"]), str(case["kind"]), str(case["repo"])
    sites = [(e["path"], int(e["line"])) for e in case.get("call_sites") or []]
    if record is None:
        return Scored(cid, kind, answered=False, sites_total=len(sites))
    parsed = [c for t in record.get("citations") or [] if (c := parse_cite(str(t)))]
    cites = [_unprefixed(c, repo, exists) for c in parsed]
    out = Scored(cid, kind, answered=True, sites_total=len(sites))
    out.tool_calls = int(record.get("tool_calls") or 0)
    out.rounds = int(record.get("rounds") or 0)
    calls = record.get("calls") or []
    if len(calls) != out.tool_calls:
        out.problems.append(f"tool_calls is {out.tool_calls} but {len(calls)} calls are listed")
    used_rounds = {c.get("round") for c in calls if isinstance(c, Mapping)}
    if calls and len(used_rounds) != out.rounds:
        out.problems.append(f"rounds is {out.rounds} but the calls use {len(used_rounds)} rounds")
    for exp in case["expected"]:
        for c in cites:
            if c.path == exp["path"]:
                out.file_hit = True
                if c.near(int(exp["line"]), LINE_TOLERANCE):
                    out.line_hit = True
    out.sites_found = sum(
        any(c.path == path and c.near(line, SITE_TOLERANCE) for c in cites) for path, line in sites
    )
    out.invented = sorted({c.path for c in cites if not exists(c.path)})
    return out


def score(
    cases: list[Mapping[str, Any]],
    records: Iterable[Mapping[str, Any]],
    exists: Callable[[str, str], bool],
) -> list[Scored]:
    """One Scored per case (a case without a record counts as unanswered); exists(repo, path)."""
    by_id = {str(r.get("id")): r for r in records}
    return [
        score_one(c, by_id.get(str(c["id"])), lambda p, r=c["repo"]: exists(r, p)) for c in cases
    ]


def summary(rows: list[Scored]) -> dict[str, float | int]:
    answered = [r for r in rows if r.answered]
    n = len(rows)
    total_sites = sum(r.sites_total for r in rows)
    return {
        "questions": n,
        "answered": len(answered),
        "mean_tool_calls": statistics.fmean(r.tool_calls for r in answered) if answered else 0.0,
        "mean_rounds": statistics.fmean(r.rounds for r in answered) if answered else 0.0,
        "at_call_cap": sum(r.tool_calls >= CALL_CAP for r in answered),
        "line_hits": sum(r.line_hit for r in rows),
        "file_hits": sum(r.file_hit for r in rows),
        "call_sites_found": sum(r.sites_found for r in rows) / total_sites if total_sites else 0.0,
        "invented_paths": sum(len(r.invented) for r in rows),
    }


def by_kind(rows: list[Scored]) -> dict[str, dict[str, float | int]]:
    groups: dict[str, list[Scored]] = {"all": rows}
    for r in rows:
        groups.setdefault(r.kind, []).append(r)
    return {k: summary(v) for k, v in groups.items()}


_METRICS = (
    ("answered", "{}"),
    ("mean_tool_calls", "{:.2f}"),
    ("mean_rounds", "{:.2f}"),
    ("at_call_cap", "{}"),
    ("line_hits", "{}"),
    ("file_hits", "{}"),
    ("call_sites_found", "{:.0%}"),
    ("invented_paths", "{}"),
)


def table(designs: Mapping[str, dict[str, dict[str, float | int]]]) -> str:
    """Rows of kind × metric, one column per design."""
    names = list(designs)
    kinds = list(dict.fromkeys(k for d in designs.values() for k in d))
    head = ["kind", "metric", *names]
    rows = [head]
    for kind in kinds:
        for metric, fmt in _METRICS:
            if metric == "call_sites_found" and kind not in ("all", "callers"):
                continue
            cells = []
            for name in names:
                s = designs[name].get(kind)
                cell = fmt.format(s[metric]) if s else "-"
                if s and metric in ("answered", "line_hits", "file_hits"):
                    cell += f"/{s['questions']}"
                cells.append(cell)
            rows.append([kind, metric, *cells])
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows)


def _exists_in(repos: Mapping[str, Path]) -> Callable[[str, str], bool]:
    corpora: dict[str, Corpus] = {}

    def exists(repo: str, path: str) -> bool:
        if repo not in corpora:
            corpora[repo] = Corpus(repos[repo])
        return path in corpora[repo].files()

    return exists


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("records", nargs="?", type=Path, help="one record file (JSONL)")
    ap.add_argument("--old", type=Path, help="records of the old design")
    ap.add_argument("--new", type=Path, help="records of the new design")
    ap.add_argument("--cases", type=Path, action="append", help="case files (default: hard+easy)")
    ap.add_argument("--repo", action="append", default=[], metavar="NAME=PATH")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("-v", "--verbose", action="store_true", help="list each question's result")
    args = ap.parse_args(argv)
    files = {"records": args.records} if args.records else {}
    files |= {k: v for k, v in (("old", args.old), ("new", args.new)) if v}
    if not files:
        ap.error("give a record file, or --old and --new")
    case_files = args.cases or [HERE / "hard.jsonl", HERE / "easy.jsonl"]
    cases = [c for f in case_files for c in load(f)]
    exists = _exists_in(corpus_paths(args.repo))
    designs, problems = {}, []
    for name, path in files.items():
        records = load(path)
        known = {str(c["id"]) for c in cases}
        problems += [
            f"{name}: record for unknown case {r.get('id')!r}"
            for r in records
            if str(r.get("id")) not in known
        ]
        rows = score(cases, records, exists)
        designs[name] = by_kind(rows)
        for r in rows:
            problems += [f"{name}: {r.id}: {p}" for p in r.problems]
            if args.verbose:
                mark = "✓" if r.line_hit else ("~" if r.file_hit else "✗")
                sites = f" sites {r.sites_found}/{r.sites_total}" if r.sites_total else ""
                print(f"{name:8} {mark} {r.id:22} calls {r.tool_calls} rounds {r.rounds}{sites}"
                      + (f" invented {', '.join(r.invented)}" if r.invented else ""))  # fmt: skip
    if args.json:
        print(json.dumps({"designs": designs, "problems": problems}, indent=2))
    else:
        print(table(designs))
        for p in problems:
            print(f"warning: {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
