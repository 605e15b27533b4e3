"""search_code's result as the model reads it: budget, bodies, context, ordering, case, alternations, globs."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from codeask.search import BUDGET
from codeask.snapshot import RepoRef, Snapshot
from codeask.tools import Toolbox
from conftest import write

FIXTURES = Path(__file__).parent / "fixtures" / "search"
SHA = "b" * 40


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return tmp_path / "repo"


def search(root: Path, **args: str) -> str:
    tb = Toolbox(Snapshot(root, SHA, RepoRef("r", str(root))))
    result = tb.run("search_code", args)
    assert not result.is_error, result.text
    return result.text


def hit_rows(text: str) -> list[str]:
    """The lines that are hits (a mark, a line number, the text), previews included."""
    return [ln for ln in text.splitlines() if re.match(r"^[D=>IS#] +\d+  ", ln)]


# -- budget ------------------------------------------------------------------------------------


def test_a_result_of_25_matches_shows_every_one_with_its_text(repo: Path) -> None:
    # Given 25 call sites with long lines in five files
    for f in range(5):
        body = "".join(
            f"def caller_{f}_{i}():\n    send_invoice({'x' * 280}, {i})\n\n" for i in range(5)
        )
        write(repo, f"billing/mod{f}.py", body)
    # When they are searched for
    text = search(repo, pattern="send_invoice")
    # Then each one is there with its text and its caller, and the header says the list is complete
    assert len(hit_rows(text)) == 25
    for f in range(5):
        for i in range(5):
            assert f"  in def caller_{f}_{i}()" in text
    assert "complete: every match is shown" in text


def test_beyond_the_budget_folded_hits_get_a_preview_then_counts(repo: Path) -> None:
    # Given 400 call sites in 80 files
    for f in range(80):
        write(repo, f"svc/m{f:02}.py", "".join(f"x{i} = notify_user({f}, {i})\n" for i in range(5)))
    text = search(repo, pattern="notify_user")
    # Then it stays within the budget, says what was shown, previews more, and counts the rest
    assert len(text) <= BUDGET
    head = text.splitlines()[0]
    assert re.search(r"\d+ shown with context, \d+ as one-line previews, \d+ only counted", head)
    assert "more in this file, one line each:" in text
    assert "Not shown, with their match counts: " in text
    assert "complete" not in head


def test_a_flood_stays_within_the_budget(repo: Path) -> None:
    for f in range(30):
        write(repo, f"gen/f{f}.txt", ("needle " + "y" * 390 + "\n") * 60)
    assert len(search(repo, pattern="needle")) <= BUDGET


# -- bodies and context ------------------------------------------------------------------------


def test_a_definition_is_shown_to_its_end_and_a_long_one_says_where_it_ends(repo: Path) -> None:
    write(repo, "src/session.py", (FIXTURES / "session.py").read_text())
    text = search(repo, pattern="def get_adapter|def retry")
    # get_adapter is 5 lines: all of them; retry is 21 lines: also whole
    assert 'raise ValueError(f"no adapter for {url!r}")' in text
    assert "return decorate" in text
    # a body of 60 lines under a long signature: all of it, the signature not counted
    signature = (
        "def long_one(\n" + "".join(f"    arg_{i}: int,\n" for i in range(12)) + ") -> None:\n"
    )
    body = "".join(f"    step_{i}()\n" for i in range(60))
    write(repo, "src/long.py", signature + body)
    text = search(repo, pattern="def long_one")
    assert "arg_11: int," in text and "step_0()" in text and "step_59()" in text
    assert "goes on to line" not in text
    # a longer one: its signature and the head of its body, then where it ends
    write(repo, "src/long.py", signature + "".join(f"    step_{i}()\n" for i in range(200)))
    text = search(repo, pattern="def long_one")
    assert "arg_11: int," in text and "step_0()" in text and "step_29()" in text
    assert "step_30()" not in text
    assert re.search(r"^ +⋮  \[… the definition goes on to line 214\]$", text, re.M)


def test_context_reads_like_code(repo: Path) -> None:
    write(repo, "src/session.py", (FIXTURES / "session.py").read_text())
    text = search(repo, pattern=r"time\.sleep")
    block = text.split("src/session.py", 1)[1]
    # the scope, the loop it is in and the value it uses, in line order, indentation kept
    assert "  in def retry › def decorate › def wrapper(*args, **kwargs)" in block
    rows = [ln for ln in block.splitlines() if re.match(r"^[ D=>IS#] +\d+  ", ln)]
    numbers = [int(re.findall(r"\d+", ln)[0]) for ln in rows]
    assert numbers == sorted(numbers) and len(numbers) == len(set(numbers))
    assert any(ln.endswith("            delay = DEFAULT_BACKOFF") for ln in rows)
    assert any(ln.endswith("            for attempt in range(times):") for ln in rows)
    assert any(ln.endswith("                    time.sleep(delay * 2**attempt)") for ln in rows)


def test_a_decorator_hit_names_the_function_it_decorates(repo: Path) -> None:
    write(repo, "src/session.py", (FIXTURES / "session.py").read_text())
    text = search(repo, pattern=r"@retry\(")
    assert "@ decorates def send(self, request, *, stream: bool = False" in text


def test_c_call_sites_name_their_functions(repo: Path) -> None:
    write(repo, "refs.c", (FIXTURES / "refs.c").read_text())
    text = search(repo, pattern=r"resolve_ref_unsafe\(")
    assert "  in int update_ref(const char *msg, const char *refname" in text
    assert re.search(r"^D +\d+  resolve_ref_unsafe\(const char \*refname,$", text, re.M)


def test_yaml_keys_show_their_path(repo: Path) -> None:
    write(repo, "deploy/values.yaml", (FIXTURES / "values.yaml").read_text())
    text = search(repo, pattern="redis:")
    assert "  in plugin_routing › modules › redis" in text
    assert "  in plugin_routing › cache › redis" in text
    assert "host: redis-master" in text  # a small mapping is shown whole under its key


# -- ordering ------------------------------------------------------------------------------------


def test_whole_words_first_and_matches_inside_longer_words_summarised(repo: Path) -> None:
    licence = "# Copyright 2026 Example. Redistribution and use permitted.\n"
    for i in range(6):
        write(repo, f"lib/m{i}.py", licence + f"def f{i}():\n    return {i}\n")
    write(repo, "app/cache.py", licence + "def connect():\n    return redis_client(host)\n")
    write(repo, "app/settings.py", "REDIS_URL = 'x'\nbackend = 'redis'\n")
    text = search(repo, pattern="redis")
    # the files with the word come first; the licence-only files are one line in the header,
    # which names the longer word and the files
    assert "app/cache.py — 2 matches" in text and "app/settings.py — 2 matches" in text
    assert "lib/m0.py —" not in text
    assert (
        "Not shown: 6 matches in 6 files where `redis` is only part of a longer word "
        "(redistribution 6): lib/m0.py (1), lib/m1.py (1), lib/m2.py (1), lib/m3.py (1) and 2 "
        "more files; `\\bredis\\b` searches whole words only." in text
    )


def test_a_name_inside_longer_names_is_set_aside_in_an_alternation_too(repo: Path) -> None:
    # Given glibc's shape: `_IO_cleanup` called in two places, and a family of longer names
    # (`_IO_cleanup_region_start`) on many lines of the same files
    regions = "".join(
        f"void f{i} (FILE *fp)\n{{\n  _IO_cleanup_region_start ((void *) fn, fp);\n"
        f"  _IO_cleanup_region_end (0);\n}}\n\n"
        for i in range(6)
    )
    write(repo, "libio/iofclose.c", regions)
    write(repo, "libio/genops.c", regions + "void\n_IO_cleanup (void)\n{\n  _IO_flush_all ();\n}\n")
    write(repo, "libio/libioP.h", "extern void _IO_cleanup (void);\n")
    text = search(repo, pattern=r"_IO_cleanup|_IO_flush_all\b")
    # Then only the name itself is shown; the longer names are counted, named, and their files too
    assert not [ln for ln in hit_rows(text) if "_region_" in ln]
    assert re.search(r"^D +\d+  _IO_cleanup \(void\)$", text, re.M)
    assert (
        "Not shown: 24 matches in 2 files where `_IO_cleanup` is only part of a longer word "
        "(_IO_cleanup_region_start 12, _IO_cleanup_region_end 12): libio/genops.c (12), "
        "libio/iofclose.c (12); `\\b_IO_cleanup\\b` searches whole words only." in text
    )


def test_a_longer_name_defined_with_the_identifier_in_it_is_shown_after_whole_words(
    repo: Path,
) -> None:
    # Given an identifier whose longer forms are names of their own, defined and used
    write(
        repo,
        "http/retry.py",
        "class Client:\n"
        "    def __init__(self):\n"
        "        self.retry_handlers = []\n\n"
        "    def add(self, retry_handler):\n"
        "        self.retry_handlers.append(retry_handler)\n\n"
        "    def run(self):\n"
        "        for h in self.retry_handlers:\n"
        "            h()\n",
    )
    write(
        repo,
        "diff.c",
        "static int diff_rename_limit_default = 400;\n"
        "#define DEFAULT_RENAME_LIMIT_MAX 1000\n\n"
        "int rename_limit(void)\n{\n"
        "  return diff_rename_limit_default;\n}\n",
    )
    text = search(repo, pattern="retry_handler|rename_limit")
    rows = hit_rows(text)
    # Then the lines defining the longer names are shown; their mere uses stay set aside
    assert any("self.retry_handlers = []" in r for r in rows)
    assert any("static int diff_rename_limit_default = 400;" in r for r in rows)
    assert any("#define DEFAULT_RENAME_LIMIT_MAX 1000" in r for r in rows)
    assert not any("for h in self.retry_handlers" in r for r in rows)
    assert not any("return diff_rename_limit_default" in r for r in rows)
    assert "only part of a longer word" in text
    # and a file that only defines a longer name comes after the files with the name itself
    write(repo, "a/defaults.py", "RETRY_HANDLERS_DEFAULT = 3\n")
    text = search(repo, pattern="retry_handler")
    assert "D 1  RETRY_HANDLERS_DEFAULT = 3" in text
    assert text.index("http/retry.py —") < text.index("a/defaults.py —")


def test_a_long_definition_cut_collapses_its_docstring_and_shows_the_lines_naming_the_search(
    repo: Path,
) -> None:
    # Given a long method: a 25-line docstring, 80 lines of code, the searched name used near
    # its end (the shape of requests' Session.send), in a longer module
    doc = "".join(f"        Parameter note {i}: what it means.\n" for i in range(23))
    code = "".join(f"        step_{i} = prepare(request, {i})\n" for i in range(70))
    write(
        repo,
        "http/sessions.py",
        "class Session:\n"
        "    def send(self, request, **kwargs):\n"
        '        """Send a prepared request.\n\n' + doc + '        """\n'
        "        hooks = request.hooks\n" + code + "        if kwargs.get('stream'):\n"
        "            return self._send_once(request)\n"
        "        response = adapter.send(request, **kwargs)\n"
        + "".join(f"        tail_{i} = finish(response, {i})\n" for i in range(12))
        + "        return response\n\n"
        # the rest of the module: too long a file to be shown whole
        + "".join(f"def other_{i}(x):\n    return x + {i}\n\n" for i in range(20)),
    )
    text = search(repo, pattern=r"def send\(")
    # Then the docstring is collapsed to its opening lines, the code after it is shown, and so
    # are the lines below the cut that use `send`, before the note where the definition goes on
    assert '"""Send a prepared request.' in text
    assert "Parameter note 10" not in text
    assert "hooks = request.hooks" in text
    assert "return self._send_once(request)" in text
    assert "response = adapter.send(request, **kwargs)" in text
    assert "tail_5 = finish" not in text
    assert re.search(r"⋮ +\[… the definition goes on to line 1\d\d\]", text)


