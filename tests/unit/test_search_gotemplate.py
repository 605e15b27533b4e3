"""Helm and Go templates: define labels, D marks, define bodies, if/range context and manifest key paths."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from codeask.search.filekinds import file_kind, language_of, refine_language
from codeask.search.gotemplate import TemplateSyntax, actions
from codeask.search.patterns import Pattern
from codeask.search.syntax import FileSyntax
from codeask.snapshot import RepoRef, Snapshot
from codeask.tools import Toolbox

CHART = Path(__file__).parent / "fixtures" / "search" / "chart"


def parsed(rel: str) -> FileSyntax:
    lines = (CHART / rel).read_text().splitlines()
    language = refine_language(language_of(rel), lines, rel)
    return FileSyntax(language, lines)


def row_of(syntax: FileSyntax, needle: str) -> int:
    return next(i for i, line in enumerate(syntax.lines, 1) if needle in line)


def hit(syntax: FileSyntax, needle: str, pattern: str):  # type: ignore[no-untyped-def]
    row = row_of(syntax, needle)
    return row, syntax.info(row, Pattern.smart(pattern).spans(syntax.lines[row - 1]))


def test_template_files_are_known_by_path_and_content() -> None:
    assert language_of("charts/kafka/templates/_helpers.tpl") == "gotmpl"
    assert file_kind("charts/kafka/templates/_helpers.tpl") == "source"
    assert file_kind("charts/kafka/templates/NOTES.txt") == "docs"
    lines = ["{{- if .Values.enabled }}", "kind: Service"]
    assert refine_language("yaml", lines, "kafka/templates/svc.yaml") == "gotmpl-yaml"
    assert refine_language(None, lines, "kafka/templates/NOTES.txt") == "gotmpl"
    assert refine_language("yaml", ["kind: Service"], "kafka/templates/svc.yaml") == "yaml"
    assert refine_language("yaml", lines, "kafka/values.yaml") == "yaml"


def test_a_define_line_defines_its_block_to_the_matching_end() -> None:
    helpers = parsed("templates/_helpers.tpl")
    row, info = hit(helpers, 'define "kafka.commonEnv"', r"kafka\.commonEnv")
    assert info.kind == "definition" and info.scope == []
    # the nested if/range/else/end inside do not close it early
    end = next(
        i for i in range(row, len(helpers.lines) + 1) if helpers.lines[i - 1] == "{{- end -}}"
    )
    assert info.whole == (row, end) and info.whole[1] - info.whole[0] == 14


def test_a_hit_in_a_define_is_labelled_with_it_and_gets_its_if_and_range_lines() -> None:
    helpers = parsed("templates/_helpers.tpl")
    row, info = hit(helpers, "KAFKA_{{ upper", "PROTOCOL")
    assert info.scope == ['define "kafka.commonEnv"'] and info.kind == "reference"
    headers = helpers.context(row, []).headers
    assert [helpers.lines[r - 1] for r in headers] == [
        "{{- range $i, $listener := .Values.listeners }}",
        "{{- if .Values.auth.enabled }}",
    ]
    # after the range's end and the else, only the if is around
    row = row_of(helpers, "ALLOW_PLAINTEXT_LISTENER")
    assert [helpers.lines[r - 1] for r in helpers.context(row, []).headers] == [
        "{{- if .Values.auth.enabled }}"
    ]


def test_includes_are_calls_and_template_comments_are_comments() -> None:
    helpers = parsed("templates/_helpers.tpl")
    _, info = hit(helpers, '{{- include "common.images.image"', r"common\.images\.image")
    assert info.kind == "call" and info.scope == ['define "kafka.image"']
    _, info = hit(helpers, '{{ include "kafka.image" . }}', r"kafka\.image")
    assert info.kind == "comment"


def test_a_manifest_line_has_its_key_path_and_its_define_uses_are_calls() -> None:
    manifest = parsed("templates/statefulset.yaml")
    row, info = hit(manifest, "value: {{ .Values.broker.heapOpts", "heapOpts")
    assert info.scope == ["spec", "template", "spec", "containers[kafka]", "env[KAFKA_HEAP_OPTS]"]
    assert [manifest.lines[r - 1].strip() for r in manifest.context(row, []).headers] == [
        "{{- if .Values.broker.heapOpts }}",
        "{{- if .Values.broker.enabled }}",
    ]
    _, info = hit(manifest, 'include "kafka.commonEnv"', r"kafka\.commonEnv")
    assert info.kind == "call" and info.scope[-1] == "env"
    _, info = hit(manifest, "replicas:", "replicas")
    assert info.kind == "definition" and info.scope == ["spec"]


def test_search_shows_a_define_whole_with_a_d_mark_and_labels_its_uses(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(CHART, repo / "kafka")
    tb = Toolbox(Snapshot(repo, "c" * 40, RepoRef("r", str(repo))))
    text = tb.run("search_code", {"pattern": r"kafka\.commonEnv|PGPASSWORD"}).text
    helpers = text.split("kafka/templates/_helpers.tpl", 1)[1]
    assert re.search(r'^D +16  \{\{- define "kafka\.commonEnv" -\}\}$', helpers, re.M)
    for body_line in ("KAFKA_CLIENT_USERS", "ALLOW_PLAINTEXT_LISTENER", "{{- end -}}"):
        assert body_line in helpers.split("\n\n", 1)[0]
    # the manifest's use says where it sits; a shell line in NOTES.txt is no definition
    assert "  in spec › template › spec › containers[kafka] › env" in text
    assert re.search(r"^> +5      PGPASSWORD=", text, re.M)
    # the define comes before its use
    assert text.index("_helpers.tpl") < text.index("statefulset.yaml")


# The regex the scanner replaced, kept as the model of what an action is: it backtracks, each
# unclosed `{{` scanning to the end of the text (`{{/*` repeated 40,000 times took 87 s).
_MODEL = re.compile(r"\{\{-?\s*(/\*.*?\*/|.*?)\s*-?\}\}", re.S)


_PIECES = ["{{", "}}", "{{-", "-}}", "/*", "*/", " ", "-", "x", "\n", '"', "{", "}"]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=30).map("".join))
@example("{{/* a */}} {{ x }} {{- /* b */ -}} {{/* c */ }}")
@example("{{/* a {{ x }} b */}}{{ y -}}{{/* never closed }}")
def test_actions_are_what_the_backtracking_regex_found(text: str) -> None:
    got = [(start, words, end) for start, _, words, end in actions(text)]
    want = [(m.start(), m.group(1), m.end()) for m in _MODEL.finditer(text)]
    assert got == want


def test_a_template_that_never_closes_is_read_in_one_pass() -> None:
    # Hostile templates: a million openers that never close, comments that never end, comment
    # ends that are never a close. Each is one pass (the regex this replaced would take hours).
    for piece in ("{{", "{{/*", "{{/**/", "{{- x", "{{/* */ }"):
        syntax = TemplateSyntax([piece * 1_000_000], yaml=False)
        assert syntax.blocks == [] and syntax.calls == []
    # ... and a real action after a long unclosed comment is still found
    text = "{{/* " + "{{ x " * 100_000 + '*/}}\n{{- define "late" -}}\n{{- end -}}'
    syntax = TemplateSyntax(text.split("\n"), yaml=False)
    assert [(b.name, b.start, b.end) for b in syntax.blocks] == [("late", 2, 3)]
    assert syntax.comments[0][:2] == (1, 0)
