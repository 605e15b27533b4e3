"""search_code's result as the model reads it: budget, bodies, context, ordering, case, alternations, globs."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from codeask.search import BUDGET
from codeask.snapshot import RepoRef, Snapshot
from codeask.tools import Toolbox

FIXTURES = Path(__file__).parent / "fixtures" / "search"
SHA = "b" * 40


def write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


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


def test_licence_headers_rank_last(repo: Path) -> None:
    write(repo, "a_licensed.py", "# Copyright (c) 2026 uses sqlite under its licence\nx = 1\n")
    write(repo, "z_code.py", "import sqlite3\nconn = sqlite3.connect(path)\n")
    text = search(repo, pattern="sqlite")
    assert text.index("z_code.py") < text.index("a_licensed.py")


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
    syntax.clear_cache()
    with ThreadPoolExecutor(max_workers=4) as pool:
        together = list(pool.map(lambda p: search(repo, pattern=p), patterns))
    syntax.clear_cache()
    alone = [search(repo, pattern=p) for p in patterns]
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
    # Then the C caller comes first, and the change log shows three entries in full (two with a
    # line or two around them), the rest as previews or counts
    assert text.index("libio/genops.c —") < text.index("ChangeLog.old/ChangeLog.18 [docs]")
    assert text.index("libio/genops.c —") < text.index("libc.abilist [generated]")
    log = text.split("ChangeLog.old/ChangeLog.18 [docs]", 1)[1].split("\n\n", 1)[0]
    full, previews = log.split("  more in this file, one line each:")
    assert len([ln for ln in full.splitlines() if re.match(r"^> +\d+  ", ln)]) == 3
    assert len(previews.strip().splitlines()) > 10
    assert len(re.findall(r"^   +\d+  ", full, re.M)) <= 4  # context rows


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
    # Then the header says how many more there are outside, code first
    assert (
        "Outside malloc/: 4 matches in 2 files: elf/libc_early_init.c (1), ChangeLog (3)." in text
    )
    text = search(repo, pattern="ptmalloc_init", glob="*.h")
    assert text.splitlines()[:2] == [
        "No matches for `ptmalloc_init` in *.h.",
        "Outside glob *.h: 6 matches in 4 files: elf/libc_early_init.c (1), malloc/arena.c (1), "
        "malloc/malloc.c (1) and 1 more files.",
    ]
    # an unfiltered search has nothing outside
    assert "Outside" not in search(repo, pattern="ptmalloc_init")


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
    # a search for the name itself shows its callers already: no extra line
    assert "↳" not in search(repo, pattern="ptmalloc_init")
    # no use at all is said too
    write(repo, "malloc/malloc.c", "int x;\n")
    text = search(repo, pattern=r"^ptmalloc_init \(")
    assert "↳ no other line names `ptmalloc_init`" in text


# -- few hits, previews ----------------------------------------------------------------------------


def test_a_lone_hit_shows_the_whole_function_it_is_in(repo: Path) -> None:
    # Given glibc's shape: the words searched for sit on a cleanup line of a 40-line function,
    # and the loop that matters is far from it
    body = "".join(f"      step_{i} (fp);\n" for i in range(30))
    write(repo, "libio/genops.c", (
        "int\n_IO_flush_all (void)\n{\n  int result = 0;\n  FILE *fp;\n"
        "  for (fp = (FILE *) _IO_list_all; fp != NULL; fp = fp->_chain)\n    {\n"
        f"{body}    }}\n  _IO_cleanup_region_end (0);\n  return result;\n}}\n"
    ))  # fmt: skip
    text = search(repo, pattern="_IO_cleanup_region_end")
    assert "for (fp = (FILE *) _IO_list_all; fp != NULL; fp = fp->_chain)" in text
    assert "step_0 (fp);" in text and "step_29 (fp);" in text and "return result;" in text


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
