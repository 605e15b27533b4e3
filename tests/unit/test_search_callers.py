"""Who-calls questions in search-only answers: the shared helper is found and its call sites listed."""

from __future__ import annotations

import re
from pathlib import Path

from codeask import search_only
from codeask.search import callers
from codeask.snapshot import RepoRef, Snapshot
from codeask.tools import Toolbox
from conftest import write


def helper_repo(root: Path) -> Toolbox:
    """A checkers package: a shared helper used by three checkers."""
    write(
        root,
        "lint/utils.py",
        "'''Helpers the checkers share.'''\n\n\ndef node_frame_class(node):\n"
        "    '''Walk up from a node to its enclosing class.'''\n"
        "    while node is not None and not is_class(node):\n"
        "        node = node.parent\n"
        "    return node\n\n\n"
        "def is_class(node):\n    return node.kind == 'class'\n",
    )
    for name in ("methods", "attributes", "slots"):
        write(
            root,
            f"lint/checkers/{name}.py",
            "from lint.utils import node_frame_class\n\n\n"
            f"class {name.title()}Checker:\n"
            "    def visit_call(self, node):\n"
            "        # node_frame_class( is named in this comment too\n"
            "        klass = node_frame_class(node)\n"
            "        return klass\n",
        )
    return Toolbox(Snapshot(root, "c" * 40, RepoRef("lint", str(root))))


def test_call_pattern_per_kind() -> None:
    called = re.compile(callers.call_pattern("decorated_with", "function") or "")
    assert called.search("if decorated_with(node, names):")
    assert called.search("cb = partial(utils.decorated_with, qnames=ABC)")  # handed on
    assert called.search("  hook = decorated_with;")
    assert not called.search("def is_decorated_with_x(node):")
    assert not called.search("# see decorated_with for the rules")
    assert (callers.call_pattern("Linter.add_message", "method") or "").startswith(
        r"\badd_message\s*\("
    )
    assert callers.call_pattern("pg.service.port", "template") == (
        r'\b(?:include|template)\s+"pg\.service\.port"'
    )
    assert callers.call_pattern("f", "function") is None


def test_who_calls_questions_are_recognised() -> None:
    assert callers.asks_for_callers("Which checks use the helper? List every use.")
    assert callers.asks_for_callers("Who calls parse_config?")
    assert callers.asks_for_callers("I want every place that uses the shared helper.")
    assert not callers.asks_for_callers("Where is the config parsed?")
    # "call" alone says nothing of callers: the call sites are listed, the ranking is as for "where"
    around = "Where are the warning filters applied around the test call?"
    assert callers.mentions_callers(around) and not callers.asks_for_callers(around)


def test_call_sites_leave_out_the_definition_imports_and_comments(tmp_path: Path) -> None:
    toolbox = helper_repo(tmp_path)
    sites, more = callers.find_call_sites(
        toolbox, "node_frame_class", "function", "lint/utils.py", 4
    )
    assert not more
    assert [(s.path, s.line) for s in sites] == [
        ("lint/checkers/attributes.py", 7),
        ("lint/checkers/methods.py", 7),
        ("lint/checkers/slots.py", 7),
    ]


def test_the_answer_lists_each_call_site_with_its_scope(tmp_path: Path) -> None:
    toolbox = helper_repo(tmp_path)
    result = search_only.answer("Who calls `node_frame_class`? List every use.", toolbox)
    assert "Where `node_frame_class` is called (3 calls in 3 files):" in result.text
    assert (
        "- `lint/checkers/slots.py:7` in `class SlotsChecker › def visit_call(self, node)`: "
        "`klass = node_frame_class(node)`" in result.text
    )
    assert "methods.py:1`" not in result.text  # the import is not a call


def test_template_call_sites_are_its_includes(tmp_path: Path) -> None:
    # Given a Helm chart whose helper is included by two templates and named in a comment
    write(
        tmp_path,
        "charts/db/templates/_helpers.tpl",
        '{{/* The service port. */}}\n{{- define "db.service.port" -}}\n'
        "{{- .Values.service.port -}}\n{{- end -}}\n",
    )
    write(
        tmp_path,
        "charts/db/templates/svc.yaml",
        'spec:\n  ports:\n    - port: {{ include "db.service.port" . }}\n',
    )
    write(
        tmp_path,
        "charts/db/templates/NOTES.txt",
        '{{/* db.service.port is the helper */}}\nPort: {{ template "db.service.port" . }}\n',
    )
    toolbox = Toolbox(Snapshot(tmp_path, "d" * 40, RepoRef("charts", str(tmp_path))))
    sites, _ = callers.find_call_sites(
        toolbox, "db.service.port", "template", "charts/db/templates/_helpers.tpl", 2
    )
    assert [(s.path, s.line) for s in sites] == [
        ("charts/db/templates/svc.yaml", 3),
        ("charts/db/templates/NOTES.txt", 2),  # named like docs: after the templates
    ]


