"""Search-only answers: the question becomes searches, the evidence is ranked, the result is labelled."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from codeask import search_only
from codeask.search_only import Evidence
from codeask.snapshot import RepoRef, Snapshot
from codeask.tools import Toolbox

LICENCE = "# Copyright (c) 2024 Acme. Permission is hereby granted to redistribute this file.\n"


def write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


@pytest.fixture
def toolbox(tmp_path: Path) -> Toolbox:
    w = lambda rel, text: write(tmp_path, rel, text)  # noqa: E731
    w(
        "app/webhooks/signature.py",
        LICENCE + "import hmac\n\n\ndef verify_webhook_signature(body, sig, secret):\n"
        "    expected = hmac.new(secret, body, 'sha256').hexdigest()\n    return hmac.compare_digest(expected, sig)\n",
    )
    w(
        "app/webhooks/routes.py",
        LICENCE + "from .signature import verify_webhook_signature\n\n\ndef receive(req):\n"
        "    if not verify_webhook_signature(req.body, req.headers['sig'], KEY):\n        return 401\n",
    )
    w(
        "tests/test_signature.py",
        "".join(
            f"def test_sig_{i}():\n    verify_webhook_signature(b'', 's', b'k')\n" for i in range(9)
        ),
    )
    w(
        "docs/webhooks.md",
        "# Webhooks\nWe validate webhook signatures with HMAC. Signature checks happen early.\n",
    )
    w(
        "app/cache/redis_client.py",
        LICENCE
        + "import redis\n\n\nclass RedisCache:\n    def __init__(self, url):\n        self.client = redis.Redis.from_url(url)\n",
    )
    for i in range(15):
        w(f"app/mod{i}.py", LICENCE + f"def f{i}():\n    return {i}\n")
    w(
        "app/billing/retry.py",
        "import time\n\n\nclass RetryPolicy:\n    max_attempts = 5\n\n    def backoff(self, attempt):\n        return 2 ** attempt\n",
    )
    return Toolbox(Snapshot(tmp_path, "b" * 40, RepoRef("acme", str(tmp_path))))


def test_question_terms_drop_stopwords_and_keep_identifiers() -> None:
    terms = search_only.question_terms("Where do we validate webhook signatures in `parse_body`?")
    labels = [t.label for t in terms]
    assert labels[0] == "parse_body"
    assert {"valid", "webhook", "signatur"} <= set(labels)
    assert not any(t.label in ("where", "do", "we") for t in terms)


def test_pronouns_are_not_searched_for() -> None:
    # "this machine", "they appear": the pronoun is on every other line of any code base
    terms = search_only.question_terms(
        "Which tags can this machine install, and why do they differ?"
    )
    labels = {t.label for t in terms}
    assert {"tag", "machin", "install"} <= labels
    assert not labels & {"this", "they"}


def test_modal_verbs_are_not_searched_for() -> None:
    # "may be kept": `may` is a modal like `might` and `must`, and no word of the code's
    labels = {t.label for t in search_only.question_terms("Which wheel may be kept?")}
    groups = {w for words, _, _ in search_only.question_groups("Which wheel may be kept?")
              for w in words}  # fmt: skip
    assert "wheel" in labels and "wheel" in groups
    assert "may" not in labels | groups


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Where do we validate webhook signatures?", "app/webhooks/signature.py"),
        ("Where is the redis cache client created?", "app/cache/redis_client.py"),
        ("How does the retry backoff for billing work?", "app/billing/retry.py"),
        ("Is there a RetryPolicy somewhere?", "app/billing/retry.py"),
    ],
)
def test_the_right_file_ranks_first(toolbox: Toolbox, question: str, expected: str) -> None:
    result = search_only.answer(question, toolbox)
    assert result.evidence[0].path == expected


def test_licence_headers_and_tests_do_not_flood_the_answer(toolbox: Toolbox) -> None:
    # "redistribute" in every licence header contains "redis"; tests mention the signature 9 times
    result = search_only.answer("Where is redis used?", toolbox)
    assert [e.path for e in result.evidence][:1] == ["app/cache/redis_client.py"]
    assert all(not e.path.startswith("app/mod") for e in result.evidence[:3])


def test_answer_is_labelled_and_cites_path_and_line(toolbox: Toolbox) -> None:
    result = search_only.answer("Where do we validate webhook signatures?", toolbox)
    assert result.text.startswith("**Search-only answer**")
    assert "nothing below was written by a model" in result.text
    assert "`app/webhooks/signature.py:5`" in result.text
    assert result.searches and toolbox.searches == result.searches


def test_no_terms_and_no_matches_are_honest(toolbox: Toolbox) -> None:
    assert (
        "could not find anything to search for"
        in search_only.answer("how does it work?", toolbox).text
    )
    text = search_only.answer("Where is the quantum flux capacitor?", toolbox).text
    assert "No matches for" in text


def test_secrets_in_snippets_are_redacted(tmp_path: Path, toolbox: Toolbox) -> None:
    token = "xoxb-" + "1234567890-0987654321-" + "AbCdEfGhIjKlMnOpQrStUvWx"
    write(
        tmp_path,
        "app/slack/client.py",
        f"def slack_client():\n    return WebClient(token='{token}')\n",
    )
    toolbox.snapshot = Snapshot(tmp_path, "b" * 40, toolbox.snapshot.repo)
    result = search_only.answer("where is the slack client built?", toolbox)
    assert "app/slack/client.py" in result.text
    assert token not in result.text


def test_config_secrets_in_snippets_are_masked_with_the_whole_file(
    tmp_path: Path, toolbox: Toolbox
) -> None:
    # Given an INI file whose password only its path marks as data (the same line is code in .py)
    password = "s3cr3t" + "Passw0rd"
    write(tmp_path, "config/ledger.ini", f"[ledger]\nledger_host = db\npassword = {password}\n")
    toolbox.snapshot = Snapshot(tmp_path, "b" * 40, toolbox.snapshot.repo)

    # When a search-only answer quotes it
    result = search_only.answer("where is the ledger password configured?", toolbox)

    # Then the snippet cites the file with the value masked
    assert "config/ledger.ini" in result.text
    assert password not in result.text
    assert "password = [REDACTED:secret-assignment]" in result.text


def test_rankings_repeat_exactly_even_when_the_raw_cap_cuts_the_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given far more matching files than the raw cap lets in
    for i in range(400):
        write(
            tmp_path,
            f"pkg{i % 7}/mod{i}.py",
            f"def handler_{i}(event):\n    return event  # handler\n",
        )
    monkeypatch.setattr(search_only, "RAW_MATCHES_PER_TERM", 50)
    snap = Snapshot(tmp_path, "c" * 40, RepoRef("many", str(tmp_path)))
    # When the same question is asked again and again
    runs = [
        [e.path for e in search_only.answer("where is the event handler?", Toolbox(snap)).evidence]
        for _ in range(5)
    ]
    # Then the same evidence comes back every time
    assert all(r == runs[0] for r in runs) and runs[0]


def test_the_definition_a_question_names_wins_over_the_code_that_uses_it(tmp_path: Path) -> None:
    # Given a small class and a long function that says its name (and the question's words) often
    write(tmp_path, "app/render.py", "class Widget:\n    '''A box.'''\n    size = 1\n")
    uses = "".join(f"    w{i} = Widget()  # define widget {i}\n" for i in range(30))
    write(tmp_path, "app/build.py", f"def build_widgets():\n{uses}    return w0\n")
    snap = Snapshot(tmp_path, "f" * 40, RepoRef("named", str(tmp_path)))
    # When the question asks where that class is defined
    result = search_only.answer("Where is the `Widget` class defined?", Toolbox(snap))
    # Then its definition is first, cited at its own line rather than at a use
    top = result.evidence[0]
    assert (top.path, top.line, top.end_line, top.name) == ("app/render.py", 1, None, "Widget")
    assert "`app/render.py:1`" in result.text


def test_a_folder_the_question_names_outranks_its_twins(tmp_path: Path) -> None:
    # Given two charts' values, the one the question does not name saying more of its words
    values = "service:\n  ## the port the database listens on{}\n  port: 5432\n"
    write(tmp_path, "charts/alpha/values.yaml", values.format(" (zeta chart database port)"))
    write(tmp_path, "charts/zeta/values.yaml", values.format(""))
    snap = Snapshot(tmp_path, "a" * 40, RepoRef("charts", str(tmp_path)))
    # When the question names one chart
    result = search_only.answer(
        "Which port does the zeta chart's database listen on?", Toolbox(snap)
    )
    # Then that chart's file comes first
    assert result.evidence[0].path == "charts/zeta/values.yaml"


def test_docs_count_in_full_when_the_question_asks_about_docs(tmp_path: Path) -> None:
    # Given a page generator under docs/ and a source function with the same words
    gen = "def render_message_pages(messages):\n    '''Write one {}page per message.'''\n"
    write(tmp_path, "docs/exts/message_pages.py", gen.format("docs ") + "    return messages\n")
    write(tmp_path, "app/pages.py", gen.format("") + "    return messages\n")
    snap = Snapshot(tmp_path, "d" * 40, RepoRef("docs", str(tmp_path)))
    # When a question is not about docs, the source comes first; when it is, the docs' code does
    plain = search_only.answer("What renders one page per message?", Toolbox(snap))
    assert plain.evidence[0].path == "app/pages.py"
    docs = search_only.answer(
        "The docs have one page per message: what renders them?", Toolbox(snap)
    )
    assert docs.evidence[0].path == "docs/exts/message_pages.py"


def test_a_default_is_answered_by_the_setting_not_the_function_that_reads_it(
    tmp_path: Path,
) -> None:
    # Given a constant and a function whose body says the question's words more often
    uses = "".join(
        f"    cache_limit_{i} = CACHE_SIZE  # cache size of entry {i}\n" for i in range(5)
    )
    write(tmp_path, "app/cache.py", f"CACHE_SIZE = 128\n\n\ndef grow_cache(entries):\n{uses}")
    snap = Snapshot(tmp_path, "e" * 40, RepoRef("defaults", str(tmp_path)))
    # When the question asks for a default
    result = search_only.answer("What is the default cache size?", Toolbox(snap))
    # Then the constant is cited
    assert (result.evidence[0].path, result.evidence[0].line) == ("app/cache.py", 1)


def test_a_definition_copied_into_many_files_does_not_crowd_out_the_one_that_answers(
    tmp_path: Path,
) -> None:
    # Given one program per folder with the same print_version, and one module that keeps the
    # notices, which says fewer of the question's words
    version = (
        "def print_version():\n    '''Print the version, the copyright and the warranty.'''\n"
        "    print('copyright warranty version')\n"
    )
    for name in ("alpha", "beta", "gamma", "delta", "epsilon", "zeta"):
        write(tmp_path, f"{name}/main.py", version)
    write(
        tmp_path,
        "legal/notices.py",
        "def warranty_notice():\n    '''The no-warranty notice.'''\n    return 'NO WARRANTY'\n",
    )
    snap = Snapshot(tmp_path, "c" * 40, RepoRef("progs", str(tmp_path)))
    # When the question asks where the warranty notice is
    result = search_only.answer("Where is the copyright and warranty notice?", Toolbox(snap))
    # Then the module that is not one of the copies is among the first three
    assert "legal/notices.py" in [e.path for e in result.evidence[:3]]


def test_a_file_the_question_names_by_quoting_it_is_first(tmp_path: Path) -> None:
    # Given a shell script `frob.sh` that prints its version among its other lines, and C
    # programs whose `print_version` functions say more of the question's words
    write(
        tmp_path,
        "tools/frob.sh",
        "#!/bin/sh\ncase \"$1\" in\n  --version)\n    echo 'frob 1.0'\n    exit 0 ;;\nesac\n",
    )
    for name in ("ls", "cat"):
        write(
            tmp_path,
            f"progs/{name}.c",
            'static void\nprint_version (void)\n{\n  printf ("1.0");\n}\n',
        )
    snap = Snapshot(tmp_path, "9" * 40, RepoRef("tools", str(tmp_path)))
    # When the question quotes the command
    result = search_only.answer("Where does `frob --version` print its version?", Toolbox(snap))
    # Then the script named like it comes first
    assert result.evidence[0].path == "tools/frob.sh"


def _top_among_fillers(tmp_path: Path, question: str, *, sha: str, repo: str) -> Evidence:
    """The first place search-only cites for `question` once 20 small unrelated modules sit
    beside what the test wrote, so that the question's words are rare."""
    for i in range(20):
        write(tmp_path, f"app/mod{i}.py", f"def f{i}(x):\n    return x + {i}\n")
    snap = Snapshot(tmp_path, sha * 40, RepoRef(repo, str(tmp_path)))
    return search_only.answer(question, Toolbox(snap)).evidence[0]