def test_a_short_top_hit_file_is_shown_whole_when_the_budget_has_room(repo: Path) -> None:
    # Given a 120-line module (pylint's async checker's size) with the hit in its middle, and a
    # 200-line one like it
    def module(n: int) -> str:
        head = '"""Checks for the async protocol."""\n\nfrom __future__ import annotations\n\n'
        funcs = "".join(
            f"def helper_{i}(node):\n    if node.is_async:\n        return {i}\n    return None\n\n"
            for i in range((n - 14) // 5)
        )
        return head + funcs + "class AsyncChecker:\n    name = 'async'\n\n    def visit(self, n):\n"
        "        return helper_3(n)\n\n\ndef register(linter):\n    linter.register(AsyncChecker())\n"

    write(repo, "checkers/async_checker.py", module(120))
    text = search(repo, pattern="class AsyncChecker")
    # Then every line of it is shown, with no gap and no "goes on"
    lines = (repo / "checkers/async_checker.py").read_text().splitlines()
    assert 100 <= len(lines) <= 150
    for i, line in enumerate(lines, 1):
        assert re.search(rf"^[D ] +{i}  {re.escape(line)}$", text, re.M), (i, line)
    assert "⋮" not in text
    # while the longer one is still shown in part
    write(repo, "checkers/async_checker.py", module(200))
    text = search(repo, pattern="class AsyncChecker")
    assert "def helper_1(node):" not in text


def test_a_line_break_in_a_pattern_searches_its_lines_apart_with_a_note(repo: Path) -> None:
    # Given pylint's register function, its checker registered on the next line
    write(repo, "pylint/checkers/async_checker.py", (
        "class AsyncChecker:\n    name = 'async'\n\n\n"
        "def register(linter: PyLinter) -> None:\n    linter.register_checker(AsyncChecker(linter))\n"
    ))  # fmt: skip
    # When the model writes a multi-line pattern (rg refuses `\n` without -U)
    text = search(repo, pattern=r"def register\(linter.*\n\s+linter\.register_checker")
    # Then each line is searched apart, the note says so, and both lines are shown
    assert text.startswith(
        "Note: the search reads one line at a time, so a line break (`\\n`) cannot match; each "
        "line of the pattern was searched apart, as `def register\\(linter.*|linter\\.register_checker`"
    )
    assert re.search(r"^D +5  def register\(linter: PyLinter\) -> None:$", text, re.M)
    assert re.search(r"^> +6      linter\.register_checker\(AsyncChecker\(linter\)\)$", text, re.M)
    # a break inside a group: the pattern without it; a trailing break: the rest alone
    assert "searched without its line breaks, as `(register|x)`" in search(
        repo, pattern=r"(register\n|x)"
    )
    assert "`class AsyncChecker:` was searched alone." in search(
        repo, pattern="class AsyncChecker:\n"
    )
    # and a pattern of nothing but a line break is a clear error, not rg's
    tb = Toolbox(Snapshot(repo, SHA, RepoRef("r", str(repo))))
    result = tb.run("search_code", {"pattern": r"\n\s*"})
    assert result.is_error and "search for the text on either side of it" in result.text


def test_licence_headers_rank_last(repo: Path) -> None:
    write(repo, "a_licensed.py", "# Copyright (c) 2026 uses sqlite under its licence\nx = 1\n")
    write(repo, "z_code.py", "import sqlite3\nconn = sqlite3.connect(path)\n")
    text = search(repo, pattern="sqlite")
    assert text.index("z_code.py") < text.index("a_licensed.py")


GLIBC_HEADER = (
    "/* {what}\n"
    "   Copyright (C) {years} Free Software Foundation, Inc.\n"
    "   This file is part of the GNU C Library.\n\n"
    "   The GNU C Library is free software; you can redistribute it and/or\n"
    "   modify it under the terms of the GNU Lesser General Public\n"
    "   License as published by the Free Software Foundation; either\n"
    "   version 2.1 of the License, or (at your option) any later version.  */\n\n"
)


def test_a_licence_header_in_many_files_is_shown_once_with_a_count(repo: Path) -> None:
    # Given glibc's header (the years differ) in twelve C files, and one program printing it
    for i in range(12):
        header = GLIBC_HEADER.format(what=f"Part {i}.", years=f"{1990 + i}-2026")
        write(repo, f"malloc/part{i}.c", header + f"int part{i} (void) {{ return {i}; }}\n")
    write(repo, "elf/ldd.bash.in", (
        "case $1 in\n  --vers | --versi | --versio | --version)\n"
        "    printf $\"Copyright (C) %s Free Software Foundation, Inc.\n\" \"2026\"\n"
        "    exit 0 ;;\nesac\n"
    ))  # fmt: skip
    text = search(repo, pattern="Free Software Foundation")
    # Then the program's line is shown, each header line once, the rest folded with a count
    head = text.splitlines()[0]
    assert head.startswith("25 matches in 13 files for `Free Software Foundation`; complete")
    assert "(22 repeats of a shown line folded)" in head
    assert len(hit_rows(text)) == 3
    assert "elf/ldd.bash.in" in text.split("\n\n", 1)[1].splitlines()[0]
    folded = [ln for ln in text.splitlines() if ln.startswith("Folded: ")]
    assert len(folded) == 2 and all(
        "the same line in 11 more files: malloc/part" in f for f in folded
    )
    # a code line alike in many files is not a licence header: every one is shown
    for i in range(4):
        write(repo, f"io/f{i}.c", "int\nf (void)\n{\n  return ptmalloc_init (0);\n}\n")
    text = search(repo, pattern="ptmalloc_init")
    assert len(hit_rows(text)) == 4 and "Folded" not in text


def test_a_sentence_repeated_under_many_keys_is_shown_once_with_their_rows(repo: Path) -> None:
    # Given kafka's values.yaml: the same sentence in the comment of six parameters
    params = ("loadBalancerIPs", "loadBalancerNames", "loadBalancerAnnotations", "nodePorts",
              "externalIPs", "domain")  # fmt: skip
    body = "externalAccess:\n  controller:\n    service:\n"
    for p in params:
        body += (
            f"      ## @param externalAccess.controller.service.{p} Array of {p} for each "
            f"Kafka broker. Length must be the same as replicaCount\n      {p}: []\n"
        )
    write(repo, "bitnami/kafka/values.yaml", body)
    text = search(repo, pattern="Length must be the same as replicaCount")
    # Then the first is shown with its key, the others are one line naming their rows
    assert "bitnami/kafka/values.yaml [config] — 6 matches" in text
    assert len(hit_rows(text)) == 1
    assert "  ↳ 5 more lines read the same around the match: 6, 8, 10, 12, 14" in text
    assert "(5 repeats of a shown line folded)" in text.splitlines()[0]
    # sentences that differ around the match are folded apart
    write(repo, "bitnami/kafka/values.yaml", body.replace("Length must", "Its length must", 3))
    text = search(repo, pattern="ength must be the same as replicaCount")
    assert [r.split()[1] for r in hit_rows(text)] == ["4", "10"]
    assert "  ↳ 2 more lines read the same around the match: 6, 8" in text
    assert "  ↳ 2 more lines read the same around the match: 12, 14" in text
    # a template's lines are code, in NOTES.txt too: alike around the match, each is a call site
    notes = "".join(
        f'  {cmd} --username postgres --dbname app -p {{{{ include "postgresql.v1.service.port" . }}}}\n'
        for cmd in ("psql --host a", "psql --host b", "kubectl port-forward", "psql")
    )
    write(repo, "bitnami/postgresql/templates/NOTES.txt", notes)
    text = search(repo, pattern="postgresql.v1.service.port")
    assert "bitnami/postgresql/templates/NOTES.txt [docs] — 4 matches" in text
    assert len(hit_rows(text)) == 4 and "read the same" not in text


def test_within_a_file_code_comes_before_comments_and_docstrings(repo: Path) -> None:
    comments = "".join(f"/* binary search note {i}: {'w' * 300} */\n" for i in range(40))
    code = "".join(f"int f{i}(void) {{ return binary_search(t, {i}); }}\n" for i in range(8))
    write(repo, "src/search.c", comments + code)
    text = search(repo, pattern="binary")
    code_rows = [ln for ln in hit_rows(text) if "return binary_search" in ln]
    assert len(code_rows) == 8 and all(ln.startswith(">") for ln in code_rows)
    assert "src/search.c — 48 matches" in text


def test_c_sources_are_code_whatever_their_name(repo: Path) -> None:
    write(repo, "history.c", "void add_history(const char *line) { keep(line); }\n")
    write(repo, "docs/history.md", "Call add_history to keep a line.\n")
    text = search(repo, pattern="add_history")
    assert "history.c — 1 match" in text and "history.c [docs]" not in text
    assert "docs/history.md [docs] — 1 match" in text
    assert text.index("\nhistory.c") < text.index("docs/history.md")


# -- case and alternations -----------------------------------------------------------------------


def test_capitals_also_find_other_spellings_ranked_after_the_exact_ones(repo: Path) -> None:
    write(repo, "src/a_cluster.c", "clusterNode *n = lookupNode(id);\n")
    write(repo, "src/b_cluster.c", "freeClusterNode(n);\n")
    write(repo, "src/conf.py", "maxtasksperchild = 10\n")
    text = search(repo, pattern="ClusterNode")
    assert (
        "Case: 1 match has the pattern's exact case; 1 more match ignoring case "
        "(`clusterNode`), ranked after them." in text
    )
    assert text.index("freeClusterNode(n);") < text.index("clusterNode *n")
    assert (
        "src/b_cluster.c — 1 match\n" in text
        and "src/a_cluster.c — 1 match in another case" in text
    )
    write(
        repo, "src/b_cluster.c", "freeClusterNode(n);\nint CLUSTERNODE = 1;\nx = ClusterNode(1);\n"
    )
    text = search(repo, pattern="ClusterNode")
    assert "src/b_cluster.c — 2 matches + 1 in another case" in text
    text = search(repo, pattern="maxTasksPerChild")
    assert "maxtasksperchild = 10" in text and "Case: 0 matches have" in text
    # the model's own case flag stands
    assert search(repo, pattern="(?-i)maxTasksPerChild").startswith("No matches")


def test_a_common_alternative_cannot_hide_a_rare_one(repo: Path) -> None:
    for f in range(40):
        write(repo, f"core/m{f:02}.py", "".join(f"log_event({f}, {i})\n" for i in range(30)))
    write(repo, "zz/rare.py", "def audit_trail():\n    pass\n\naudit_trail()\n")
    tb = Toolbox(Snapshot(repo, SHA, RepoRef("r", str(repo))))
    # a raw cap smaller than the common term's matches: rg stops before it reaches the rare one
    outcome = tb.search_outcome("log_event|audit_trail", max_matches=300, stable=True)
    text = tb.render_search(outcome)
    assert "Matches per alternative: `log_event` " in text and "`audit_trail` 2." in text
    assert re.search(r"^D +1  def audit_trail\(\):$", text, re.M)
    assert re.search(r"^> +4  audit_trail\(\)$", text, re.M)


# -- globs and paths -----------------------------------------------------------------------------


@pytest.fixture
def tree(repo: Path) -> Path:
    for rel in ("src/a.c", "src/a.h", "src/a.py", "src/tests/t.c", "tests/t.c", "lib/b.c"):
        write(repo, rel, "marker_here\n")
    return repo


def files_in(text: str) -> set[str]:
    return {ln.split(" ")[0] for ln in text.splitlines() if " — " in ln and "match" in ln}


def test_brace_and_path_globs_match_as_ripgrep_does(tree: Path) -> None:
    assert files_in(search(tree, pattern="marker_here", glob="*.{c,h}")) == {
        "src/a.c", "src/a.h", "src/tests/t.c", "tests/t.c", "lib/b.c"}  # fmt: skip
    assert files_in(search(tree, pattern="marker_here", glob="src/*.c")) == {"src/a.c"}


def test_a_negative_glob_under_a_path_does_what_it_says(tree: Path) -> None:
    text = search(tree, pattern="marker_here", glob="!tests/**", path="src")
    assert files_in(text) == {"src/a.c", "src/a.h", "src/a.py"}


def test_a_path_that_is_a_file_reads_as_a_file(tree: Path) -> None:
    text = search(tree, pattern="marker_here", path="src/a.c")
    assert text.startswith("1 match in 1 file for `marker_here` in src/a.c;")
    assert "src/a.c/" not in text


def test_list_files_takes_brace_globs_too(tree: Path) -> None:
    tb = Toolbox(Snapshot(tree, SHA, RepoRef("r", str(tree))))
    listed = tb.run("list_files", {"glob": "*.{c,h}"}).text.splitlines()[1:]
    assert listed == ["lib/b.c", "src/a.c", "src/a.h", "src/tests/t.c", "tests/t.c"]


def test_every_language_fixture_is_searchable(repo: Path) -> None:
    shutil.copytree(FIXTURES, repo)
    text = search(repo, pattern="redis|Shutdown|findOrFail|parse_term|deliver|SendAsync")
    for name in ("values.yaml", "server.go", "UserController.php", "parser.rs", "notifier.rb"):
        assert name in text


def test_parallel_searches_sharing_a_big_file_read_it_alike(repo: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from codeask.search import syntax

    body = "".join(
        f"int handler_{i}(int r)\n{{\n\tint rc = step_{i % 7}(r);\n\treturn finish_{i % 5}(rc);\n}}\n\n"
        for i in range(1600)  # just over the size that is parsed in slices
    )
    write(repo, "src/big.c", body)
    patterns = [f"finish_{k}\\(" for k in range(3)] + [f"step_{k}\\(" for k in range(3)]
    snapshot = Snapshot(repo, SHA, RepoRef("r", str(repo)))

    def run(pattern: str) -> str:  # four parsers at once on a busy 2-core machine: room, no race
        return Toolbox(snapshot, search_timeout_s=300).run("search_code", {"pattern": pattern}).text

    syntax.clear_cache()
    with ThreadPoolExecutor(max_workers=4) as pool:
        together = list(pool.map(run, patterns))
    syntax.clear_cache()
    alone = [run(p) for p in patterns]
    assert not any(t.startswith("Error") for t in together + alone), together
    assert together == alone
    assert "  in int handler_1(int r)" in together[4]


# -- noise: change logs, generated symbol lists, notes ------------------------------------------


def test_change_logs_and_abi_lists_rank_below_code_and_take_little_room(repo: Path) -> None:
    # Given glibc's shape: a ChangeLog that names a function on dozens of lines, a generated
    # symbol list per architecture, and the one C file that calls it
    entries = "".join(
        f"2004-0{1 + i % 9}-1{i % 10}  Ulrich Drepper  <drepper@redhat.com>\n\n"
        f"\t* libio/genops.c (_IO_flush_all): Use _IO_flush_all_lockp{i}.\n\n"
        for i in range(30)
    )
    write(repo, "ChangeLog.old/ChangeLog.18", entries)
    for arch in ("aarch64", "x86_64", "riscv"):
        write(repo, f"sysdeps/unix/sysv/linux/{arch}/libc.abilist",
              "GLIBC_2.17 _IO_flush_all F\nGLIBC_2.17 _IO_flush_all_linebuffered F\n")  # fmt: skip
    write(repo, "libio/genops.c", (
        "int\n_IO_cleanup (void)\n{\n  int result = _IO_flush_all ();\n  _IO_unbuffer_all ();\n"
        "  return result;\n}\n"
    ))  # fmt: skip
    text = search(repo, pattern="_IO_flush_all")
    # Then the C caller comes first; the change log's entries, alike around the name, are one
    # line with the rows of the others; the same ABI line in three lists is shown once
    assert text.index("libio/genops.c —") < text.index("ChangeLog.old/ChangeLog.18 [docs]")
    assert text.index("libio/genops.c —") < text.index("libc.abilist [generated]")
    log = text.split("ChangeLog.old/ChangeLog.18 [docs]", 1)[1].split("\n\n", 1)[0]
    assert len([ln for ln in log.splitlines() if re.match(r"^> +\d+  ", ln)]) == 1
    assert (
        "  ↳ 29 more lines read the same around the match: 7, 11, 15, 19, 23, 27, 31, 35 "
        "and 21 more" in log
    )
    assert text.count("libc.abilist [generated] — 1 match") == 1
    assert (
        "Folded: `GLIBC_2.17 _IO_flush_all F` is shown once; the same line in 2 more files: "
        "sysdeps/unix/sysv/linux/riscv/libc.abilist:1, sysdeps/unix/sysv/linux/x86_64/libc.abilist:1."
        in text
    )
    assert "31 repeats of a shown line folded" in text.splitlines()[0]


# -- C macros --------------------------------------------------------------------------------------


def test_a_macro_is_shown_to_its_end_and_a_top_level_use_shows_what_it_expands_to(
    repo: Path,
) -> None:
    write(repo, "malloc/arena.c", (FIXTURES / "arena.c").read_text())
    text = search(repo, pattern="define TUNABLE_CALLBACK_FNDECL")
    assert re.search(r"^D +6  #define TUNABLE_CALLBACK_FNDECL\(__name, __type\) \\$", text, re.M)
    assert "  do_ ## __name (value);" in text and re.search(r"^ +13  }$", text, re.M)
    # a use at the top level: the macro it expands comes with it, from the same file
    text = search(repo, pattern="set_arena_max")
    assert re.search(r"^> +16  TUNABLE_CALLBACK_FNDECL \(set_arena_max, size_t\)$", text, re.M)
    assert "TUNABLE_CALLBACK (__name) (tunable_val_t *valp)" in text
    assert "  do_ ## __name (value);" in text


def test_the_place_that_sets_a_value_ranks_above_the_places_that_read_it(repo: Path) -> None:
    # Given 30 files that test a flag and one that sets it
    for i in range(30):
        write(repo, f"libio/read{i:02}.c", (
            f"int\nis_line_buffered_{i} (FILE *fp)\n{{\n  return (fp->_flags & _IO_LINE_BUF) != 0;\n}}\n"
        ))  # fmt: skip
    write(repo, "libio/zz_setbuf.c", (
        "void\nmake_line_buffered (FILE *fp)\n{\n  fp->_flags |= _IO_LINE_BUF;\n}\n"
    ))  # fmt: skip
    text = search(repo, pattern="_IO_LINE_BUF")
    # Then the setter comes first, marked as setting a value
    first = text.split("\n\n")[1]
    assert first.startswith("libio/zz_setbuf.c — 1 match")
    assert re.search(r"^= +4    fp->_flags \|= _IO_LINE_BUF;$", first, re.M)
    assert "= sets a value" in text


# -- what the hits leave out: outside the filter, near misses, uses of a definition ----------------


def test_a_filtered_search_counts_and_names_what_its_filter_left_out(repo: Path) -> None:
    # Given the function a "how does X reach Y" question needs, called from outside malloc/
    write(repo, "malloc/arena.c", (FIXTURES / "arena.c").read_text())
    write(repo, "malloc/malloc.c", "void *\nmalloc (size_t n)\n{\n  ptmalloc_init ();\n}\n")
    write(repo, "elf/libc_early_init.c", (
        "void\n__libc_early_init (_Bool initial)\n{\n"
        "  call_function_static_weak (ptmalloc_init);\n}\n"
    ))  # fmt: skip
    write(repo, "ChangeLog", "\t* malloc/arena.c (ptmalloc_init): Likewise.\n" * 3)
    text = search(repo, pattern="ptmalloc_init", path="malloc")
    # Then the header says how many more there are outside, code first, and as they are a few,
    # shows each of them
    outside = text.split("Outside malloc/: ", 1)[1].splitlines()
    assert outside[:5] == [
        "4 matches in 2 files: elf/libc_early_init.c (1), ChangeLog (3).",
        "  elf/libc_early_init.c:4  call_function_static_weak (ptmalloc_init);",
        "  ChangeLog:1  * malloc/arena.c (ptmalloc_init): Likewise.",
        "  ChangeLog:2  * malloc/arena.c (ptmalloc_init): Likewise.",
        "  ChangeLog:3  * malloc/arena.c (ptmalloc_init): Likewise.",
    ]
    text = search(repo, pattern="ptmalloc_init", glob="*.h")
    assert text.splitlines()[:2] == [
        "No matches for `ptmalloc_init` in *.h.",
        "Outside glob *.h: 6 matches in 4 files: elf/libc_early_init.c (1), malloc/arena.c (1), "
        "malloc/malloc.c (1) and 1 more files.",
    ]
    # an unfiltered search has nothing outside
    assert "Outside" not in search(repo, pattern="ptmalloc_init")
    # many matches in a few files: one line from each, code first
    write(repo, "ChangeLog", "\t* malloc/arena.c (ptmalloc_init): Likewise.\n" * 12)
    text = search(repo, pattern="ptmalloc_init", path="malloc")
    assert text.split("Outside malloc/: ", 1)[1].splitlines()[:3] == [
        "13 matches in 2 files: elf/libc_early_init.c (1), ChangeLog (12).",
        "  elf/libc_early_init.c:4  call_function_static_weak (ptmalloc_init);",
        "  ChangeLog:1  * malloc/arena.c (ptmalloc_init): Likewise.",
    ]
    # in more files than a few, only the counts
    for d in ("io", "nptl"):
        write(repo, f"{d}/x.c", "void f (void) { ptmalloc_init (); }\n")
    text = search(repo, pattern="ptmalloc_init", path="malloc")
    assert not re.search(r"^  \S+:\d+  ", text.split("Outside malloc/: ", 1)[1], re.M)


def test_no_matches_says_how_often_each_word_of_the_pattern_occurs_alone(repo: Path) -> None:
    # Given a chart that uses `template "redis.image"`, and the model searching for include
    write(repo, "redis/templates/_helpers.tpl", (
        '{{- define "redis.image" -}}\n{{ include "common.images.image" . }}\n{{- end -}}\n'
    ))  # fmt: skip
    write(repo, "redis/templates/master/statefulset.yaml", (
        "spec:\n  containers:\n    - name: redis\n      image: {{ template \"redis.image\" . }}\n"
    ))  # fmt: skip
    write(repo, "argo/templates/_helpers.tpl", '{{- define "argocd.redis.image" -}}\n{{- end -}}\n')
    text = search(repo, pattern='include "redis.image"')
    assert text.splitlines() == [
        'No matches for `include "redis.image"`.',
        "Each word of the pattern searched alone (ignoring case):",
        "- `include`: 1 match in 1 file: redis/templates/_helpers.tpl (1); e.g. "
        'redis/templates/_helpers.tpl: `{{ include "common.images.image" . }}`',
        "- `redis.image`: 3 matches in 3 files: redis/templates/_helpers.tpl (1), "
        "redis/templates/master/statefulset.yaml (1), argo/templates/_helpers.tpl (1); e.g. "
        'redis/templates/_helpers.tpl: `{{- define "redis.image" -}}`',
    ]
    # a single plain word has no parts to try
    assert search(repo, pattern="zzz_nowhere") == "No matches for `zzz_nowhere`."


def test_a_definition_says_where_it_is_called_from(repo: Path) -> None:
    # Given a function, its callers in other files, a comment and a prototype naming it
    write(repo, "malloc/arena.c", (FIXTURES / "arena.c").read_text())
    write(repo, "malloc/malloc.c", (
        "void *\n__libc_malloc (size_t bytes)\n{\n  if (!__malloc_initialized)\n"
        "    ptmalloc_init ();\n  return _int_malloc (bytes);\n}\n"
    ))  # fmt: skip
    write(repo, "malloc/hooks.c", "/* ptmalloc_init runs first.  */\n")
    write(repo, "include/malloc.h", "extern void ptmalloc_init (void);\n")
    text = search(repo, pattern=r"^ptmalloc_init \(")
    # Then the definition, whole, is followed by a line naming its caller and that caller's function
    block = text.split("malloc/arena.c — 1 match", 1)[1]
    assert "TUNABLE_GET (arena_test, size_t, TUNABLE_CALLBACK (set_arena_test));" in block
    assert "  ↳ called from malloc/malloc.c:5 in void * __libc_malloc()" in block
    # a search for the name itself shows its callers already: no line under the definition,
    # but the function the call is in says where it is used in turn (the next hop up)
    text = search(repo, pattern="ptmalloc_init")
    arena = text.split("malloc/arena.c — 1 match", 1)[1].split("\n\n", 1)[0]
    assert "↳" not in arena
    assert (
        "> 5      ptmalloc_init ();\n  6    return _int_malloc (bytes);\n  7  }\n"
        "  ↳ no other line names `__libc_malloc` (which this is in): used through a pointer, "
        "a macro or a table?" in text
    )
    # a name only mentioned (a comment, a prototype) is said to be only mentioned
    write(repo, "malloc/malloc.c", "int x;\n")
    text = search(repo, pattern=r"^ptmalloc_init \(")
    assert (
        "↳ no code calls or references `ptmalloc_init`; it is only mentioned (comments, docs, "
        "declarations): include/malloc.h:1, malloc/hooks.c:1" in text
    )
    # and no line at all is said too
    (repo / "malloc/hooks.c").unlink()
    (repo / "include/malloc.h").unlink()
    text = search(repo, pattern=r"^ptmalloc_init \(")
    assert "↳ no other line names `ptmalloc_init`" in text


PYLINT_MESSAGES = """\
def _write_message_page(messages_dict: MessagesDict) -> None:
    \"\"\"Create or overwrite the file for each message.\"\"\"
    for category, messages in messages_dict.items():
        category_dir = _get_category_directory(category)
        if not category_dir.exists():
            category_dir.mkdir(parents=True, exist_ok=True)


def build_messages_pages(app: Sphinx | None) -> None:
    \"\"\"Overwrite messages files by printing the documentation to a stream.\"\"\"
    linter = PyLinter()
    messages, old_messages = _get_all_messages(linter)

    # Write message and category pages
    _write_message_page(messages)
    _write_messages_list_page(messages, old_messages, deleted_messages)
"""


def test_a_caller_in_a_docs_directory_is_a_caller(repo: Path) -> None:
    # Given pylint's shape: the docs are built by code under doc/exts/, where the only caller is
    write(repo, "doc/exts/pylint_messages.py", PYLINT_MESSAGES)
    write(repo, "doc/whatsnew/fragments/1.other", "Fix ``_write_message_page`` paths.\n")
    text = search(repo, pattern="def _write_message_page")
    # Then the call is named, never "no other line names it"
    assert (
        "  ↳ called from doc/exts/pylint_messages.py:15 in def build_messages_pages() "
        "(2 lines name it in 2 files in all)" in text
    )
    assert "no other line" not in text and "only mentioned" not in text


def test_a_lookup_that_read_less_than_everything_never_says_no_other_line(repo: Path) -> None:
    # Given a function whose only call sits past column 300 of a long line (rg cuts such a line)
    write(repo, "src/flush.c", "int\nflush_all (void)\n{\n  return 0;\n}\n")
    write(repo, "src/table.c", "int (*t[])(void) = {" + "noop, " * 60 + "flush_all};\n")
    text = search(repo, pattern=r"^flush_all \(")
    # Then the result says nothing about its uses rather than something false
    assert "flush_all (void)" in text and "↳" not in text
    # and the same for a use in a file over the search's size limit
    write(repo, "src/table.c", "int x;\n")
    write(repo, "src/big.c", "/* big */\n" + "int pad;\n" * 200 + "int y = flush_all ();\n")
    tb = Toolbox(Snapshot(repo, SHA, RepoRef("r", str(repo))), large_file_bytes=1000)
    text = tb.run("search_code", {"pattern": r"^flush_all \("}).text
    assert "flush_all (void)" in text and "↳" not in text


def test_a_common_name_filling_the_lookup_does_not_hide_a_rare_ones_caller(repo: Path) -> None:
    # Given two definitions found together: one named on 500 lines, one called once
    write(
        repo,
        "src/defs.py",
        "def log_event(x):\n    return x\n\n\ndef rare_hook(y):\n    return y\n",
    )
    for i in range(10):
        write(repo, f"src/use{i}.py", "".join(f"log_event({j})\n" for j in range(50)))
    write(repo, "zz/late.py", "def go():\n    rare_hook(1)\n")
    text = search(repo, pattern=r"def (log_event|rare_hook)")
    # Then the rare one's caller is named, and the common one says its count is a floor
    assert "↳ called from zz/late.py:2 in def go()" in text
    assert re.search(
        r"↳ called from src/use\d\.py:1, .* \(\d+\+ lines name it in \d+\+ files", text
    )


def test_called_from_prefers_the_definitions_own_package_and_skips_other_classes_self_calls(
    repo: Path,
) -> None:
    # Given a common method name defined by a class, a legacy twin package's copy of that class,
    # and callers in both packages (the twin's sort first by name)
    cls = (
        "class {c}:\n"
        "    def connect_to_new_endpoint(self, force=False):\n"
        "        self.url = 'x'\n"
        "        return self.url\n\n"
        "    def start(self):\n"
        "        if self.url is None:\n"
        "            self.connect_to_new_endpoint()\n"
    )
    write(repo, "slack_sdk/rtm_v2/client.py", cls.format(c="RTMClient"))
    write(repo, "slack/rtm/client.py", cls.format(c="LegacyRTMClient"))
    write(repo, "slack/rtm/helper.py", "def reconnect(c):\n    c.connect_to_new_endpoint(True)\n")
    write(repo, "slack_sdk/rtm_v2/retry.py", "def again(c):\n    c.connect_to_new_endpoint()\n")
    write(repo, "slack_sdk/socket/x.py", "def go(c):\n    return c.connect_to_new_endpoint()\n")
    text = search(repo, pattern="def connect_to_new_endpoint", path="slack_sdk")
    said = next(ln for ln in text.splitlines() if "↳ called from" in ln)
    # Then the callers named are the class's own and its package's, nearest first
    assert said.startswith(
        "  ↳ called from slack_sdk/rtm_v2/client.py:8 in def start() under `if self.url is None:`, "
        "slack_sdk/rtm_v2/retry.py:2 in def again(), slack_sdk/socket/x.py:2 in def go()"
    )
    # and the twin's own `self.connect_to_new_endpoint()` is never named as a caller of this one
    write(repo, "slack_sdk/rtm_v2/retry.py", "x = 1\n")
    write(repo, "slack_sdk/socket/x.py", "x = 1\n")
    text = search(repo, pattern="def connect_to_new_endpoint", path="slack_sdk")
    said = next(ln for ln in text.splitlines() if "↳ called from" in ln)
    assert "slack/rtm/client.py" not in said and "slack/rtm/helper.py:2" in said


# -- few hits, previews ----------------------------------------------------------------------------


def test_a_lone_hit_shows_the_whole_function_it_is_in(repo: Path) -> None:
    # Given glibc's shape: the words searched for sit on a cleanup line of a 36-line function,
    # and the loop that matters is far from it
    body = "".join(f"      step_{i} (fp);\n" for i in range(24))
    write(repo, "libio/genops.c", (
        "int\n_IO_flush_all (void)\n{\n  int result = 0;\n  FILE *fp;\n"
        "  for (fp = (FILE *) _IO_list_all; fp != NULL; fp = fp->_chain)\n    {\n"
        f"{body}    }}\n  _IO_cleanup_region_end (0);\n  return result;\n}}\n"
    ))  # fmt: skip
    text = search(repo, pattern="_IO_cleanup_region_end")
    assert "for (fp = (FILE *) _IO_list_all; fp != NULL; fp = fp->_chain)" in text
    assert "step_0 (fp);" in text and "step_23 (fp);" in text and "return result;" in text


def test_previews_name_their_scope(repo: Path) -> None:
    # Given more call sites than the budget shows in full
    for f in range(40):
        write(repo, f"pylint/checkers/c{f:02}.py", "".join(
            f"class Checker{f}:\n    def visit_{i}(self, node):\n"
            f"        if not in_type_checking_block(node):\n            self.add_message('x{i}' * 40, node=node)\n\n"
            for i in range(4)
        ))  # fmt: skip
    text = search(repo, pattern="in_type_checking_block")
    previews = text.split("more in this file, one line each:\n", 1)[1].split("\n\n", 1)[0]
    rows = [ln for ln in previews.splitlines() if re.match(r"^> +\d+  ", ln)]
    assert rows and all(re.search(r"  — in def visit_\d\(\)$", ln) for ln in rows)


# -- round 2: what still cost the model players a call ----------------------------------------------

GETDELIM = (
    "#include <stdio.h>\n\n"
    "ssize_t\n__getdelim (char **lineptr, size_t *n, int delimiter, FILE *fp)\n{\n"
    "  ssize_t result;\n"
    + "".join(f"  result = step{i} (fp, lineptr, n, delimiter);\n" for i in range(50))
    + "  return result;\n}\nlibc_hidden_def (__getdelim)\nweak_alias (__getdelim, getdelim)\n"
)


def test_a_c_definition_and_its_alias_lines_point_to_each_other(repo: Path) -> None:
    # Given glibc's getdelim: defined as __getdelim, its public name only in weak_alias
    write(repo, "libio/iogetdelim.c", GETDELIM)
    # When the public name is searched, the alias line shows the definition it names
    text = search(repo, pattern=r"\bgetdelim\b")
    assert "   4  __getdelim (char **lineptr, size_t *n, int delimiter, FILE *fp)" in text
    assert "  57    return result;" in text
    assert "> 60  weak_alias (__getdelim, getdelim)" in text
    # When the definition is searched, its alias lines come with it
    text = search(repo, pattern=r"^__getdelim")
    assert "  60  weak_alias (__getdelim, getdelim)" in text
    # and when the body is too long to show whole (in a file too long to show whole), its hit
    # names the alias the cut hides
    longer = GETDELIM.replace("step", "a_much_longer_step_name" * 3)
    write(repo, "libio/iogetdelim.c", longer + "\nint pad_line;\n" * 100)
    text = search(repo, pattern=r"^__getdelim")
    assert "goes on to line" in text
    assert "  ↳ also named `getdelim`: line 60, weak_alias (__getdelim, getdelim)" in text


def test_a_define_naming_another_define_shows_that_one_too(repo: Path) -> None:
    # Given malloc.c's threshold, defined as another macro 100 lines above
    write(repo, "malloc/malloc.c", (
        "#ifndef DEFAULT_MMAP_THRESHOLD_MIN\n#define DEFAULT_MMAP_THRESHOLD_MIN (128 * 1024)\n#endif\n"
        + "/* filler */\n" * 100
        + "#ifndef DEFAULT_MMAP_THRESHOLD\n#define DEFAULT_MMAP_THRESHOLD DEFAULT_MMAP_THRESHOLD_MIN\n"
        "#endif\n"
    ))  # fmt: skip
    text = search(repo, pattern=r"define DEFAULT_MMAP_THRESHOLD\b")
    # Then the value is in the result, not only its name
    assert "    2  #define DEFAULT_MMAP_THRESHOLD_MIN (128 * 1024)" in text


def test_a_definition_of_up_to_40_lines_is_whole_and_a_longer_one_is_cut_well_short(
    repo: Path,
) -> None:
    # Given a 36-line function whose last lines hold the answer, and a 57-line one
    body = "".join(f"  size_t step{i} = total_elems * {i};\n" for i in range(32))
    write(repo, "stdlib/qsort.c", (
        "void\n__qsort_r (void *const pbase, size_t total_elems)\n{\n" + body
        + "  size_t total_size = total_elems * size;\n}\n"
    ))  # fmt: skip
    text = search(repo, pattern=r"^__qsort_r")
    assert "  size_t total_size = total_elems * size;" in text
    assert "goes on to line" not in text
    longer = GETDELIM.replace("step", "a_much_longer_step_name" * 3)
    write(repo, "libio/iogetdelim.c", longer + "\nint pad_line;\n" * 100)  # a long file
    text = search(repo, pattern=r"^__getdelim")
    cut = re.search(r"the definition goes on to line (\d+)", text)
    assert cut is not None and int(cut.group(1)) == 58
    last_shown = max(int(m) for m in re.findall(r"^[D ] +(\d+)  ", text, re.M))
    assert 58 - last_shown >= 10  # a cut hides enough to be worth a read, never a few lines


def test_context_goes_on_past_a_line_that_opens_a_block(repo: Path) -> None:
    # Given pylint's option tuple, a volume's configMap, and a commented example above a key
    write(repo, "pylint/checkers/design_analysis.py", (
        "class MisdesignChecker(BaseChecker):\n    options = (\n        (\n"
        '            "max-args",\n            {\n                "default": 5,\n'
        '                "type": "int",\n            },\n        ),\n    )\n'
    ))  # fmt: skip
    write(repo, "redis/templates/master/application.yaml", (
        "spec:\n  volumes:\n    - name: start-scripts\n      configMap:\n"
        '        name: {{ printf "%s-scripts" .Release.Name }}\n        defaultMode: 0755\n'
    ))  # fmt: skip
    write(repo, "redis/values.yaml", (
        "master:\n  resourcesPreset: nano\n"
        "  ## @param master.resources Set container requests and limits\n  ## Example:\n"
        "  ## resources:\n  ##   requests:\n  ##     cpu: 2\n  ##\n  resources: {}\n"
        "  podSecurityContext:\n    enabled: true\n"
    ))  # fmt: skip
    text = search(repo, pattern='"max-args"')
    assert '   6                  "default": 5,' in text
    text = search(repo, pattern="configMap:")
    assert '  5          name: {{ printf "%s-scripts" .Release.Name }}' in text
    text = search(repo, pattern="## Example:")
    assert "  9    resources: {}" in text
    # and the comment's key path is the key it describes, not the one above it
    assert "  in master › resources" in text


def test_a_hit_inside_a_definition_says_where_that_is_used_and_a_call_its_guard(
    repo: Path,
) -> None:
    # Given a message inside a checker's options, the checker registered elsewhere
    write(repo, "pylint/checkers/design_analysis.py", (
        "class MisdesignChecker(BaseChecker):\n    msgs = {\n"
        '        "R0913": ("Too many arguments (%s/%s)", "too-many-arguments", "Used when"),\n'
        "    }\n\n\ndef register(linter):\n    linter.register_checker(MisdesignChecker(linter))\n"
    ))  # fmt: skip
    write(repo, "pylint/lint/run.py", (
        "def _do_run(linter, args):\n    jobs = args.jobs\n    if linter.config.jobs > 1:\n"
        "        linter.set_reporter(None)\n        check_parallel(linter, jobs, args)\n"
        "    return linter\n"
    ))  # fmt: skip
    text = search(repo, pattern="too-many-arguments")
    assert "`MisdesignChecker`, which this is in, is called from " in text
    assert "pylint/checkers/design_analysis.py:8 in def register()" in text
    text = search(repo, pattern=r"check_parallel\(")
    assert "  3      if linter.config.jobs > 1:" in text


def test_shell_case_arms_are_scopes(repo: Path) -> None:
    # Given ldd's option parsing (a .in template of a bash script)
    write(repo, "elf/ldd.bash.in", (
        "#! @BASH@\nwhile test $# -gt 0; do\n  case \"$1\" in\n"
        "  --vers | --versi | --versio | --version)\n    echo 'ldd @VERSION@'\n    exit 0\n    ;;\n"
        "  --h | --he | --hel | --help)\n    echo \"$usage\"\n    exit 0\n    ;;\n  esac\ndone\n"
    ))  # fmt: skip
    text = search(repo, pattern="echo 'ldd")
    assert 'in case "$1" in --vers | --versi | --versio | --version)' in text


def test_a_call_site_shows_a_few_lines_and_a_body_shown_before_is_not_shown_again(
    repo: Path,
) -> None:
    # Given one call inside an 80-line function
    lines = [f"        step_{i} = prepare({i})\n" for i in range(80)]
    write(
        repo,
        "pylint/lint/pylinter.py",
        (
            "class PyLinter:\n    def check(self, files):\n"
            + "".join(lines[:40])
            + "        self._lint_files(files)\n"
            + "".join(lines[40:])
            + "        return None\n"
            + "".join(f"\n    def other_{i}(self):\n        return {i}\n" for i in range(30))
        ),
    )  # fmt: skip  (the rest of the class: a file too long to show whole)
    tb = Toolbox(Snapshot(repo, SHA, RepoRef("r", str(repo))))
    text = tb.run("search_code", {"pattern": r"_lint_files\("}).text
    # Then the call shows its function's name and at most five lines either side
    assert "in class PyLinter › def check(self, files)" in text
    shown = [int(n) for n in re.findall(r"^[> ] +(\d+)  ", text, re.M)]
    assert 43 in shown and min(shown) >= 38 and max(shown) <= 48
    # Given the method's head shown by one search, a second one does not print it again
    text = tb.run("search_code", {"pattern": r"def check\("}).text
    assert "step_20 = prepare(20)" in text and "shown in an earlier result" not in text
    again = tb.run("search_code", {"pattern": r"def check\("}).text
    assert "step_20" not in again
    assert re.search(r"\[… lines 3–\d+, shown in an earlier result\]", again)


RABBITMQ_VALUES = (
    "## @section RabbitMQ memory\n##\nmemoryHighWatermark:\n"
    "  ## @param memoryHighWatermark.enabled Enable configuring Memory high watermark on RabbitMQ\n"
    "  ##\n  enabled: false\n"
    "  ## @param memoryHighWatermark.type Memory high watermark type. Either `absolute` or `relative`\n"
    '  ##\n  type: "relative"\n  ## Memory high watermark value.\n'
    "  ## @param memoryHighWatermark.value Memory high watermark value\n"
    "  ## The default value of 0.4 stands for 40% of available RAM\n"
    "  ## You can also use an absolute value, e.g.: 256Mi\n"
    f"  ## Note: the memory relative limit is applied to the resources {'limit ' * 30}\n"
    f"  ## Note: and the absolute one to the pod {'memory ' * 30}\n  ##\n  value: 0.4\n"
    'plugins: "rabbitmq_management"\n'
)


def test_a_hit_already_shown_as_context_is_marked_there_not_printed_again(repo: Path) -> None:
    # Given rabbitmq's memoryHighWatermark block, a template, and a README table of its keys
    write(repo, "bitnami/rabbitmq/values.yaml", RABBITMQ_VALUES)
    write(repo, "bitnami/rabbitmq/templates/_helpers.tpl", (
        '{{- define "rabbitmq.validateValues.memoryHighWatermark" -}}\n'
        + "".join(f"    --set resources.limits.memory={i} {'x' * 200}\n" for i in range(30))
        + "{{- end -}}\n"
    ))  # fmt: skip
    write(
        repo,
        "bitnami/rabbitmq/README.md",
        "".join(
            f"| `memoryHighWatermark.p{i}` | Memory high watermark {i} | `false` |\n"
            for i in range(25)
        ),
    )
    text = search(repo, pattern="memoryHighWatermark")
    # Then no line is printed twice in a file: a hit that is context of another is marked there
    for block in text.split("\n\n")[1:]:
        rows = re.findall(r"^[D=>IS# ] +(\d+)  ", block, re.M)
        assert len(rows) == len(set(rows)), block
    # the 15-line values block is whole, down to the value its comments describe
    values = text.split("bitnami/rabbitmq/values.yaml [config]", 1)[1].split("\n\n", 1)[0]
    assert "D  3  memoryHighWatermark:" in values and "  17    value: 0.4" in values
    assert "goes on to line" not in values
    readme = text.split("bitnami/rabbitmq/README.md [docs]", 1)[1]
    assert re.search(r"^>  3  \| `memoryHighWatermark.p2`", readme, re.M)
    assert "  more in this file, one line each:\n>  5  " in readme


def test_uses_of_a_c_function_of_the_same_name_in_another_file_are_not_its_callers(
    repo: Path,
) -> None:
    # Given glibc's tests: each file has its own static do_test, the driver calls the one included
    example = "static int\ndo_test (void)\n{\n  return 0;\n}\n\n#include <support/test-driver.c>\n"
    write(repo, "support/README-testing.c", example)
    for name in ("bench-memcpy", "bench-strlen"):
        write(repo, f"benchtests/{name}.c", (
            "static void\ndo_test (json_ctx_t *json_ctx, size_t align1,\n"
            "         size_t len)\n{\n}\n\nint\ntest_main (void)\n{\n"
            "  for (i = 0; i < 18; ++i)\n    do_test (&json_ctx, 0, 1 << i);\n  return 0;\n}\n"
        ))  # fmt: skip
    # the prototype of a global function is not a function of its own: its calls still count
    write(repo, "stdlib/caller.c", "extern int\ndo_test (void);\nint\nmain (void)\n{\n"
          "  return do_test ();\n}\n")  # fmt: skip
    text = search(repo, pattern="do_test", path="support/README-testing.c")
    said = next(ln for ln in text.splitlines() if ln.startswith("  ↳"))
    assert said.startswith("  ↳ called from stdlib/caller.c:6 in int main() (")
    assert "benchtests/" not in said
    # with no caller but those, nothing is said: neither their lines nor "no other line"
    (repo / "stdlib" / "caller.c").unlink()
    text = search(repo, pattern="do_test", path="support/README-testing.c")
    assert "↳" not in text
