"""The definitions index: what it holds, how it ranks, where it lives, and that both engines agree."""

from __future__ import annotations

import random
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from codeask import search_only
from codeask.denylist import DenyList
from codeask.mirror import MirrorStore, RepoSpec, inplace
from codeask.search import definition_index, definitions, syntax
from codeask.search.definition_index import DefinitionIndex, Pending, fts5_available, index_for
from codeask.search.definitions import extract
from codeask.search.index_build import partial_path
from codeask.search.vocabulary import split_identifier, synonyms, tokens
from codeask.snapshot import RepoRef, Snapshot
from codeask.tools import Toolbox
from conftest import GitWorkTree

# What DefinitionIndex.search takes: groups of words, each with its weight.
Query = list[tuple[tuple[str, ...], float]]

PY = '''"""Sessions and their redirects."""

MAX_REDIRECTS = 30  # how many hops before giving up


class SessionRedirectMixin:
    """Handles redirects."""

    def should_strip_auth(self, old_url, new_url):
        """Decide whether Authorization should be removed when redirecting."""
        return old_url != new_url

    @staticmethod
    def rebuild_proxies(prepared,
                        proxies):
        return proxies
'''
YAML = """## @param auth.postgresPassword Password for the admin user
auth:
  postgresPassword: ""
metrics:
  ## @param metrics.resourcesPreset Set container resources for the exporter
  resourcesPreset: "nano"
"""
TPL = """{{/*
Return the database service port
*/}}
{{- define "db.service.port" -}}
5432
{{- end -}}
"""


def write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    write(root, "app/sessions.py", PY)
    write(root, "chart/values.yaml", YAML)
    write(root, "chart/templates/_helpers.tpl", TPL)
    # A generated API surface: a thousand one-line methods that all say "auth" and "redirect".
    write(
        root,
        "app/generated/client.py",
        "class Client:\n"
        + "".join(
            f"    def auth_redirect_{i}(self): return self.api('auth.redirect')\n"
            for i in range(1000)
        ),
    )
    write(
        root,
        "tests/test_sessions.py",
        "def test_strip_auth():\n    assert should_strip_auth(1, 2)\n",
    )
    return root


def test_identifiers_split_into_words() -> None:
    assert split_identifier("should_strip_auth") == ["should", "strip", "auth"]
    assert split_identifier("getHTTPProxy") == ["get", "http", "proxy"]
    assert split_identifier("_IO_switch_to_get_mode") == ["io", "switch", "to", "get", "mode"]
    assert tokens("retries") == tokens("retried") == ["retry"]
    assert "backoff" in synonyms(tokens("retry")[0])


def test_definitions_have_names_scopes_kinds_and_docs() -> None:
    defs = {d.name: d for d in extract("app/sessions.py", PY.splitlines())}
    assert defs["MAX_REDIRECTS"].kind == "constant" and defs["MAX_REDIRECTS"].line == 3
    strip = defs["should_strip_auth"]
    assert (strip.kind, strip.line, strip.scope) == ("method", 9, ("SessionRedirectMixin",))
    assert "Authorization should be removed" in strip.doc
    assert defs["rebuild_proxies"].line == 14  # the def line, not the decorator
    keys = {(d.name, d.scope): d for d in extract("chart/values.yaml", YAML.splitlines())}
    preset = keys[("resourcesPreset", ("metrics",))]
    assert preset.kind == "key" and "exporter" in preset.doc
    (tpl,) = [
        d for d in extract("chart/templates/_helpers.tpl", TPL.splitlines()) if d.kind != "file"
    ]
    assert (tpl.name, tpl.line) == ("db.service.port", 4) and "service port" in tpl.doc


PRESETS = """{{/*
Return a resource object for a preset
*/}}
{{- define "common.resources.preset" -}}
{{- $presets := dict
  "nano" (dict "requests" (dict "cpu" "100m" "memory" "128Mi"))
  "small" (dict "requests" (dict "cpu" "500m" "memory" "512Mi"))
-}}
{{- if hasKey $presets .type -}}
{{- index $presets .type | toYaml -}}
{{- else -}}
{{- fail "unknown preset" -}}
{{- end -}}
{{- end -}}

{{- define "common.other" -}}
{{- end -}}
"""