def test_a_class_whose_own_lines_answer_is_cited_over_the_function_that_registers_it(
    tmp_path: Path,
) -> None:
    # Given a plugin class whose docstring and attributes say what it does, its work done in a
    # method, and a function that only registers its option with a help text of the same words
    write(
        tmp_path,
        "app/ordering.py",
        "class NewFirstPlugin:\n"
        "    '''Plugin for the option that runs new tests first.'''\n\n"
        "    first = 'new'  # run new tests first\n\n"
        "    def reorder(self, items):\n"
        "        return sorted(items, key=lambda i: i.mtime)\n\n\n"
        "def add_options(parser):\n"
        "    parser.add('--nf', help='Run new tests first, then the rest')\n"
        "    parser.add('--ff', help='Run failed tests first, then the new tests')\n"
        "    parser.add('--sw', help='Stop at the first failure, run it first next time')\n",
    )
    # When the question asks how the option that runs new tests first works
    top = _top_among_fillers(
        tmp_path, "How does the option that runs new tests first work?", sha="9", repo="plugins"
    )
    # Then the class is cited, at its own line
    assert (top.path, top.line, top.name) == ("app/ordering.py", 1, "NewFirstPlugin")


def test_the_entry_point_is_cited_rather_than_its_helper_of_a_longer_name(tmp_path: Path) -> None:
    # Given a function and its helper, whose name is the function's plus a word and whose body
    # says more of the question's words
    write(
        tmp_path,
        "app/ordering.py",
        "def reorder_items(items):\n"
        "    '''Reorder the items so that a fixture's setup is shared.'''\n"
        "    scoped = {}\n"
        "    return list(reorder_items_atscope(items, scoped, 0))\n\n\n"
        "def reorder_items_atscope(items, scoped, scope):\n"
        "    '''Reorder items at one scope: items sharing a scoped fixture run together.'''\n"
        "    for item in items:\n"
        "        scoped.setdefault(item.fixture, []).append(item)\n"
        "    return [i for fixture in scoped for i in scoped[fixture]]\n",
    )
    # When the question asks where the reordering is
    top = _top_among_fillers(
        tmp_path,
        "Where are the tests reordered by the scope of their fixtures?",
        sha="8",
        repo="ordering",
    )
    # Then the entry point is cited, not its helper
    assert (top.path, top.line, top.name) == ("app/ordering.py", 1, "reorder_items")


