"""Behaviour of answer verification: which paths count as mentions and how each is judged."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codeask.snapshot import RepoRef, Snapshot
from codeask.verify import Mention, Verification, settled, verify_answer, warning_text
from conftest import examples

SHA = "a3f9c21" + "0" * 33
BLOB = f"https://github.com/acme/billing/blob/{SHA}"

TREE: dict[str, int] = {  # path -> number of lines
    "Makefile": 12,
    "Dockerfile": 8,
    "LICENSE": 21,
    "README.md": 40,
    ".github/workflows/ci.yml": 30,
    "billing/__init__.py": 1,
    "billing/worker.py": 141,
    "billing/retry.py": 20,
    "api/__init__.py": 3,
    "config/settings.yaml": 5,
    "deploy/settings.yaml": 50,
    "services/ledger/posting.py": 10,
    "web/src/app.tsx": 60,
    "web/app/[id]/page.tsx": 9,
    "prisma/schema.prisma": 25,
    "docs/my notes.md": 4,
    # Deny-listed: present on disk, never visible through the snapshot.
    ".env": 2,
    "deploy/prod.pem": 3,
}


@pytest.fixture
def snap(tmp_path: Path) -> Snapshot:
    root = tmp_path / "repo"
    for rel, n in TREE.items():
        f = root / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("".join(f"line {i}\n" for i in range(1, n + 1)))
    (tmp_path / "outside.py").write_text("x = 1\n")
    return Snapshot(
        root=root, sha=SHA, repo=RepoRef(name="billing", url="https://github.com/acme/billing.git")
    )


def only(v: Verification) -> Mention:
    assert len(v.mentions) == 1, v.mentions
    return v.mentions[0]


def test_seed_case_flags_the_invented_file_and_keeps_the_real_citation(snap: Snapshot) -> None:
    # Given an answer citing a real line next to an invented module
    answer = (
        "Retries are scheduled in `billing/worker.py:141`, and the payload is checked "
        "by `utils/validation.py` before it is queued."
    )
    # When it is verified
    v = verify_answer(answer, snap)
    # Then exactly the invented path is unverified, with a reason naming the SHA
    assert not v.ok
    assert [(m.path, m.reason) for m in v.unverified] == [
        ("utils/validation.py", "no such file at a3f9c21")
    ]
    (cite,) = v.citations
    assert (cite.text, cite.path, cite.start_line, cite.end_line) == (
        "billing/worker.py:141",
        "billing/worker.py",
        141,
        None,
    )
    assert cite.url == f"{BLOB}/billing/worker.py#L141"
    assert answer[cite.span[0] : cite.span[1]] == "billing/worker.py:141"


@pytest.mark.parametrize(
    ("written", "start", "end", "reason"),
    [
        ("billing/worker.py:141", 141, None, None),
        ("billing/worker.py:10-20", 10, 20, None),
        ("billing/worker.py:10–20", 10, 20, None),  # en dash
        ("billing/worker.py#L10", 10, None, None),
        ("billing/worker.py#L10-L20", 10, 20, None),
        ("billing/worker.py#L10-20", 10, 20, None),
        ("billing/worker.py:10:5", 10, None, None),  # line:col
        ("billing/worker.py (line 141)", 141, None, None),
        ("billing/worker.py, line 141", 141, None, None),
        ("billing/worker.py, lines 10 to 20", 10, 20, None),
        ("lines 10-20 of billing/worker.py", 10, 20, None),
        ("billing/worker.py:142", 142, None, "line 142 is past the end (file has 141 lines)"),
        ("billing/worker.py:100-900", 100, 900, "line 900 is past the end (file has 141 lines)"),
        ("billing/worker.py:20-10", 20, 10, "reversed range 20-10"),
        ("billing/worker.py:0", 0, None, "line 0 does not exist (lines start at 1)"),
    ],
)
def test_line_references_are_checked_against_the_file(
    snap: Snapshot, written: str, start: int, end: int | None, reason: str | None
) -> None:
    # Given a sentence citing lines of a 141-line file
    # When it is verified
    m = only(verify_answer(f"The retry loop is at {written}.", snap))
    # Then the lines are parsed and checked
    assert (m.path, m.start_line, m.end_line) == ("billing/worker.py", start, end)
    assert m.reason == reason
    assert m.verified is (reason is None)
    assert (m.url is not None) is (reason is None)


@pytest.mark.parametrize(
    ("answer", "path"),
    [
        ("Run the `Makefile` target.", "Makefile"),
        ("Build with the Makefile, then push.", "Makefile"),
        ("The image comes from Dockerfile:3.", "Dockerfile"),
        ("It is MIT (see LICENSE).", "LICENSE"),
        ("CI runs in .github/workflows/ci.yml.", ".github/workflows/ci.yml"),
        ("The shell is in `web/src/app.tsx:12`.", "web/src/app.tsx"),
        ("Models live in prisma/schema.prisma.", "prisma/schema.prisma"),
        ("See `docs/my notes.md` for background.", "docs/my notes.md"),
        ("The route is web/app/[id]/page.tsx.", "web/app/[id]/page.tsx"),
        ("Start at ./billing/worker.py.", "billing/worker.py"),
        ("Start at **billing/worker.py**; it is short.", "billing/worker.py"),
        ("Start at _billing/worker.py_ (italics).", "billing/worker.py"),
        ("Read [the worker](billing/worker.py:12) first.", "billing/worker.py"),
    ],
)
def test_any_existing_file_counts_whatever_its_name(snap: Snapshot, answer: str, path: str) -> None:
    # Given an answer naming a file that exists, in any common markup
    # When it is verified
    v = verify_answer(answer, snap)
    # Then it is a verified citation of that file, with a permalink
    assert v.ok
    assert [m.path for m in v.citations] == [path]
    assert v.citations[0].url is not None


def test_markdown_link_text_and_target_are_one_citation(snap: Snapshot) -> None:
    # Given a markdown link whose text and target are the same path and line
    v = verify_answer("See [billing/worker.py:12](billing/worker.py:12).", snap)
    # Then both are verified mentions, deduplicated into one citation
    assert len(v.mentions) == 2 and v.ok
    assert [(m.path, m.start_line) for m in v.citations] == [("billing/worker.py", 12)]


@pytest.mark.parametrize(
    ("written", "path", "kind", "has_url"),
    [
        ("worker.py:141", "billing/worker.py", "file", True),  # unique basename
        ("`posting.py`", "services/ledger/posting.py", "file", True),
        ("ledger/posting.py:2", "services/ledger/posting.py", "file", True),  # unique suffix
        ("`app/[id]`", "web/app/[id]", "dir", False),  # a directory's unique suffix
        ("`__init__.py`", "__init__.py", "ambiguous", False),  # two exist
        ("settings.yaml:3", "settings.yaml", "ambiguous", False),
        ("settings.yaml:40", "settings.yaml", "ambiguous", False),  # fits one of the two
    ],
)
def test_bare_names_and_suffixes_resolve_when_unambiguous(
    snap: Snapshot, written: str, path: str, kind: str, has_url: bool
) -> None:
    # Given a bare file name or a partial path
    # When it is verified
    m = only(verify_answer(f"Look at {written} for details.", snap))
    # Then it is verified; a unique match resolves to the full path and gets a permalink
    assert m.verified
    assert (m.path, m.kind, m.url is not None) == (path, kind, has_url)


def test_ambiguous_names_are_not_citations(snap: Snapshot) -> None:
    # Given an answer with a name two files share
    v = verify_answer("Each package has an `__init__.py`.", snap)
    # Then nothing is flagged, but nothing is cited either
    assert v.ok and v.citations == []


def test_ambiguous_name_with_lines_past_every_namesake_is_flagged(snap: Snapshot) -> None:
    m = only(verify_answer("See settings.yaml:51.", snap))
    assert not m.verified
    assert m.reason == (
        "line 51 is past the end of every file named settings.yaml (longest has 50 lines)"
    )


@pytest.mark.parametrize(
    ("written", "path", "verified"),
    [
        ("`src/billing/`", "src/billing", False),  # a directory that does not exist ...
        ("billing/", "billing", True),
        ("`services/ledger`", "services/ledger", True),
        ("ledger/", "services/ledger", True),  # unique directory suffix
        (".github/workflows/", ".github/workflows", True),
    ],
)
def test_directories_are_verified_without_lines(
    snap: Snapshot, written: str, path: str, verified: bool
) -> None:
    # Given a directory mention
    v = verify_answer(f"The code is under {written} today.", snap)
    if not verified:
        # ... is not a claim to be a file, so it is not flagged
        assert v.mentions == []
        return
    # Then it is a verified mention but not a file citation
    m = only(v)
    assert (m.path, m.kind, m.verified, m.start_line) == (path, "dir", True, None)
    assert v.citations == []


def test_a_line_on_a_directory_is_unverified(snap: Snapshot) -> None:
    m = only(verify_answer("It starts at billing/:3.", snap))
    assert not m.verified
    assert m.reason == "billing is a directory, so it has no line 3"


def test_a_line_on_a_name_only_directories_share_is_unverified(tmp_path: Path) -> None:
    # Given two directories named `shared` and no file of that name
    for rel in ("api/shared/x.py", "web/shared/y.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    snap = Snapshot(tmp_path, SHA, RepoRef("billing", "https://github.com/acme/billing.git"))

    # When an answer cites a line of it
    m = only(verify_answer("It starts at shared:3.", snap))

    # Then it is flagged for what it is: a directory has no lines
    assert (m.kind, m.verified) == ("ambiguous", False)
    assert m.reason == "shared is a directory, so it has no line 3"


@pytest.mark.parametrize("lead", ["", "As shown, "])
def test_a_lines_phrase_before_a_path_is_read_at_the_start_of_the_answer(
    snap: Snapshot, lead: str
) -> None:
    m = only(verify_answer(f"{lead}lines 3-5 of billing/worker.py retry the job.", snap))
    assert (m.path, m.start_line, m.end_line, m.verified) == ("billing/worker.py", 3, 5, True)
    assert m.span[0] == len(lead)


@pytest.mark.parametrize("partial", ["See billing/worker.py:12.", "See billing/worker.py:12 – 14."])
def test_a_line_number_followed_by_a_dot_waits_for_what_follows(
    snap: Snapshot, partial: str
) -> None:
    # Given an answer still being written that has just reached a `.` after a line number
    final = partial + "5 for the ratio."

    # When it is asked how much of it is final
    cut, v = settled(partial, snap)

    # Then the path is held back (`:12.5` is no line 12, `12 – 14.5` no range), and what did
    # settle is what the finished answer says
    assert cut <= partial.index("billing")
    finished = {(m.span, m.start_line) for m in verify_answer(final, snap).mentions}
    assert all((m.span, m.start_line) in finished for m in v.mentions)


@pytest.mark.parametrize(
    "written",
    [
        "`utils/validation.py`",
        "utils/validation.py",
        "`validation.py`",
        "validation.py",
        "Billing/Worker.py",  # paths are case-sensitive
        "billing/worker.go",
        "`Jenkinsfile`",
        "billing/jobs.py:12",
        ".env.local:3",
        "`docs/missing notes.md`",  # the backticked name is still checked word by word
        "docs/guide.adoc",  # an extension not in the common list still makes a nested path a file
        "../outside.py:1",  # outside the snapshot: never opened
        "[the validator](utils/validation.py)",
    ],
)
def test_missing_files_that_claim_to_be_files_are_flagged(snap: Snapshot, written: str) -> None:
    # Given an answer that clearly names a file that is not in the tree
    v = verify_answer(f"The check lives in {written}, as before.", snap)
    # Then it is flagged as missing at the SHA
    assert v.unverified and all(m.reason == "no such file at a3f9c21" for m in v.unverified)


def test_outside_files_are_never_read(snap: Snapshot) -> None:
    # Given paths escaping the snapshot to a file that does exist on disk
    outside = snap.root.parent / "outside.py"
    v = verify_answer(f"Compare ../outside.py:1 and {outside}:1.", snap)
    # Then both are missing, not read
    assert [(m.verified, m.reason) for m in v.mentions] == [(False, "no such file at a3f9c21")] * 2


@pytest.mark.parametrize(
    "written", ["`.env`", ".env:1", "deploy/prod.pem:1", "`deploy/prod.pem`", "prod.pem:2"]
)
def test_deny_listed_files_look_exactly_like_missing_ones(snap: Snapshot, written: str) -> None:
    # Given an answer naming a deny-listed file that exists on disk
    m = only(verify_answer(f"The secret is read from {written} at start-up.", snap))
    # Then it is flagged as not existing, with nothing hinting at the deny-list
    assert not m.verified and m.url is None
    assert m.reason == "no such file at a3f9c21"


PROSE = """\
Short version: billing retries are handled by the worker, and/or by the scheduler, depending \
on input/output sizes; read/write paths differ. This is unrelated to TCP/IP or CI/CD, e.g. \
GitHub Actions, i.e. the usual, etc. We pinned v2.3.1 (was 1.2.3) and need Python 3.11, \
Node.js 20, Vue.js, Next.js, Socket.io and ASP.NET on the frontend side; the React/Next.js \
split and Express.js are historical. Ask ops@acme.com or see https://docs.acme.com/billing/\
retry.py?x=1#L3 and <https://acme.slack.com/archives/C1/p1|the thread about worker.py:900>, \
[the runbook](https://wiki.acme.com/runbooks/billing.md), example.com, slack.com, \
api.acme.io:8443, localhost:8080, redis:6379, mailto:billing@acme.com, \
ftp://files.acme.com/dump.sql and git@github.com:acme/billing.git. Mirrors: \
github.com/acme/billing/blob/main/x.py, gitlab.acme.com/acme/billing/-/blob/main/x.py. HTTP/1.1 and HTTP/2.0 both work; times like 10:30 \
are UTC (a.m./p.m.). Call `response.json()` or `request.json`, and hold `self.lock`. The \
`billing.worker` module, `Worker.run`, `os.path`, `std::fs::read` and `text/html` are \
fine, as is `/usr/local/bin/python` and `~/.config/codeask.toml`. We run 24/7, 50/50 split \
since 2024/01/05. Images: `bitnami/redis:7`, postgres:16; hosts db.prod:5432, \
cache.internal:6379. Globs `src/**/*.ts` and `*.test.ts` match `.py` and `.ts` files; the \
`.git` directory and `process.env` are untouched.

```python
data = json.load(open("fixtures/sample.json"))
```
```
Traceback (most recent call last):
  File "/app/billing/jobs.py", line 141, in retry
    at run (/srv/app/src/queue.js:12:3)
```
"""


def test_realistic_prose_raises_no_false_alarms(snap: Snapshot) -> None:
    # Given an answer full of slashes, dots, versions, URLs, e-mails and product names
    # When it is verified
    v = verify_answer(PROSE, snap)
    # Then nothing is flagged
    assert v.unverified == [], [(m.text, m.reason) for m in v.unverified]
    assert warning_text(v, []) is None


def test_prose_words_are_not_mentions_but_capitalised_file_names_are(snap: Snapshot) -> None:
    # Given a tree with `billing/` and a Makefile, and prose using those words
    v = verify_answer("The billing worker is built by the Makefile.", snap)
    # Then only the file name counts
    assert [m.path for m in v.mentions] == ["Makefile"]


def test_inside_fenced_code_only_line_citations_count(snap: Snapshot) -> None:
    # Given a code sample with a file:line header, runtime paths and the code's own strings
    answer = (
        "```\n# utils/validation.py:12\nopen('out/report.json')\nload('billing/retry.py')\n"
        "# billing/worker.py:3\n  at run (/app/src/queue.js:12:3)\n```"
    )
    # When it is verified
    v = verify_answer(answer, snap)
    # Then only the line-cited paths are mentions, and only the invented one is flagged
    assert [(m.path, m.verified) for m in v.mentions] == [
        ("utils/validation.py", False),
        ("billing/worker.py", True),
    ]


def test_mentions_come_in_answer_order_with_spans(snap: Snapshot) -> None:
    answer = "First `billing/retry.py:3`, then Makefile, then `utils/x.py`."
    v = verify_answer(answer, snap)
    assert [answer[m.span[0] : m.span[1]].strip("`") for m in v.mentions] == [
        "billing/retry.py:3",
        "Makefile",
        "utils/x.py",
    ]


def test_warning_lists_every_unverified_reference_and_every_search(snap: Snapshot) -> None:
    # Given an answer with an invented file and a line past the end, and two searches run
    answer = "See `utils/validation.py` and `billing/worker.py:900`; also `utils/validation.py`."
    v = verify_answer(answer, snap)
    # When the warning is rendered
    text = warning_text(v, ["`retry` in *.py", "`backoff`"])
    # Then it names each distinct problem once, with its reason, and the searches
    assert text == (
        "⚠️ Could not verify 2 references at a3f9c21: `utils/validation.py` (no such file), "
        "`billing/worker.py:900` (line 900 is past the end; the file has 141 lines). "
        "Searches run: `retry` in *.py, `backoff`."
    )


def test_warning_says_when_no_search_was_run(snap: Snapshot) -> None:
    v = verify_answer("It is in `utils/validation.py`.", snap)
    assert warning_text(v, []) == (
        "⚠️ Could not verify 1 reference at a3f9c21: `utils/validation.py` (no such file). "
        "No searches were run."
    )


def test_no_warning_when_everything_verifies(snap: Snapshot) -> None:
    v = verify_answer("It is in `billing/worker.py:1-141`.", snap)
    assert v.ok and warning_text(v, ["`retry`"]) is None


def test_unknown_remote_still_verifies_but_has_no_links(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x\n")
    local = Snapshot(root=tmp_path, sha=SHA, repo=RepoRef(name="a", url="/srv/git/a.git"))
    m = only(verify_answer("See a.py:1.", local))
    assert m.verified and m.url is None


def test_a_large_tree_and_a_long_answer_have_every_mention_judged(tmp_path: Path) -> None:
    # Given a 50k-file tree (listing faked; no line checks needed) and a 4 KB answer
    s = Snapshot(root=tmp_path, sha=SHA, repo=RepoRef(name="big", url="https://github.com/a/b"))
    files = tuple(sorted(f"pkg{i % 500}/mod{i % 37}/file_{i}.py" for i in range(50_000)))
    s.__dict__["files"] = files  # seeds the cached listing instead of writing 50k files
    sentence = "See pkg3/mod3/file_3.py, file_77.py, mod5/file_5.py and `nope/missing.py`. "
    answer = sentence * (4096 // len(sentence))
    # When it is verified (its speed is measured by `make bench`, not asserted here)
    v = verify_answer(answer, s)
    # Then every mention is judged, and only the missing path is unverified
    assert len(v.mentions) == 4 * (4096 // len(sentence))
    assert {m.path for m in v.unverified} == {"nope/missing.py"}


@pytest.mark.parametrize("body", ["a = 1\nb = 2\nc = 3", "only line", "x\n\ny"])
def test_the_last_line_of_a_file_without_a_final_newline_can_be_cited(
    tmp_path: Path, body: str
) -> None:
    # Given a file whose last line has no newline after it
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "tail.py").write_text(body)
    snap = Snapshot(tmp_path, SHA, RepoRef("billing", "https://github.com/acme/billing.git"))
    last = body.count("\n") + 1
    # When an answer cites that last line, and the line after it
    v = verify_answer(f"See `src/tail.py:{last}` and `src/tail.py:{last + 1}`.", snap)
    # Then the last line verifies and the one after it is past the end
    assert [(m.start_line, m.verified) for m in v.mentions] == [(last, True), (last + 1, False)]
    lines = "1 line" if last == 1 else f"{last} lines"
    assert v.mentions[1].reason == f"line {last + 1} is past the end (file has {lines})"


# --- property: every citation in arbitrary prose is found --------------------------------------

_CITABLE = {p: n for p, n in TREE.items() if "/" in p and " " not in p and p not in (".env",)}
_CITABLE.pop("deploy/prod.pem")
_WORDS = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs", "Cc"), exclude_characters="`/:#\\.<>"),
    min_size=1,
    max_size=12,
)


@st.composite
def prose_with_citations(draw: st.DrawFn) -> tuple[str, list[tuple[str, int]]]:
    """Words of any script with `path:line` citations of real files among them, bare or in
    backticks, followed by ordinary punctuation."""
    parts: list[str] = []
    cited: list[tuple[str, int]] = []
    for _ in range(draw(st.integers(1, 6))):
        parts += draw(st.lists(_WORDS, max_size=8))
        path = draw(st.sampled_from(sorted(_CITABLE)))
        line = draw(st.integers(1, _CITABLE[path]))
        mention = f"{path}:{line}"
        parts.append(
            draw(st.sampled_from([mention, f"`{mention}`", f"({mention})"]))
            + draw(st.sampled_from(["", ",", ".", ";", "!"]))
        )
        cited.append((path, line))
    parts += draw(st.lists(_WORDS, max_size=8))
    return " ".join(parts), cited


@settings(
    max_examples=examples(200),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(doc=prose_with_citations())
def test_every_citation_in_arbitrary_prose_is_found_and_verified(
    snap: Snapshot, doc: tuple[str, list[tuple[str, int]]]
) -> None:
    text, cited = doc
    v = verify_answer(text, snap)
    found = [(m.path, m.start_line) for m in v.mentions]
    assert found == cited
    assert all(m.verified for m in v.mentions)


@pytest.mark.parametrize(
    ("written", "lines", "reason"),
    [
        ("`docs/my notes.md:3`", (3, None), None),
        ("`docs/my notes.md:2-4`", (2, 4), None),
        ("`docs/my notes.md#L2-L4`", (2, 4), None),
        ("`docs/my notes.md`:3", (3, None), None),
        ("`docs/my notes.md`:2-4", (2, 4), None),
        ("`docs/my notes.md:2-9`", (2, 9), "line 9 is past the end (file has 4 lines)"),
    ],
)
def test_a_path_with_spaces_in_backticks_carries_its_lines(
    snap: Snapshot, written: str, lines: tuple[int, int | None], reason: str | None
) -> None:
    m = only(verify_answer(f"The notes are in {written}.", snap))
    assert (m.path, m.start_line, m.end_line, m.reason) == ("docs/my notes.md", *lines, reason)


@pytest.mark.parametrize(
    "answer",
    ["It imports `@acme/ui/button.tsx` from the design system.", "It imports @acme/ui/button.tsx."],
)
def test_an_at_scoped_package_path_is_not_a_missing_file(snap: Snapshot, answer: str) -> None:
    # Given an answer naming an npm-scoped module, which lives in node_modules, not the snapshot
    # When it is verified
    v = verify_answer(answer, snap)
    # Then it is no mention at all, so nothing is flagged
    assert v.mentions == []


def test_a_code_span_that_only_starts_with_a_name_does_not_quote_it(snap: Snapshot) -> None:
    # Given a capitalised `X.js` alone in a code span (a file claim) and one starting a command
    alone = verify_answer("Run `Widget.js` to start.", snap)
    command = verify_answer("Run `Widget.js --watch` to start.", snap)
    # Then only the one standing alone is judged as a file (and is missing)
    assert [(m.path, m.reason) for m in alone.mentions] == [
        ("Widget.js", "no such file at a3f9c21")
    ]
    assert command.mentions == []


def test_a_backticked_path_with_spaces_is_named_without_its_backticks(snap: Snapshot) -> None:
    # Given a path with spaces in backticks and its line after the closing backtick
    m = only(verify_answer("The notes are in `docs/my notes.md`:3.", snap))
    # Then the mention reads as the plain citation
    assert (m.text, m.path, m.start_line, m.verified) == (
        "docs/my notes.md:3",
        "docs/my notes.md",
        3,
        True,
    )


def test_a_lines_phrase_around_a_backticked_path_is_read(snap: Snapshot) -> None:
    # A simple path in backticks is left to the main scan, which reads the words around it
    v = verify_answer("See lines 3-5 of `billing/worker.py` and `billing/retry.py` (line 7).", snap)
    assert [(m.path, m.start_line, m.end_line) for m in v.mentions] == [
        ("billing/worker.py", 3, 5),
        ("billing/retry.py", 7, None),
    ]


def test_an_escaped_word_that_names_no_file_is_no_mention(snap: Snapshot) -> None:
    # Escapes are read as a path the tools showed only when they name one; a regex is prose
    v = verify_answer(r"Search for \bretry\b or worker\.py to find them.", snap)
    assert v.mentions == []


@pytest.mark.parametrize("text", ["Read `a b`", "Read `billing/ x`"])
def test_settled_never_cuts_inside_a_code_span_that_ends_the_text(
    snap: Snapshot, text: str
) -> None:
    # Given an answer whose last characters close a code span with a space inside it
    cut, _ = settled(text, snap)
    # Then the span is held whole: what settles ends before its opening backtick
    assert cut == text.index("`") - 1


@pytest.mark.parametrize(
    ("answer", "path"),
    [
        ("The key is in ./deploy/prod.pem:2.", "deploy/prod.pem"),
        ("See ../outside.py:1.", "../outside.py"),
    ],
)
def test_a_refused_path_is_named_as_written(snap: Snapshot, answer: str, path: str) -> None:
    # A deny-listed or outside path is missing, named as written without a leading ./
    m = only(verify_answer(answer, snap))
    assert (m.path, m.kind, m.verified) == (path, "missing", False)


@pytest.mark.parametrize(
    ("answer", "text"),
    [
        ("(see billing/worker.py, line 12)", "billing/worker.py, line 12"),
        ("(see billing/worker.py line 3 to 5)", "billing/worker.py line 3 to 5"),
        ("See billing/worker.py (line 12).", "billing/worker.py (line 12)"),
    ],
)
def test_a_line_phrase_after_a_path_is_part_of_the_mention_up_to_its_number(
    snap: Snapshot, answer: str, text: str
) -> None:
    # A closing parenthesis belongs to the mention only when the phrase opened one
    assert only(verify_answer(answer, snap)).text == text
