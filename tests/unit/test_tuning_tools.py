"""The tuning set's tools (bench/tuning): the case checker, the player scorer and the question export."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "tuning"))

import check_cases  # noqa: E402
import corpora  # noqa: E402
import questions  # noqa: E402
import score_players  # noqa: E402

# A C file whose form feed must not count as a line break, and seven call sites of `retry`
# five lines apart (lines 1, 6, 11, ... 31).
LIB_C = "int retry (int n)\n{\n  return n;\n}\n\x0c\n/* retry (0) is a comment */\n"
CALLS_C = "".join(f"void f{i} (void) {{ retry ({i}); }}\n\n\n\n\n" for i in range(7))
SITES = [1 + 5 * i for i in range(7)]
FILES = {"lib.c": LIB_C, "calls.c": CALLS_C, "docs/README.md": "call retry (n) to retry\n",
         "tiny/real.c": "int real;\n"}  # fmt: skip


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
           "PATH": "/usr/bin:/bin:/usr/local/bin", "HOME": str(repo)}  # fmt: skip
    return subprocess.run(["git", "-C", str(repo), *args], env=env, check=True,
                          capture_output=True, text=True).stdout.strip()  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "tiny"
    root.mkdir()
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "tiny")
    return root


def _loc(path: str, line: int, contains: str) -> dict[str, Any]:
    return {"path": path, "line": line, "contains": contains}


def _callers_case(**over: Any) -> dict[str, Any]:
    case = {
        "id": "tiny-callers",
        "repo": "tiny",
        "kind": "callers",
        "question": "Who retries?",
        "expected": [_loc("lib.c", 1, "int retry (int n)")],
        "call_sites": [_loc("calls.c", line, "retry") for line in SITES],
        "not_call_sites": [_loc("lib.c", 1, "retry"), _loc("lib.c", 6, "retry")],
        "call_grep": {"literal": "retry", "pattern": r"\bretry \(", "paths": ["*.c"]},
    }
    return case | over


def _where_case(**over: Any) -> dict[str, Any]:
    case = {"id": "tiny-where", "repo": "tiny", "kind": "where", "question": "Where is the comment?",
            "expected": [_loc("lib.c", 6, "is a comment")]}  # fmt: skip
    return case | over


def _check(
    tmp_path: Path, repo: Path, *cases: dict[str, Any], pinned: dict[str, str] | None = None
):
    f = tmp_path / "cases.jsonl"
    f.write_text("".join(json.dumps(c) + "\n" for c in cases))
    return check_cases.check_files([f], {"tiny": repo}, pinned or {})


def test_a_correct_case_set_passes_and_lines_count_newlines_only(tmp_path, repo):
    report = _check(tmp_path, repo, _where_case(), _callers_case())
    assert report.errors == []
    assert report.checked == 1 + 1 + 7 + 2  # lib.c:6 is past the form feed, not lib.c:7


def test_a_wrong_line_a_missing_path_and_a_line_past_the_end_are_reported(tmp_path, repo):
    case = _where_case(expected=[_loc("lib.c", 3, "is a comment"), _loc("nope.c", 1, "x"),
                                 _loc("lib.c", 99, "x"), {"path": "lib.c", "line": 1}])  # fmt: skip
    errors = _check(tmp_path, repo, case).errors
    assert any("lib.c:3 lacks 'is a comment'" in e for e in errors)
    assert any("nope.c does not exist" in e for e in errors)
    assert any("lib.c:99 is past the end" in e for e in errors)
    assert any("needs path, line and contains" in e for e in errors)


def test_a_call_site_left_out_of_the_list_is_found_by_the_grep(tmp_path, repo):
    sites = [_loc("calls.c", line, "retry") for line in SITES[:-1]]  # the 7th is missing
    errors = _check(tmp_path, repo, _callers_case(call_sites=sites)).errors
    assert any("calls.c:31 matches call_grep but is in neither" in e for e in errors)
    assert any("needs 7+ call_sites" in e for e in errors)


def test_a_listed_site_the_grep_does_not_find_is_reported(tmp_path, repo):
    others = [
        _loc("lib.c", 1, "retry"),
        _loc("lib.c", 6, "retry"),
        _loc("docs/README.md", 1, "retry"),
    ]
    errors = _check(tmp_path, repo, _callers_case(not_call_sites=others)).errors
    assert errors == ["tiny-callers: docs/README.md:1 is listed but call_grep does not find it"]


def test_hops_kinds_ids_and_pinned_commits_are_checked(tmp_path, repo):
    hops = _where_case(id="h", kind="hops", hops=2)
    errors = _check(tmp_path, repo, hops, _where_case(id="h", kind="why"),
                    pinned={"tiny": "0" * 40}).errors  # fmt: skip
    assert any("needs hops >= 3" in e for e in errors)
    assert any("kind 'why'" in e for e in errors)
    assert any("duplicate id" in e for e in errors)
    assert any("cases are for 0000" in e for e in errors)


def test_a_case_for_an_unknown_corpus_is_an_error_not_a_crash(tmp_path, repo):
    errors = _check(tmp_path, repo, _where_case(repo="elsewhere")).errors
    assert errors == ["tiny-where: no corpus 'elsewhere'; give --repo elsewhere=PATH"]


def _scored(repo: Path, case: dict[str, Any], record: dict[str, Any] | None):
    corpus = check_cases.Corpus(repo)
    records = [record] if record else []
    return score_players.score([case], records, lambda _r, p: p in corpus.files())[0]


def _record(citations: list[str], **over: Any) -> dict[str, Any]:
    rec = {"id": "tiny-callers", "answer": "...", "citations": citations, "tool_calls": 2,
           "rounds": 1, "calls": [{"round": 1, "tool": "search_code", "args": {}}] * 2,
           "extra_call_causes": "none"}  # fmt: skip
    return rec | over


def test_a_citation_within_15_lines_is_a_line_hit_and_16_away_only_a_file_hit(repo):
    case = _callers_case(expected=[{"path": "calls.c", "line": 20}])
    assert _scored(repo, case, _record(["calls.c:5"])).line_hit
    far = _scored(repo, case, _record(["calls.c:36"]))
    assert far.file_hit and not far.line_hit
    assert _scored(repo, case, _record(["tiny/calls.c:30-40"])).line_hit  # repo prefix, range


def test_a_path_that_starts_with_the_repo_name_is_kept_when_it_is_real(repo):
    case = _where_case(expected=[{"path": "tiny/real.c", "line": 1}])
    kept = _scored(repo, case, _record(["tiny/real.c:1"], id="tiny-where"))
    assert kept.line_hit and kept.invented == []


def test_call_sites_need_a_near_exact_citation_and_invented_paths_are_counted(repo):
    rec = _record(
        ["calls.c:1", "./calls.c:13", "calls.c:15-16", "calls.c:29", "lib.c", "made/up.c:3"]
    )
    s = _scored(repo, _callers_case(), rec)
    # sites 1, 11 (13 is 2 away), 16 (in the range) and 31 (2 away from 29); 26 is 3 away from 29
    assert (s.sites_found, s.sites_total) == (4, 7)
    assert s.invented == ["made/up.c"]
    assert s.file_hit and not s.line_hit  # lib.c without a line names the file only


def test_an_unanswered_question_scores_nothing_and_a_record_that_disagrees_is_flagged(repo):
    missing = _scored(repo, _callers_case(), None)
    assert not missing.answered and missing.sites_total == 7 and missing.sites_found == 0
    odd = _scored(repo, _callers_case(), _record(["calls.c:1"], tool_calls=3, rounds=2))
    assert odd.problems == ["tool_calls is 3 but 2 calls are listed",
                            "rounds is 2 but the calls use 1 rounds"]  # fmt: skip


def test_summary_by_kind_counts_the_cap_and_the_table_shows_both_designs(repo):
    cases = [_callers_case(), _where_case()]
    capped = _record(["calls.c:1"], tool_calls=8, calls=[{"round": 1}] * 8)
    corpus = check_cases.Corpus(repo)
    rows = score_players.score(cases, [capped], lambda _r, p: p in corpus.files())
    summary = score_players.by_kind(rows)
    assert summary["all"]["answered"] == 1 and summary["all"]["questions"] == 2
    assert summary["callers"]["at_call_cap"] == 1
    assert summary["callers"]["call_sites_found"] == pytest.approx(1 / 7)
    assert summary["where"]["line_hits"] == 0
    text = score_players.table({"old": summary, "new": score_players.by_kind(rows[:1])})
    head = text.splitlines()[0].split()
    assert head == ["kind", "metric", "old", "new"]
    assert any(line.split()[:3] == ["where", "answered", "0/1"] for line in text.splitlines())


def test_the_scorer_command_prints_a_side_by_side_table(tmp_path, repo, capsys):
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(_callers_case()) + "\n")
    old, new = tmp_path / "old.jsonl", tmp_path / "new.jsonl"
    old.write_text(json.dumps(_record(["calls.c:1"])) + "\n")
    new.write_text(json.dumps(_record([f"calls.c:{line}" for line in SITES])) + "\n")
    code = score_players.main(["--old", str(old), "--new", str(new), "--cases", str(cases),
                               "--repo", f"tiny={repo}"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    found = next(line.split() for line in out.splitlines() if "call_sites_found" in line)
    assert found[-2:] == ["14%", "100%"]


def test_the_question_export_carries_no_answers():
    cases = [_callers_case()]
    assert questions.questions_only(cases) == [
        {"id": "tiny-callers", "repo": "tiny", "question": "Who retries?"}
    ]


def test_the_corpora_check_names_what_is_missing_and_how_to_build_it(tmp_path, monkeypatch):
    monkeypatch.setattr(corpora, "ROOT", tmp_path)
    c = corpora.Corpus("tiny", "https://github.com/o/tiny", "o+tiny", "main", "a" * 40, "b" * 40,
                       history=True)  # fmt: skip
    wrong = corpora.problems(c)
    assert set(wrong) == {tmp_path / "tiny", tmp_path / "tiny-full"}
    assert "HEAD is missing" in wrong[tmp_path / "tiny"]
    assert any(f"read-tree {'a' * 40}" in cmd for cmd in corpora.create_commands(c))


def test_the_corpora_check_can_be_limited_to_the_independent_corpora(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(corpora, "ROOT", tmp_path)
    assert corpora.main(["--role", "independent"]) == 1
    out = capsys.readouterr().out
    named = {line.split("/")[-1].split(":")[0] for line in out.splitlines() if "HEAD is" in line}
    want = {c.name for c in corpora.CORPORA if c.role == "independent"}
    assert want and named == want | {f"{c.name}-full" for c in corpora.CORPORA
                                     if c.role == "independent" and c.history}  # fmt: skip
    assert "glibc" not in out