def test_a_python_helper_with_a_leading_underscore_gives_way_to_the_public_function_it_serves(
    tmp_path: Path,
) -> None:
    # Given a module's internal loader and the public function that calls it, scoring alike
    write(
        tmp_path,
        "app/findpaths.py",
        "def _load_toml(path):\n"
        "    '''Load a pyproject.toml file's [tool.pytest] table.'''\n"
        "    return parse_toml(path).get('tool', {}).get('pytest')\n\n\n"
        "def locate_config(args):\n"
        "    '''Walk up from the arguments to the first config file that names pytest.'''\n"
        "    for base in args:\n"
        "        loaded = _load_toml(base / 'pyproject.toml')\n"
        "        if loaded is not None:\n"
        "            return base, loaded\n"
        "    return None, None\n",
    )
    # When the question could be either
    top = _top_among_fillers(
        tmp_path,
        "Where is the pytest table of pyproject.toml loaded from the config file?",
        sha="7",
        repo="findpaths",
    )
    # Then the public function is cited
    assert (top.path, top.line, top.name) == ("app/findpaths.py", 6, "locate_config")


def test_between_a_files_places_a_name_and_doc_outweigh_words_in_a_body(tmp_path: Path) -> None:
    # Given a function whose name and docstring say what the question asks, and one that only
    # registers markers with help texts saying a little more of its words
    write(
        tmp_path,
        "app/plugin.py",
        "def evaluate_skip_marks(item):\n"
        "    '''Evaluate the skip marks of an item: is the test skipped, is its condition true?'''\n"
        "    return item.reason\n\n\n"
        "def configure(config):\n"
        "    config.add_marker('skip_if', 'skip the test when the condition is true')\n"
        "    config.add_marker('skip', 'skip the test; the condition is always true')\n",
    )
    # When the question asks where the skip is decided
    top = _top_among_fillers(
        tmp_path,
        "Where do we decide that a test is skipped because its condition is true?",
        sha="6",
        repo="skipping",
    )
    # Then the function that evaluates the marks is cited
    assert (top.path, top.line, top.name) == ("app/plugin.py", 1, "evaluate_skip_marks")