def test_a_template_spans_its_define_down_to_its_own_end() -> None:
    defs = {d.name: d for d in extract("c/templates/_resources.tpl", PRESETS.splitlines())}
    # the `if` nested in it ends first; the define's own `end` closes it
    assert (defs["common.resources.preset"].line, defs["common.resources.preset"].end) == (4, 14)
    assert (defs["common.other"].line, defs["common.other"].end) == (16, 17)
    assert "resource object" in defs["common.resources.preset"].doc


def test_a_template_files_entry_is_its_first_comment_past_the_licence_and_modeline() -> None:
    text = (
        "{{/*\nCopyright Example Corp. All Rights Reserved.\nSPDX-License-Identifier: APACHE-2.0\n*/}}\n"
        "\n{{/* vim: set filetype=mustache: */}}\n\n{{/*\nReturn a resource object for a preset\n*/}}\n"
        + PRESETS.split("*/}}\n", 1)[1]
    )
    entry = extract("c/templates/_resources.tpl", text.splitlines())[0]
    assert entry.kind == "file" and entry.doc == "Return a resource object for a preset"


def test_a_template_is_found_by_what_its_body_says(tmp_path: Path) -> None:
    # Given the helper that holds the presets, and helpers whose names say more of the question
    write(tmp_path, "common/templates/_resources.tpl", PRESETS)
    for i in range(3):
        write(tmp_path, f"db{i}/templates/_helpers.tpl",
              f'{{{{- define "db{i}.memory.requests.limit" -}}}}\n{{{{ .Values.memory }}}}\n'
              "{{- end -}}\n")  # fmt: skip
    snap = Snapshot(tmp_path, "6" * 40, RepoRef("charts", str(tmp_path)))
    definition_index._cache.clear()
    # When the question asks for what one preset gives
    result = search_only.answer(
        "What cpu and memory requests does the preset 'small' give?", Toolbox(snap)
    )
    # Then the helper is cited first, from its define down to the line that answers
    top = result.evidence[0]
    assert (top.path, top.line, top.name) == (
        "common/templates/_resources.tpl",
        4,
        "common.resources.preset",
    )
    assert top.end_line == 7


@pytest.mark.parametrize("fts5", [True, False])
def test_bm25_finds_a_definition_by_what_it_means(tree: Path, fts5: bool) -> None:
    if fts5 and not fts5_available():
        pytest.skip("this SQLite has no FTS5")
    snap = Snapshot(tree, "a" * 40, RepoRef("t", str(tree)))
    index = DefinitionIndex.build(snap, None, fts5=fts5)
    assert isinstance(index, DefinitionIndex)
    assert index.engine == ("fts5" if fts5 else "tables")
    query: Query = [((w,), 1.0) for w in tokens("strip authorization redirect")]
    query += [(synonyms(tokens("authorization")[0]), 0.5)]
    best = index.search(query, limit=5)[0]
    assert (best.path, best.name, best.line) == ("app/sessions.py", "should_strip_auth", 9)


def test_both_engines_score_alike(tree: Path) -> None:
    if not fts5_available():
        pytest.skip("this SQLite has no FTS5")
    snap = Snapshot(tree, "a" * 40, RepoRef("t", str(tree)))
    a = DefinitionIndex.build(snap, None, fts5=True)
    b = DefinitionIndex.build(snap, None, fts5=False)
    assert isinstance(a, DefinitionIndex) and isinstance(b, DefinitionIndex)
    for question in ("database service port", "container resources exporter", "auth redirect"):
        q: Query = [((w,), 1.0) for w in tokens(question)]
        ra = [(f.path, f.line, round(f.score, 6)) for f in a.search(q)]
        rb = [(f.path, f.line, round(f.score, 6)) for f in b.search(q)]
        assert ra == rb and ra