def test_a_name_says_a_word_when_one_stem_starts_the_other() -> None:
    assert callers.says_words("decorated_with", ["decorator"])
    assert callers.says_words("__nss_database_get", ["databas"])
    assert not callers.says_words("is_class", ["decorator"])
    assert not callers.says_words("get_env", ["getaway"])  # `get` is too short to say `getaway`


def test_callees_are_calls_and_includes_not_keywords() -> None:
    body = [
        "    if (x) return helper_one (a, b);",
        '    port: {{ include "db.service.port" . }}',
        "    while (sizeof (y)) z = obj.method_two(1)",
    ]
    assert callers.callees(body) == {"helper_one", "db.service.port", "method_two"}


def test_the_helper_the_best_places_share_answers_who_calls(tmp_path: Path) -> None:
    # Given checks that say what the question says, and a plain helper that each of them calls
    write(
        tmp_path,
        "lint/utils.py",
        "'''Shared helpers.'''\n\n\ndef decorated_with(func, qnames):\n"
        "    return any(d.qname in qnames for d in func.decorators)\n",
    )
    for name, qname in (("overload", "typing.overload"), ("final", "typing.final")):
        write(
            tmp_path,
            f"lint/checkers/{name}.py",
            f"'''{name.title()} checks.'''\nfrom lint.utils import decorated_with\n\n\n"
            f"def check_{name}(node):\n"
            f"    '''Report a function whose decorator is {qname}.'''\n"
            f"    if decorated_with(node, ['{qname}']):\n"
            f"        report(node, '{qname} decorator')\n",
        )
    toolbox = Toolbox(Snapshot(tmp_path, "e" * 40, RepoRef("lint", str(tmp_path))))
    question = "Which checks look for a decorator such as typing.overload or typing.final?"
    # When the question only asks where, the checks that say it come first
    assert search_only.answer(question, toolbox).evidence[0].path.startswith("lint/checkers/")
    # When it asks for every place that uses the shared helper, the helper they call comes first
    result = search_only.answer(question + " List every place that uses the helper.", toolbox)
    top = result.evidence[0]
    assert (top.path, top.line, top.name) == ("lint/utils.py", 4, "decorated_with")
    assert "Where `decorated_with` is called (2 calls in 2 files):" in result.text


def test_a_constant_is_listed_where_it_is_used(tmp_path: Path) -> None:
    write(tmp_path, "app/limits.py", "'''Limits.'''\n\nMAX_RETRIES = 5\n")
    write(
        tmp_path,
        "app/client.py",
        "from app.limits import MAX_RETRIES\n\n\ndef fetch(url):\n"
        "    for attempt in range(MAX_RETRIES):\n        get(url)\n",
    )
    toolbox = Toolbox(Snapshot(tmp_path, "a" * 40, RepoRef("app", str(tmp_path))))
    result = search_only.answer("Where is `MAX_RETRIES` used?", toolbox)
    assert result.evidence[0].name == "MAX_RETRIES"
    assert "Where `MAX_RETRIES` is used (1 use in 1 file):" in result.text
    assert "- `app/client.py:5` in `def fetch(url)`" in result.text


def test_c_call_sites_leave_out_prototypes_and_list_source_before_changelogs(
    tmp_path: Path,
) -> None:
    write(
        tmp_path, "nss/db.c", "bool\ndb_get (int db, list *out)\n{\n  return lookup (db, out);\n}\n"
    )
    write(tmp_path, "nss/db.h", "bool db_get (int db, list *out);\nextern int other (void);\n")
    write(tmp_path, "ChangeLog", "2020  A. Hacker\n\t* nss/db.c (db_get): New.\n\tdb_get (x);\n")
    write(
        tmp_path,
        "nscd/cache.c",
        "static int\nadd_entry (int fd)\n{\n  if (!db_get (1, &l))\n    return -1;\n"
        "  int (*fn) (int, list *) = db_get;\n  return 0;\n}\n",
    )
    toolbox = Toolbox(Snapshot(tmp_path, "b" * 40, RepoRef("libc", str(tmp_path))))
    sites, _ = callers.find_call_sites(toolbox, "db_get", "function", "nss/db.c", 2)
    assert [(s.path, s.line) for s in sites] == [
        ("nscd/cache.c", 4),
        ("nscd/cache.c", 6),  # a function pointer set to it
        ("ChangeLog", 2),  # docs last (a name in brackets reads as handed on)
        ("ChangeLog", 3),
    ]