def test_what_a_module_says_it_is_for_lifts_the_places_in_it(tmp_path: Path) -> None:
    # Given two modules with the same small function, one named a little closer to the question,
    # the other opening with a docstring that says what the module is for
    write(tmp_path, "app/format.py", "def fit_long(text, width):\n    return text[:width]\n")
    write(
        tmp_path,
        "app/wrap.py",
        '"""Long text is cut short here to fit the terminal."""\n\n\n'
        "def fit_text(text, width):\n    return text[:width]\n",
    )
    for i in range(6):
        write(tmp_path, f"app/mod{i}.py", f"def f{i}():\n    return {i}\n")
    snap = Snapshot(tmp_path, "7" * 40, RepoRef("entries", str(tmp_path)))
    # When the question says what the docstring says
    result = search_only.answer("Where is long text cut short to fit the terminal?", Toolbox(snap))
    # Then that module's function comes first, cited at its own line
    assert (result.evidence[0].path, result.evidence[0].line) == ("app/wrap.py", 4)


_SEED_PROBE = """
import json
from codeask import search_only
from codeask.search.lines import Question, score_lines
out = []
for tag in "bcdfghjklmnpqrstvwxz":  # twenty sets of names: some set iterates another way
    a, b, c, d, e = (f"{x}vq{tag}m" for x in "abcde")
    worth = {a: 0.1, b: 0.2, c: 0.3, d: 0.5, e: 0.1}
    body = [f"{d} {e}", f"{a} {b} {c}"]  # 0.5 + 0.1 against 0.1 + 0.2 + 0.3, in some order
    _, _, line = search_only._read_body(body, 1, worth)
    scored = score_lines(body, 1, 2, Question(worth, {w: w for w in worth}))
    out.append([line, {n: repr(v[1]) for n, v in scored.lines.items()}])
print(json.dumps(out))
"""