@pytest.mark.parametrize("fts5", [True, False])
def test_a_words_count_is_remembered_and_stays_right(
    tree: Path, fts5: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if fts5 and not fts5_available():
        pytest.skip("this SQLite has no FTS5")
    snap = Snapshot(tree, "a" * 40, RepoRef("t", str(tree)))
    index = DefinitionIndex.build(snap, None, fts5=fts5)
    assert isinstance(index, DefinitionIndex)
    monkeypatch.setattr(definition_index, "DF_KEPT", 2)  # the memory fills and is emptied
    words = ("auth", "redirect", "strip", "port", "nowher", "auth", "redirect")
    first = [index.count(w) for w in words]
    assert first[0] == first[5] >= 1001 and first[1] == first[6] >= 1001  # the generated methods
    assert first[2] >= 1 and first[4] == 0
    # a second pass, partly from memory, says the same as a fresh index that remembers nothing
    fresh = DefinitionIndex.build(snap, None, fts5=fts5)
    assert isinstance(fresh, DefinitionIndex)
    assert [index.count(w) for w in words] == first == [fresh.count(w) for w in words]
    assert len(index._df) <= 2


def test_the_index_lives_beside_the_snapshot_and_is_built_once(tree: Path, tmp_path: Path) -> None:
    target = tmp_path / "snaps" / ("a" * 40 + ".defs")
    snap = Snapshot(tree, "a" * 40, RepoRef("t", str(tree)), index_path=target)
    definition_index._cache.clear()
    index = index_for(snap)
    assert isinstance(index, DefinitionIndex)
    assert target.is_file() and not list(tree.rglob("*.defs"))
    assert index_for(snap) is index
    written = target.stat()
    definition_index._cache.clear()
    again = index_for(snap)  # opened from disk, not rebuilt
    assert isinstance(again, DefinitionIndex)
    assert again is not index and again.rows == index.rows
    after = target.stat()
    assert (after.st_ino, after.st_mtime_ns) == (written.st_ino, written.st_mtime_ns)
    assert not [p for p in target.parent.iterdir() if p.name.startswith(".tmp-")]


def test_a_damaged_or_older_index_is_rebuilt(tree: Path, tmp_path: Path) -> None:
    target = tmp_path / ("b" * 40 + ".defs")
    target.write_bytes(b"SQLite format 3\x00" + b"\x00" * 50)  # a truncated file
    snap = Snapshot(tree, "b" * 40, RepoRef("t", str(tree)), index_path=target)
    definition_index._cache.clear()
    assert DefinitionIndex.open(target) is None
    index = index_for(snap)
    assert isinstance(index, DefinitionIndex)
    assert index.rows > 0 and DefinitionIndex.open(target) is not None


def test_concurrent_builders_leave_one_whole_index(tree: Path, tmp_path: Path) -> None:
    target = tmp_path / ("c" * 40 + ".defs")
    snap = Snapshot(tree, "c" * 40, RepoRef("t", str(tree)))
    errors: list[BaseException] = []

    def build() -> None:
        try:
            DefinitionIndex.build(snap, target)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=build) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    opened = DefinitionIndex.open(target)
    assert opened is not None and opened.rows > 0
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp-")] == []


def test_search_only_cites_the_definition_with_its_scope_not_the_generated_file(tree: Path) -> None:
    snap = Snapshot(tree, "d" * 40, RepoRef("t", str(tree)))
    definition_index._cache.clear()
    result = search_only.answer(
        "Where do we drop the Authorization header on a redirect?", Toolbox(snap)
    )
    top = result.evidence[0]
    assert (top.path, top.line, top.name) == ("app/sessions.py", 9, "should_strip_auth")
    assert "`app/sessions.py:9` in `class SessionRedirectMixin`" in result.text
    assert "def should_strip_auth" in result.text
    assert all(e.path != "app/generated/client.py" for e in result.evidence[:1])
    assert result.text.startswith("**Search-only answer**")


def test_callers_questions_list_where_the_definition_is_used(tree: Path) -> None:
    snap = Snapshot(tree, "e" * 40, RepoRef("t", str(tree)))
    result = search_only.answer(
        "Which places call the helper that decides whether to strip authorization on redirects?",
        Toolbox(snap),
    )
    assert result.evidence[0].name == "should_strip_auth"
    assert "Where `should_strip_auth` is called" in result.text
    assert "`tests/test_sessions.py:2` in `def " in result.text  # with the definition it sits in


