"""The line inside a long place that answers a question (codeask.search.lines), and search-only citing it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from codeask import search_only
from codeask.search import lines
from codeask.search.lines import (
    Question,
    better_key,
    pick_line,
    question_for,
    score_lines,
    words_of,
    yaml_parents,
)
from codeask.search.vocabulary import stem
from codeask.snapshot import RepoRef, Snapshot
from codeask.tools import Toolbox


def worth(*words: str, phrases: tuple[re.Pattern[str], ...] = ()) -> Question:
    """Each word its own concept, all worth the same."""
    stems = [stem(w) for w in words]
    return Question(dict.fromkeys(stems, 1.0), {s: s for s in stems}, phrases)


# A GNU-style C function: the return type above the name, a long body, one check deep inside.
FREE_C = (
    """\
static void
_int_free_chunk (mstate av, mchunkptr p, INTERNAL_SIZE_T size, int have_lock)
{
  mchunkptr fwd;
  mchunkptr bck;
"""
    + "".join(
        f"  size_t s{i} = chunksize (p) + {i};  /* chunk size step {i} */\n" for i in range(40)
    )
    + """\
  /* This test succeeds on double free.  However, we don't 100% trust it.  */
  if (__glibc_unlikely (e->key == tcache_key))
    tcache_double_free_verify (e);
"""
    + "".join(f"  fwd = bck->fd + {i};\n" for i in range(30))
    + "}\n"
)


def test_the_check_deep_in_a_long_function_is_picked() -> None:
    lines = FREE_C.split("\n")
    want = worth("tcache", "double", "free", "detect", "chunk")
    pick = pick_line(lines, 2, len(lines), want, language="c")
    assert pick is not None
    # the comment names it; the code below it is what is cited
    assert lines[pick.line - 1].strip() == "tcache_double_free_verify (e);"


def test_a_word_on_every_line_does_not_decide_the_line() -> None:
    # "chunk" and "size" are on 40 lines together; "double" and "free" on one comment line only
    lines = FREE_C.split("\n")
    pick = pick_line(lines, 2, len(lines), worth("chunk", "size", "double", "free"), language="c")
    assert pick is not None and "tcache_key" in lines[pick.line - 1]


def test_one_word_alone_picks_nothing() -> None:
    lines = FREE_C.split("\n")
    assert pick_line(lines, 2, len(lines), worth("tcache"), language="c") is None


def test_a_quoted_phrase_decides_the_line() -> None:
    # Given a long template with the question's plain words spread on other lines
    body = ['{{- define "common.errors.upgrade.passwords.empty" -}}']
    body += [f'  {{{{- $passwords := printf "%s upgrade release" .{i} }}}}' for i in range(20)]
    body += [
        '  {{- $errorString := "\\nPASSWORDS ERROR: You must provide your current passwords when upgrading the release." -}}'
    ]
    body += [f"  {{{{- $upgrade := .release{i} }}}}" for i in range(10)]
    phrase = re.compile(r"PASSWORDS\s+ERROR", re.IGNORECASE)
    want = worth("upgrade", "release", "password")
    # Then the line with the message is picked, though others hold more of the words
    quoted = worth("upgrade", "release", "password", phrases=(phrase,))
    pick = pick_line(body, 1, len(body), quoted, language="gotmpl")
    assert pick is not None and pick.line == 22
    # and without the phrase the message line is not the one picked
    other = pick_line(body, 1, len(body), want, language="gotmpl")
    assert other is not None and other.line != 22


VALUES = (
    """\
## @param heapOpts Kafka Java Heap size for controller-eligible nodes
heapOpts: -Xmx1024m -Xms1024m
controller:
  ## @param controller.replicaCount Number of Kafka controller-eligible nodes
  replicaCount: 3
"""
    + "".join(f"  ## @param controller.opt{i} Option {i}\n  opt{i}: {i}\n" for i in range(12))
    + """\
  heapOpts: ""
broker:
  ## @param broker.replicaCount Number of Kafka broker-only nodes
  replicaCount: 0
"""
    + "".join(f"  ## @param broker.opt{i} Option {i}\n  opt{i}: {i}\n" for i in range(12))
    + """\
  heapOpts: -XX:MaxRAMPercentage=75
"""
)


def test_yaml_parents_follow_indentation() -> None:
    lines = VALUES.split("\n")
    parents = yaml_parents(lines, 1, len(lines))
    assert parents[2] == ()
    assert parents[5] == ("controller",)
    last_heap = max(n for n, text in enumerate(lines, 1) if text.strip().startswith("heapOpts"))
    assert parents[last_heap] == ("broker",)


def test_a_yaml_key_is_found_under_the_parent_the_question_names() -> None:
    # Given heapOpts at the top level, under controller and under broker (no comment on the last two)
    lines = VALUES.split("\n")
    want = worth("broker", "heap", "opts", "jvm")
    # When the question asks for the broker's heap options
    pick = pick_line(lines, 1, len(lines), want, language="yaml")
    # Then the key under broker: is cited, through its parent's name
    assert pick is not None
    assert lines[pick.line - 1] == "  heapOpts: -XX:MaxRAMPercentage=75"
    # and without the parents' words the top-level key, whose comment says heap, wins
    flat = pick_line(lines, 1, len(lines), want, language=None)
    assert flat is not None and flat.line != pick.line


def test_a_comment_gives_way_to_the_key_it_describes() -> None:
    lines = VALUES.split("\n")
    pick = pick_line(lines, 1, len(lines), worth("number", "controller", "node"), language="yaml")
    assert pick is not None and lines[pick.line - 1] == "  replicaCount: 3"


def test_hash_lines_are_code_in_c() -> None:
    # `#define` is not a comment in C: it is cited itself, not the line below it
    lines = ["/* cache of chunks */", "struct x {"] + ["  int a;"] * 20
    lines += ["# define TCACHE_FILL_COUNT 16", "  int b;", "};"]
    pick = pick_line(lines, 1, len(lines), worth("tcache", "fill", "count"), language="c")
    assert pick is not None and lines[pick.line - 1].startswith("# define TCACHE_FILL_COUNT")


def test_words_of_split_and_stem_identifiers() -> None:
    got = words_of("  .tcache_count = TCACHE_FILL_COUNT,")
    assert {stem("tcache"), "count", "fill"} <= got
    assert stem("opts") in words_of("heapOpts: 1")


def test_words_of_a_name_said_again_are_the_same_when_remembered_or_forgotten(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    line = "if (tcache_count > TCACHE_FILL_COUNT) heapOpts = x;"
    monkeypatch.setattr(lines, "_ident_words", {})  # nothing remembered yet
    first = words_of(line)
    assert first == {"if", stem("tcache"), "count", "fill", "heap", stem("opts")}  # not `x`
    assert len(lines._ident_words) == 5 and words_of(line) == first  # now from memory
    monkeypatch.setattr(lines, "_IDENTS_KEPT", 2)  # the memory fills and is emptied on the way
    monkeypatch.setattr(lines, "_ident_words", {})
    for _ in range(3):
        assert words_of(line) == first
    assert len(lines._ident_words) <= 2


def test_search_only_cites_the_line_deep_inside_a_long_function(tmp_path: Path) -> None:
    # Given a long C function whose double-free check is 45 lines below its name
    (tmp_path / "malloc").mkdir()
    (tmp_path / "malloc" / "malloc.c").write_text(FREE_C)
    snap = Snapshot(tmp_path, "9" * 40, RepoRef("lines", str(tmp_path)))
    # When a search-only answer is asked where the double free is detected
    result = search_only.answer(
        "Where does free detect a double free in the tcache?", Toolbox(snap)
    )
    # Then it cites the function from its name down to the check
    top = result.evidence[0]
    check = FREE_C.split("\n").index("    tcache_double_free_verify (e);") + 1
    assert (top.path, top.line, top.end_line) == ("malloc/malloc.c", 2, check)
    assert f"`malloc/malloc.c:2-{check}`" in result.text


def test_a_values_file_key_under_another_parent_replaces_the_cited_twin() -> None:
    # Given replicaCount cited under broker: while the question asks about the controller's
    lines = VALUES.split("\n")
    broker = lines.index("  replicaCount: 0") + 1
    want = worth("many", "count", "number", "controller", "node", "start", "default")
    # Then the controller's replicaCount is the better key
    better = better_key(lines, broker, want)
    assert better is not None and lines[better - 1] == "  replicaCount: 3"
    # and once cited, nothing replaces it
    assert better_key(lines, better, want) is None


def test_a_cited_key_is_kept_when_no_line_says_clearly_more() -> None:
    lines = VALUES.split("\n")
    top = lines.index("heapOpts: -Xmx1024m -Xms1024m") + 1
    assert better_key(lines, top, worth("heap", "size", "node")) is None


def test_search_only_cites_the_values_key_under_the_parent_asked_about(tmp_path: Path) -> None:
    # Given a values file with replicaCount under controller: and under broker:
    (tmp_path / "kafka").mkdir()
    (tmp_path / "kafka" / "values.yaml").write_text(VALUES)
    (tmp_path / "kafka" / "Chart.yaml").write_text("name: kafka\nversion: 1.0.0\n")
    snap = Snapshot(tmp_path, "8" * 40, RepoRef("keys", str(tmp_path)))
    # When the question asks how many controller nodes start by default
    result = search_only.answer("How many controller nodes are started by default?", Toolbox(snap))
    # Then the controller's key is cited
    top = result.evidence[0]
    assert (top.path, top.line) == (
        "kafka/values.yaml",
        VALUES.split("\n").index("  replicaCount: 3") + 1,
    )


def test_search_only_cites_the_field_deep_inside_a_long_initializer(tmp_path: Path) -> None:
    # Given a C struct initializer (a constant, not a function) whose tcache field is 22 lines down
    par = "static struct malloc_par mp_ =\n{\n"
    par += "".join(f"  .field_{i} = DEFAULT_FIELD_{i},\n" for i in range(20))
    par += "  .tcache_count = TCACHE_FILL_COUNT,\n  .tcache_max_bytes = MAX_TCACHE_SIZE,\n};\n"
    (tmp_path / "malloc").mkdir()
    (tmp_path / "malloc" / "malloc.c").write_text("#include <stddef.h>\n\n" + par)
    snap = Snapshot(tmp_path, "7" * 40, RepoRef("init", str(tmp_path)))
    # When the question asks for that default
    result = search_only.answer("What is the default fill count of the tcache?", Toolbox(snap))
    # Then the initializer is cited from its name down to the field
    top = result.evidence[0]
    assert (top.path, top.line, top.end_line, top.name) == ("malloc/malloc.c", 3, 25, "mp_")


def test_a_word_and_its_synonyms_count_once_and_how_many_is_phrasing() -> None:
    # Given a question word with synonyms, and "many" that asks for a count
    groups = [(("many",), 1.0, "many"), (("count", "number"), 0.5, "many"),
              (("node",), 1.0, "node")]  # fmt: skip
    q = question_for(groups, lambda w: 1, 100)
    # Then "many" itself is not searched, its synonyms are, as one concept
    assert "many" not in q.worth and q.concept["count"] == q.concept["number"] == "many"
    lines = ["# when there are many nodes, slow", "x = 1", "count_number = 3", "node = 2"]
    scored = score_lines(lines, 1, len(lines), q, "python")
    # "many nodes" in prose holds one concept only; count and number on a line are one, not two
    assert 1 not in scored.lines
    assert scored.lines[3][2] in (("count", "node"), ("node", "number"))


def test_a_templates_directive_lines_are_read_as_code() -> None:
    # Given a chart template: the answer is a directive, not a key
    lines = ["spec:", "  template:", "    spec:", "      containers:", "        - name: app"]
    lines += [f"          opt{i}: {i}" for i in range(10)]
    lines += ['          {{- include "app.heapOpts" (dict "broker" .Values.broker) | nindent 10 }}']
    lines += ["          ports: []"]
    q = worth("broker", "heap", "opts")
    # Then the directive line is picked in a template, while read as plain YAML it is no key at all
    pick = pick_line(lines, 1, len(lines), q, language="gotmpl-yaml")
    assert pick is not None and lines[pick.line - 1].lstrip().startswith("{{- include")
    plain = pick_line(lines, 1, len(lines), q, language="yaml")
    assert plain is None or plain.line != pick.line