def test_body_and_line_scores_do_not_depend_on_the_hash_seed() -> None:
    # Given lines saying words whose worths sum to the same in exact arithmetic, and not in
    # floating point unless summed exactly
    # When their scores are computed in processes with different hash seeds (a Lambda cold start
    # draws a new one), so that sets of words iterate in different orders
    outs = [
        subprocess.run(
            [sys.executable, "-c", _SEED_PROBE],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout  # fmt: skip
        for seed in range(4)
    ]
    # Then every float comes out bit for bit the same
    assert outs[0] and all(o == outs[0] for o in outs)


def test_a_body_that_runs_the_question_words_together_says_them(tmp_path: Path) -> None:
    # Given a function that writes "tests failed" and "max fail" as lower-case compounds, and
    # one that says a single question word apart, more often
    write(tmp_path, "run/session.py", "def on_report(self, report):\n"
          "    self.testsfailed += 1\n    if self.testsfailed >= self.maxfail:\n"
          "        self.halt()\n")  # fmt: skip
    write(tmp_path, "run/listing.py", "def show_all(items):\n"
          + "".join(f"    print(items[{i}])  # tests\n" for i in range(6)))  # fmt: skip
    snap = Snapshot(tmp_path, "d" * 40, RepoRef("compound", str(tmp_path)))
    # When the question writes those words apart
    result = search_only.answer("Where are failed tests counted against the max?", Toolbox(snap))
    # Then the function that says them run together comes first
    assert result.evidence[0].path == "run/session.py"


def test_a_question_in_other_words_finds_the_code_by_its_synonyms(tmp_path: Path) -> None:
    # Given helpers named in the code's words (redact, sort), and others that say the question's
    # plainer words once each, in their bodies
    write(tmp_path, "util/urls.py", "def redact_netloc(netloc):\n    return netloc\n\n\n"
          "def sort_key(candidate):\n    return candidate\n")  # fmt: skip
    write(tmp_path, "util/other.py", "def prompt_user(prompt):\n    return input(prompt)  # url\n"
          "\n\ndef choose(items):\n    return items[0]  # candidates\n")  # fmt: skip
    snap = Snapshot(tmp_path, "9" * 40, RepoRef("synonyms", str(tmp_path)))
    # When questions say "mask" and "rank"
    masked = search_only.answer("Which helper masks the password in a URL?", Toolbox(snap))
    ranked = search_only.answer("How are the candidates ranked?", Toolbox(snap))
    # Then each cites the helper named in the code's words
    assert (masked.evidence[0].path, masked.evidence[0].name) == ("util/urls.py", "redact_netloc")
    assert (ranked.evidence[0].path, ranked.evidence[0].name) == ("util/urls.py", "sort_key")


def test_a_british_word_also_finds_text_written_the_british_way(tmp_path: Path) -> None:
    # Given a settings file, with no definitions to index, written the British way
    write(tmp_path, "conf/theme.txt", "header: plain\nbanner colour: dark red\n")
    write(tmp_path, "conf/other.txt", "header: bold\n")
    snap = Snapshot(tmp_path, "5" * 40, RepoRef("british", str(tmp_path)))
    # When the question spells it that way too
    result = search_only.answer("Where is the colour chosen?", Toolbox(snap))
    # Then ripgrep finds the line: the American stem alone would not
    assert [(e.path, e.line) for e in result.evidence[:1]] == [("conf/theme.txt", 2)]