# -- across commits, and within a time budget ---------------------------------------------------------


def rows_of(index: DefinitionIndex) -> list[tuple[object, ...]]:
    """Every row an index would rank, as the reader sees it, in id order."""
    return list(
        index._db.execute(
            "SELECT d.id, f.path, d.line, d.end_line, d.kind, d.name, d.scope, d.nw, d.sw, d.dw, "
            "d.n FROM defs d JOIN files f ON d.file = f.id ORDER BY d.id"
        )
    )


def test_a_new_commit_parses_only_the_files_whose_blob_changed(
    tmp_path: Path, git_repo: Callable[..., GitWorkTree]
) -> None:
    # Given a repository indexed at its first commit
    work = git_repo()
    work.commit(
        {"app/sessions.py": PY, "chart/values.yaml": YAML, "lib/util.py": "def a():\n    pass\n"}
    )
    store = MirrorStore(tmp_path / "m", tmp_path / "s", DenyList())
    spec = RepoSpec.parse(str(work.path), name="app")
    first = store.sync(spec).snapshot
    assert first.blobs is not None and set(first.blobs) == set(first.files)
    definition_index._cache.clear()
    assert isinstance(index_for(first), DefinitionIndex)

    # When a commit changes one file and adds another
    work.commit(
        {"lib/util.py": "def b():\n    '''Rotate the bot token.'''\n", "lib/new.py": "X = 1\n"}
    )
    second = store.sync(spec).snapshot
    index = index_for(second)

    # Then only those two were parsed, the rest copied, and the index is the one a fresh build makes
    assert isinstance(index, DefinitionIndex)
    assert (index.stats.parsed, index.stats.reused) == (2, 2)
    fresh = DefinitionIndex.build(
        Snapshot(second.root, second.sha, second.repo, index_path=None), None
    )
    assert isinstance(fresh, DefinitionIndex)
    assert rows_of(index) == rows_of(fresh)
    assert [f.name for f in index.search([(tuple(tokens("rotate token")), 1.0)])][:1] == ["b"]


def test_a_build_over_its_budget_is_continued_by_later_questions(
    tree: Path, tmp_path: Path
) -> None:
    # Given a snapshot whose index cannot be built in the time a question gives it
    target = tmp_path / ("f" * 40 + ".defs")
    snap = Snapshot(tree, "f" * 40, RepoRef("t", str(tree)), index_path=target)
    definition_index._cache.clear()
    files = sum(1 for p in tree.rglob("*") if p.is_file())

    # When questions each give it no time at all
    first = index_for(snap, wait_s=0.0, slice_s=0.0)
    assert isinstance(first, Pending) and first.files == files
    assert not target.exists() and partial_path(target).is_file()
    seen = [first.todo]
    got: DefinitionIndex | Pending = first
    while isinstance(got, Pending) and len(seen) <= files:
        got = index_for(snap, wait_s=0.0, slice_s=0.0)
        seen.append(got.todo if isinstance(got, Pending) else 0)

    # Then every question got further, until the index was whole and the partial one gone
    assert isinstance(got, DefinitionIndex) and seen == sorted(seen, reverse=True)
    assert len(set(seen)) == len(seen) and target.is_file() and not partial_path(target).exists()
    fresh = DefinitionIndex.build(Snapshot(tree, "f" * 40, RepoRef("t", str(tree))), None)
    assert isinstance(fresh, DefinitionIndex) and rows_of(got) == rows_of(fresh)


def test_without_its_index_search_only_says_so_and_still_cites_definitions(
    tree: Path, tmp_path: Path
) -> None:
    target = tmp_path / ("9" * 40 + ".defs")
    snap = Snapshot(tree, "9" * 40, RepoRef("t", str(tree)), index_path=target)
    definition_index._cache.clear()
    deadline = time.monotonic()  # no time left: the index must not be waited for
    result = search_only.answer(
        "Where do we decide whether should_strip_auth drops the header?",
        Toolbox(snap),
        deadline=deadline,
    )
    assert "still being built" in result.text and "ripgrep's hits alone" in result.text
    top = result.evidence[0]
    assert (top.path, top.name, top.kind) == ("app/sessions.py", "should_strip_auth", "method")
    assert not target.exists()


