"""`codeask eval`: run questions with known answers against repos and score the citations."""

from __future__ import annotations

import dataclasses
import json
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from codeask.answer import ask
from codeask.errors import BadInput
from codeask.mirror import MirrorStore, RepoSpec
from codeask.settings import Settings

LINE_TOLERANCE = 15  # a citation this close to the expected line points at the same thing


@dataclass(frozen=True)
class Case:
    id: str
    repo: str  # a name (resolved through --repo NAME=... or CODEASK_CONFIG), a path or a URL
    question: str
    expected: tuple[dict[str, Any], ...]  # {"path": ..., "line": optional}
    branch: str | None = None


@dataclass
class CaseResult:
    id: str
    hit: bool  # a verified citation points at an expected location (within LINE_TOLERANCE lines)
    file_hit: bool  # a verified citation names an expected file
    rank: int | None  # position among the citations of the first expected file, 1-based
    cited: list[str]
    invented: list[str]  # mentions that did not verify
    tool_calls: int
    tokens: int
    seconds: float
    mode: str
    error: str | None = None
    expected: list[str] = field(default_factory=list)


def load_cases(path: Path) -> list[Case]:
    """Read JSONL cases; every problem names its line."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise BadInput(f"cannot read {path}: {e}") from None
    except UnicodeDecodeError as e:
        raise BadInput(f"{path} is not UTF-8 text (byte {e.start}); cases are JSON lines") from None
    cases: list[Case] = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            expected = tuple(
                {"path": str(e["path"]), **({"line": int(e["line"])} if e.get("line") else {})}
                for e in raw["expected"]
            )
            cases.append(
                Case(
                    id=str(raw.get("id") or f"case-{n}"),
                    repo=str(raw["repo"]),
                    question=str(raw["question"]),
                    expected=expected,
                    branch=raw.get("branch"),
                )
            )
        except (ValueError, KeyError, TypeError) as e:
            raise BadInput(
                f"{path}:{n}: a case needs repo, question and expected [{{path, line?}}]: {e}"
            ) from None
    if not cases:
        raise BadInput(f"{path} holds no cases")
    return cases


def _spec(case: Case, repos: Mapping[str, str], settings: Settings) -> RepoSpec:
    if case.repo in repos:
        return RepoSpec.parse(repos[case.repo], branch=case.branch, name=case.repo)
    config = settings.bot_config
    if config is not None and case.repo in config.repos:
        entry = config.repos[case.repo]
        spec = RepoSpec.parse(entry.url, branch=case.branch or entry.branch, name=case.repo)
        return dataclasses.replace(spec, scope=entry.scope)  # the repo's own paths, if it has any
    return RepoSpec.parse(case.repo, branch=case.branch)


def _hits(
    case: Case, cites: list[tuple[str, int | None, int | None]]
) -> tuple[bool, bool, int | None]:
    """(a citation at an expected location, a citation of an expected file, that file's rank)."""
    hit = False
    rank = None
    for i, (path, start, end) in enumerate(cites, 1):
        for exp in case.expected:
            if path != exp["path"]:
                continue
            rank = rank or i
            line = exp.get("line")
            lo, hi = start or 0, end or start or 0
            if line is None or start is None or lo - LINE_TOLERANCE <= line <= hi + LINE_TOLERANCE:
                hit = True
    return hit, rank is not None, rank


def run_case(
    case: Case, settings: Settings, store: MirrorStore, repos: Mapping[str, str]
) -> CaseResult:
    started = time.monotonic()
    expected = [e["path"] + (f":{e['line']}" if e.get("line") else "") for e in case.expected]
    try:
        ans = ask(case.question, _spec(case, repos, settings), settings, store=store)
    except Exception as e:  # noqa: BLE001 - one broken case is reported, the run goes on
        return CaseResult(case.id, False, False, None, [], [], 0, 0,
                          time.monotonic() - started, "error", f"{type(e).__name__}: {e}", expected)  # fmt: skip
    cites = [(m.path, m.start_line, m.end_line) for m in ans.verification.citations]
    hit, file_hit, rank = _hits(case, cites)
    return CaseResult(
        id=case.id,
        hit=hit,
        file_hit=file_hit,
        rank=rank,
        cited=[p + (f":{s}" if s else "") for p, s, _ in cites],
        invented=[m.text for m in ans.verification.unverified],
        tool_calls=ans.tool_calls,
        tokens=int(ans.usage.get("input_tokens", 0)) + int(ans.usage.get("output_tokens", 0))
        + int(ans.usage.get("cache_read_tokens", 0)) + int(ans.usage.get("cache_write_tokens", 0)),
        seconds=time.monotonic() - started,
        mode=ans.mode,
        expected=expected,
    )  # fmt: skip


def run_eval(
    cases: list[Case],
    settings: Settings,
    *,
    repos: Mapping[str, str] | None = None,
    on_result: Callable[[CaseResult], None] | None = None,
) -> list[CaseResult]:
    store = MirrorStore.from_settings(settings)
    out = []
    for case in cases:
        result = run_case(case, settings, store, repos or {})
        if on_result:
            on_result(result)
        out.append(result)
    return out


def summarise(results: list[CaseResult]) -> dict[str, Any]:
    n = len(results)
    ok = [r for r in results if r.error is None]
    return {
        "cases": n,
        "errors": n - len(ok),
        "hit_rate": sum(r.hit for r in results) / n if n else 0.0,
        "file_hit_rate": sum(r.file_hit for r in results) / n if n else 0.0,
        "top3_rate": sum(1 for r in results if r.rank is not None and r.rank <= 3) / n
        if n
        else 0.0,
        "invented_paths": sum(len(r.invented) for r in results),
        "mean_tool_calls": statistics.fmean(r.tool_calls for r in ok) if ok else 0.0,
        "total_tokens": sum(r.tokens for r in results),
        "mean_seconds": statistics.fmean(r.seconds for r in ok) if ok else 0.0,
        "modes": sorted({r.mode for r in results}),
    }


def line_for(r: CaseResult) -> str:
    mark = "✓" if r.hit else ("~" if r.file_hit else "✗")
    if r.error:
        return f"✗ {r.id}  error: {r.error}"
    text = f"{mark} {r.id}  rank {r.rank or '-'}  calls {r.tool_calls}  tokens {r.tokens}  {r.seconds:.1f} s"
    if r.invented:
        text += f"  invented: {', '.join(r.invented)}"
    if not r.hit:
        wanted = ", ".join(r.expected) or "(not filled in)"
        text += f"\n    cited: {', '.join(r.cited[:5]) or 'nothing'}; expected: {wanted}"
    return text


def as_json(r: CaseResult) -> str:
    return json.dumps(asdict(r), ensure_ascii=False)
