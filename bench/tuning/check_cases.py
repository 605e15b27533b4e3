"""Check tuning cases against their corpora: every path, line and call site holds what the case says."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from corpora import CORPORA, ROOT  # noqa: E402

KINDS = ("where", "how", "callers", "hops")
MIN_CALL_SITES = 7
MIN_HOPS = 3


class Corpus:
    """One git repository read at one commit, through git (so a dirty work tree cannot fool it)."""

    def __init__(self, path: Path, commit: str | None = None) -> None:
        self.path = path
        self.commit = commit or self._git("rev-parse", "HEAD").strip()
        self._files: set[str] | None = None
        self._lines: dict[str, list[str]] = {}

    def _git(self, *args: str) -> str:
        out = subprocess.run(
            ["git", "-C", str(self.path), *args], capture_output=True, text=True, errors="replace"
        )
        if out.returncode not in (0, 1):  # git grep answers 1 for "nothing found"
            raise RuntimeError(f"git {' '.join(args[:2])} in {self.path}: {out.stderr.strip()}")
        return out.stdout

    def files(self) -> set[str]:
        if self._files is None:
            listing = self._git("ls-tree", "-r", "--name-only", "-z", self.commit)
            self._files = set(filter(None, listing.split("\0")))
        return self._files

    def lines(self, path: str) -> list[str]:
        if path not in self._lines:
            # split on \n only: str.splitlines() also splits on form feeds, which C sources contain
            self._lines[path] = self._git("show", f"{self.commit}:{path}").split("\n")
        return self._lines[path]

    def grep(self, literal: str, pattern: str, paths: Iterable[str] = ()) -> set[tuple[str, int]]:
        """(path, line) of every line holding `literal` that also matches the regex `pattern`."""
        out = self._git("grep", "-n", "-I", "-F", "-e", literal, self.commit, "--", *paths)
        rx = re.compile(pattern)
        found = set()
        prefix = f"{self.commit}:"
        for row in out.splitlines():
            path, line, text = row.removeprefix(prefix).split(":", 2)
            if rx.search(text):
                found.add((path, int(line)))
        return found


@dataclass
class Report:
    errors: list[str] = field(default_factory=list)
    checked: int = 0  # locations confirmed

    def bad(self, case_id: str, text: str) -> None:
        self.errors.append(f"{case_id}: {text}")


def load(path: Path) -> list[dict[str, Any]]:
    cases = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip():
            try:
                cases.append(json.loads(line))
            except ValueError as e:
                raise SystemExit(f"{path}:{n}: not JSON: {e}") from None
    return cases


def _check_location(
    corpus: Corpus, case_id: str, where: str, entry: Mapping[str, Any], report: Report
) -> tuple[str, int] | None:
    path, line, contains = entry.get("path"), entry.get("line"), entry.get("contains")
    if not isinstance(path, str) or not isinstance(line, int) or not contains:
        report.bad(case_id, f"{where} needs path, line and contains: {dict(entry)}")
        return None
    if path not in corpus.files():
        report.bad(case_id, f"{where} {path} does not exist at {corpus.commit[:12]}")
        return None
    lines = corpus.lines(path)
    if not 1 <= line <= len(lines):
        report.bad(case_id, f"{where} {path}:{line} is past the end ({len(lines)} lines)")
        return None
    if contains not in lines[line - 1]:
        report.bad(
            case_id, f"{where} {path}:{line} lacks {contains!r}: {lines[line - 1].strip()!r}"
        )
        return None
    report.checked += 1
    return path, line


def check_case(case: Mapping[str, Any], corpus: Corpus, report: Report) -> None:
    cid = str(case.get("id"))
    for key in ("id", "repo", "question", "expected", "kind"):
        if not case.get(key):
            report.bad(cid, f"missing {key}")
    kind = case.get("kind")
    if kind not in KINDS:
        report.bad(cid, f"kind {kind!r} is not one of {', '.join(KINDS)}")
    for i, entry in enumerate(case.get("expected") or []):
        _check_location(corpus, cid, f"expected[{i}]", entry, report)
    if kind == "hops":
        hops = case.get("hops")
        if not isinstance(hops, int) or hops < MIN_HOPS:
            report.bad(cid, f"a hops case needs hops >= {MIN_HOPS}, got {hops!r}")
        elif len(case.get("expected") or []) < hops:
            report.bad(cid, f"{hops} hops but only {len(case['expected'])} expected locations")
    if kind == "callers":
        _check_callers(case, corpus, report)


def _check_callers(case: Mapping[str, Any], corpus: Corpus, report: Report) -> None:
    cid = str(case.get("id"))
    sites = {
        loc
        for i, e in enumerate(case.get("call_sites") or [])
        if (loc := _check_location(corpus, cid, f"call_sites[{i}]", e, report))
    }
    others = {
        loc
        for i, e in enumerate(case.get("not_call_sites") or [])
        if (loc := _check_location(corpus, cid, f"not_call_sites[{i}]", e, report))
    }
    if len(case.get("call_sites") or []) < MIN_CALL_SITES:
        report.bad(cid, f"a callers case needs {MIN_CALL_SITES}+ call_sites")
    grep = case.get("call_grep")
    if not isinstance(grep, Mapping) or not grep.get("literal") or not grep.get("pattern"):
        report.bad(cid, "a callers case needs call_grep {literal, pattern, paths?}")
        return
    found = corpus.grep(grep["literal"], grep["pattern"], grep.get("paths") or ())
    for path, line in sorted(found - sites - others):
        report.bad(
            cid, f"{path}:{line} matches call_grep but is in neither call_sites nor not_call_sites"
        )
    for path, line in sorted((sites | others) - found):
        report.bad(cid, f"{path}:{line} is listed but call_grep does not find it")
    if sites & others:
        report.bad(cid, f"both a call site and not one: {sorted(sites & others)}")


def corpus_paths(pairs: Iterable[str]) -> dict[str, Path]:
    repos = {c.name: ROOT / c.name for c in CORPORA}
    for pair in pairs:
        name, sep, path = pair.partition("=")
        if not sep:
            raise SystemExit(f"--repo wants NAME=PATH, got {pair!r}")
        repos[name] = Path(path)
    return repos


def check_files(
    files: Iterable[Path], repos: Mapping[str, Path], pinned: Mapping[str, str]
) -> Report:
    report = Report()
    corpora: dict[str, Corpus] = {}
    seen: set[str] = set()
    for f in files:
        for case in load(f):
            cid, name = str(case.get("id")), str(case.get("repo"))
            if cid in seen:
                report.bad(cid, "duplicate id")
            seen.add(cid)
            if name not in corpora:
                if name not in repos or not (repos[name] / ".git").exists():
                    report.bad(cid, f"no corpus {name!r}; give --repo {name}=PATH")
                    continue
                corpora[name] = Corpus(repos[name])
                if name in pinned and corpora[name].commit != pinned[name]:
                    report.bad(
                        cid, f"{name} is at {corpora[name].commit}, cases are for {pinned[name]}"
                    )
            check_case(case, corpora[name], report)
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument(
        "files", nargs="*", type=Path, default=[HERE / "hard.jsonl", HERE / "easy.jsonl"]
    )
    ap.add_argument("--repo", action="append", default=[], metavar="NAME=PATH")
    args = ap.parse_args(argv)
    report = check_files(args.files, corpus_paths(args.repo), {c.name: c.commit for c in CORPORA})
    for e in report.errors:
        print(f"BAD {e}")
    print(f"{report.checked} locations confirmed, {len(report.errors)} problems")
    return 1 if report.errors else 0


if __name__ == "__main__":
    sys.exit(main())