HELM = """apiVersion: apps/v1
kind: StatefulSet
spec:
  template:
    spec:
      containers:
        - name: kafka
          {{- if .Values.broker.args }}
          args: {{- toYaml .Values.broker.args | nindent 12 }}
          {{- end }}
          env:
            - name: KAFKA_HEAP_OPTS
              value: {{ coalesce .Values.broker.heapOpts .Values.heapOpts | quote }}
"""


def test_template_yaml_keys_are_definitions_with_their_values() -> None:
    # No YAML parser reads a Helm template: its keys come from their lines, parents by indentation.
    keys = {d.line: d for d in extract("chart/templates/statefulset.yaml", HELM.splitlines())}
    value = keys[13]
    assert (value.kind, value.name) == ("key", "value")
    assert value.scope == ("spec", "template", "spec", "containers", "env")
    assert ".Values.broker.heapOpts" in value.doc
    assert keys[12].doc == "KAFKA_HEAP_OPTS" and 8 not in keys


def long_function(deep: str) -> str:
    body = "".join(f"    step_{i} = prepare({i})\n" for i in range(40))
    return f"def run_pipeline(items):\n{body}    {deep}\n    return items\n"


def test_a_line_deep_in_a_long_function_is_cited_under_the_function(tmp_path: Path) -> None:
    root = tmp_path / "deep"
    write(root, "app/pipeline.py", long_function("items = scrub_environment(unsafe_secure_vars)"))
    write(root, "app/other.py", "def prepare(i):\n    return i\n")
    snap = Snapshot(root, "7" * 40, RepoRef("t", str(root)))
    definition_index._cache.clear()
    result = search_only.answer(
        "Where are the unsafe environment variables scrubbed for secure programs?", Toolbox(snap)
    )
    # Then the function is cited down to that line, and both are shown
    top = result.evidence[0]
    assert (top.path, top.line, top.end_line, top.name) == (
        "app/pipeline.py",
        1,
        42,
        "run_pipeline",
    )
    assert "`app/pipeline.py:1-42`" in result.text
    assert "def run_pipeline(items):" in result.text and "scrub_environment" in result.text


def test_copies_of_one_definition_leave_room_in_the_results_for_others(tmp_path: Path) -> None:
    # Given the same documented key in thirty charts' values, and one template that says less
    key = "## @param resources Container resources requests and limits preset\nresources: {}\n"
    for i in range(30):
        write(tmp_path, f"charts/c{i}/values.yaml", key)
    write(
        tmp_path,
        "charts/common/templates/_presets.tpl",
        '{{/*\nResources requests and limits of a preset\n*/}}\n{{- define "common.preset" -}}\n'
        "{}\n{{- end -}}\n",
    )
    snap = Snapshot(tmp_path, "7" * 40, RepoRef("charts", str(tmp_path)))
    index = DefinitionIndex.build(snap, None)
    assert isinstance(index, DefinitionIndex)
    # When a search asks for fewer results than there are copies
    query: Query = [((w,), 1.0) for w in tokens("resources requests limits preset")]
    found = index.search(query, limit=2 * definition_index.TWINS_KEPT + 1)
    # Then a few copies of each are kept (the key, each values file's own entry), and the one
    # different definition is there too
    assert sum(1 for f in found if f.name == "resources") == definition_index.TWINS_KEPT
    assert "common.preset" in {f.name for f in found}


@pytest.mark.parametrize("fts5", [True, False])
def test_the_results_are_kept_as_the_ranking_will_weigh_their_files(
    tmp_path: Path, fts5: bool
) -> None:
    # Given tests whose names say the question's words in full, and the code they test saying
    # fewer of them
    for i in range(8):
        write(tmp_path, f"tests/test_walker{i}.py",
              "".join(f"def test_skip_visit_when_enabled_{j}():\n    pass\n" for j in range(3)))  # fmt: skip
    write(tmp_path, "app/walker.py", "def is_visit_enabled(method):\n    return True\n")
    snap = Snapshot(tmp_path, "8" * 40, RepoRef("walker", str(tmp_path)))
    index = DefinitionIndex.build(snap, None, fts5=fts5)
    assert isinstance(index, DefinitionIndex)
    query: Query = [((w,), 1.0) for w in tokens("skip visit when enabled")]
    # When fewer results are asked for than there are tests, plainly and weighing tests as the
    # ranking does
    plain = index.search(query, limit=5)
    weighed = index.search(query, limit=5, kinds={"test": 0.45})
    # Then the code is kept only when the tests are weighed, with its score unweighted
    assert "is_visit_enabled" not in {f.name for f in plain}
    mine = [f for f in weighed if f.name == "is_visit_enabled"]
    assert mine and mine[0].score == max(f.score for f in index.search(query, limit=500)
                                         if f.name == "is_visit_enabled")  # fmt: skip


def test_a_british_question_finds_the_american_names(tmp_path: Path) -> None:
    # Given code that writes color and initialize, the American way
    write(
        tmp_path,
        "ui/theme.py",
        "def text_color():\n    pass\n\n\ndef initialize_theme():\n    pass\n",
    )
    index = DefinitionIndex.build(Snapshot(tmp_path, "6" * 40, RepoRef("ui", str(tmp_path))), None)
    assert isinstance(index, DefinitionIndex)
    # When the question spells them the British way
    found = index.search([((w,), 1.0) for w in tokens("colour initialised")])
    # Then both definitions are found
    assert {"text_color", "initialize_theme"} <= {f.name for f in found}


# Patterns that had two runs of blanks around an optional part, or a lazy value before trailing
# blanks: each backtracked over a long run of blanks inside a line, quadratic in it (a templated
# values line with 200,000 blanks inside took minutes to index). Their old forms are the models.
_OLD = {
    "template_key": re.compile(r"^( *)(- +)?([A-Za-z_][\w.-]*)\s*:(?:\s+(.*?))?\s*$"),
    "block_end": re.compile(r"\*/\s*(-?\}\})?\s*$"),
    "path_key": re.compile(r"(?i)^\s*path\s*=\s*(.*?)\s*$"),
    "macro_line": re.compile(r"^\s*[A-Za-z_]\w*\s*\([^()]*\)\s*;?\s*$"),
}
_BITS = [
    " ",
    "\t",
    "a",
    ":",
    "-",
    "*/",
    "}}",
    "-}}",
    ";",
    "(",
    ")",
    "x",
    "path",
    "=",
    '"',
    "\u00a0",
]


def _new_reading(which: str, s: str) -> object:
    if which == "template_key":
        m = definitions._TEMPLATE_KEY.match(s)
        return m and (*m.groups()[:3], m.group(4) and m.group(4).rstrip())
    if which == "block_end":
        return bool(definitions._BLOCK_END.search(s.strip()))
    if which == "path_key":
        m = inplace._PATH_KEY.match(s)
        return m and m.group(1).rstrip()
    return bool(syntax._MACRO_LINE.match(s))


def _old_reading(which: str, s: str) -> object:
    m = _OLD[which].search(s) if which == "block_end" else _OLD[which].match(s)
    if which == "template_key":
        return m and (*m.groups()[:3], m.group(4))
    if which == "path_key":
        return m and m.group(1)
    return bool(m)


@pytest.mark.parametrize("which", sorted(_OLD))
def test_line_patterns_read_as_before_in_one_pass(which: str) -> None:
    rng = random.Random(which)
    for _ in range(20_000):
        s = "".join(rng.choice(_BITS) for _ in range(rng.randint(0, 10)))
        if which == "block_end" and not s.strip().endswith(("*/", "}}")):
            continue  # read only where the line ends so
        assert _new_reading(which, s) == _old_reading(which, s), repr(s)
    # ... and a long run of blanks inside the line is one pass
    blanks = " " * 300_000
    long = {"template_key": f"a: x{blanks}y", "block_end": f"*/{blanks}x */",
            "path_key": f"path = x{blanks}y", "macro_line": f"f(){blanks}x"}[which]  # fmt: skip
    assert _new_reading(which, long) == {"template_key": ("", None, "a", f"x{blanks}y"),
                                         "block_end": True, "path_key": f"x{blanks}y",
                                         "macro_line": False}[which]  # fmt: skip


def test_a_templated_values_line_with_a_long_blank_run_is_indexed() -> None:
    lines = ["auth:", "  password: x" + " " * 300_000 + "y", "  user: {{ .Values.user }}"]
    keys = {(d.name, d.scope) for d in extract("chart/templates/secret.yaml", lines)}
    assert {("auth", ()), ("password", ("auth",)), ("user", ("auth",))} <= keys


_DEEP = """
import sys
from codeask.search.definitions import extract
from codeask.search.syntax import FileSyntax
shapes = {"seq": ["- " * 300 + "x"], "keys": [" " * i + "k:" for i in range(300)],
          "explicit": ["? " * 2000], "values": [": " * 300], "flow": ["[" * 100_000]}
for name, lines in shapes.items():
    for path, language in (("values.yaml", "yaml"), ("data.json", "json")):
        extract(path, lines)
        FileSyntax(language, lines).info(1, [(0, 1)])
    print(name, "read")
"""


def test_yaml_and_json_nested_past_what_their_grammars_survive_are_read_with_heuristics() -> None:
    # Given YAML nested 255 deep, which overruns tree-sitter-yaml's scanner buffer (a crash no
    # except can catch), and flow brackets 100,000 deep (a quadratic query): in a child process,
    # so that a crash fails this test instead of ending the run
    done = subprocess.run(
        [sys.executable, "-c", _DEEP], capture_output=True, text=True, timeout=600
    )
    # Then every shape is read, by the heuristics
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[:-1] == [f"{n} read" for n in
                                            ("seq", "keys", "explicit", "values", "flow")]  # fmt: skip


def test_yaml_nested_as_deep_as_real_files_is_still_parsed() -> None:
    lines = [" " * (2 * i) + f"k{i}:" for i in range(60)] + [" " * 120 + "leaf: 1"]
    assert syntax.nesting_ok("yaml", lines) and syntax.nesting_ok("json", ["[" * 400 + "]" * 400])
    leaf = next(d for d in extract("values.yaml", lines) if d.name == "leaf")
    assert leaf.kind == "key" and leaf.scope == tuple(f"k{i}" for i in range(60))
    assert not syntax.nesting_ok("yaml", ["- " * 100 + "x"])
    assert not syntax.nesting_ok("json", ["[" * 501])


@pytest.mark.parametrize("fts5", [True, False])
def test_a_path_files_rows_are_candidates_even_below_the_rare_words_cut(
    tmp_path: Path, fts5: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if fts5 and not fts5_available():
        pytest.skip("this SQLite has no FTS5")
    # Given functions whose short names and docs say a word, code that does not, and one file
    # named by that word whose long text says it less densely (LICENSE.md beside many helpers)
    for i in range(12):
        write(tmp_path, f"app/m{i}.py", f'def licence_{i}():\n    """The licence."""\n')
    for i in range(60):
        write(tmp_path, f"lib/o{i}.py", f"def other_{i}():\n    return {i}\n")
    filler = " ".join(f"word{i}" for i in range(60))
    write(tmp_path, "LICENSE.md", f"Licence\n\n{filler} licence {filler} licence terms\n")
    snap = Snapshot(tmp_path, "9" * 40, RepoRef("t", str(tmp_path)))
    index = DefinitionIndex.build(snap, None, fts5=fts5)
    assert isinstance(index, DefinitionIndex)
    # When fewer candidates are taken from the word's rows than there are functions saying it
    monkeypatch.setattr(definition_index, "CANDIDATES", 4)
    found = index.search([(tuple(tokens("licence")), 1.0)], limit=50)
    # Then the file whose path says the word is found too: it scored below the cut, and was
    # dropped (neither among the best rows nor added as a path file's row, having a score)
    assert [f.path for f in found][:4] == [f"app/m{i}.py" for i in (0, 1, 10, 11)]
    assert "LICENSE.md" in {f.path for f in found}
