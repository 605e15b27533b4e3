"""The command-line scans (options, netrc entries, config-setting commands) try their patterns only
where a match can start; they must find exactly what a scan of every offset finds."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeask.redact import assignments, scan
from codeask.redact.assignments import anchored

# Pieces that build the shapes these patterns read, their near misses, and what lies between.
PIECES = [
    "--", "---", "-p", "-p ", "--password ", "--token=", "--api-key ", "mysql", "mysqldump",
    "mariadb", "sshpass", "login", "docker login", "machine", "default", "password", "passwd",
    "account", "npm", "pnpm", "yarn", "pip3", "gcloud", "git", "github", "poetry", "composer",
    "bundle", "conda", "aws", "dotnet", "config", "configure", "set", "user-secrets", "--global",
    "--file f", "http.extraheader", "Authorization: Bearer ", "_authToken", "//registry.npmjs.org/:",
    "Xy7pQ2mnA9kL", "hunter2", "s3cr3tV4lue", "'", '"', "`", " ", "  ", "\t", "\n", "\r\n", "=",
    ":", ";", "|", "&", "(", "[", "x", "MYSQL", "Login", "é", "_",
    # whole shapes, so that most examples hold a match to find
    "docker login -p ", "mysql -u root -p", "sshpass -p ", "machine h login u password ",
    "default password ", "npm config set ", "pnpm config set ", "git config --global ", "aws configure set ",
    "dotnet user-secrets set ", "--db-password ",
]  # fmt: skip
CASES = [
    (assignments._OPTION, assignments._OPTION_AT, False),
    (assignments._NETRC, assignments._NETRC_AT, True),
    (assignments._SETTING, assignments._SETTING_AT, True),
]


def _found(matches: object) -> list[tuple[tuple[int, int], dict[str, str | None]]]:
    return [(m.span(), m.groupdict()) for m in matches]  # type: ignore[attr-defined]


@pytest.mark.parametrize(("pattern", "words", "lower"), CASES)
@settings(max_examples=300, deadline=None)
@given(parts=st.lists(st.sampled_from(PIECES), max_size=40))
def test_anchored_finds_what_every_offset_finds(
    pattern: re.Pattern[str], words: tuple[str, ...], lower: bool, parts: list[str]
) -> None:
    text = "".join(parts)
    text = text.lower() if lower else text
    assert _found(anchored(pattern, words, text)) == _found(pattern.finditer(text))


@pytest.mark.parametrize(
    "line",
    [
        "mysql -uroot -pXy7pQ2mnA9kL db",
        "sshpass -p Xy7pQ2mnA9kL ssh host",
        "docker login -u bob -p Xy7pQ2mnA9kL registry.example.com",
        "tool --password Xy7pQ2mnA9kL --verbose",
        'echo "machine example.com login bob password Xy7pQ2mnA9kL" > ~/.netrc',
        "npm config set //registry.npmjs.org/:_authToken Xy7pQ2mnA9kL",
        "git config --global http.extraheader 'Authorization: Bearer Xy7pQ2mnA9kL'",
    ],
)
def test_each_command_shape_is_still_masked_mid_text(line: str) -> None:
    # the shape far into a text, after lines of near misses, as in a long script
    text = "--- x --\nmachine\nlogin: y\ngit status\n" * 200 + line + "\n"
    masked, _ = scan(text)
    assert "Xy7pQ2mnA9kL" not in masked


SHAPES = [
    (assignments._OPTION, assignments._OPTION_AT, "run --password Xy7pQ2mnA9kL"),
    (assignments._OPTION, assignments._OPTION_AT, "run mysql -u root -pXy7pQ2mnA9kL"),
    (assignments._OPTION, assignments._OPTION_AT, "run mariadb -pXy7pQ2mnA9kL"),
    (assignments._OPTION, assignments._OPTION_AT, "run sshpass -p Xy7pQ2mnA9kL ssh"),
    (assignments._OPTION, assignments._OPTION_AT, "run docker login -p Xy7pQ2mnA9kL"),
    (assignments._NETRC, assignments._NETRC_AT, "x machine h login u password Xy7pQ2mnA9kL"),
    (assignments._NETRC, assignments._NETRC_AT, "x default login u password Xy7pQ2mnA9kL"),
    *(
        (assignments._SETTING, assignments._SETTING_AT, f"run {command} _authtoken xy7pq2mna9kl")
        for command in (
            "npm config set", "pnpm config set", "yarn config set", "pip config set",
            "pip3 config set", "gcloud config set", "npm set", "git config", "poetry config",
            "composer config", "bundle config", "conda config", "aws configure set",
            "dotnet user-secrets set",
        )
    ),
]  # fmt: skip


@pytest.mark.parametrize(("pattern", "words", "text"), SHAPES)
def test_anchored_finds_every_command_the_pattern_knows(
    pattern: re.Pattern[str], words: tuple[str, ...], text: str
) -> None:
    found = _found(anchored(pattern, words, text))
    assert found, text
    assert found == _found(pattern.finditer(text))


# --- The line around an assignment, found by bisection: the same spans as reading the line ------


def _reference_bare_literal_context(
    text: str, name_start: int, m: re.Match[str], _lines: object
) -> bool:
    """_bare_literal_context as it read the line's lead and tail as slices (quadratic on a long
    line, simple to check): the model the line index must agree with."""
    if name_start > 0 and text[name_start - 1] in "?&;":
        return True
    lead = text[text.rfind("\n", 0, name_start) + 1 : name_start]
    if lead.endswith("--"):
        return True
    if assignments._ENV_WORD.fullmatch(text, name_start, m.start("op") + 1) and (
        name_start == 0 or text[name_start - 1] in " \t\"'="
    ):
        return m.start("uv") == m.end("op")
    line_end = text.find("\n", m.end())
    tail = re.compile(r"[ \t]*(?:[#;].*|\\)?\r?")
    if tail.fullmatch(text, m.end(), len(text) if line_end < 0 else line_end) is None:
        return False
    if assignments._LINE_LEAD.fullmatch(lead) is None:
        return False
    if m.group("op") == ":":
        return True
    op_start, value_start = m.start("op"), m.start("uv")
    return m.group("op") == "=" and text[op_start - 1] not in " \t" and value_start == op_start + 1


def _reference_leads_its_line(text: str, name_start: int, syntax: str, _lines: object) -> bool:
    lead = text[text.rfind("\n", 0, name_start) + 1 : name_start].strip(" \t\"'")
    if syntax not in assignments.LINE_SYNTAXES:
        return "#" not in lead
    return assignments._CONFIG_LEAD.fullmatch(lead) is not None


LEADS = ["", "  ", "\t", "export ", "override ", "- ", "12 | ", "> 3  ", "x = {", "a, ", "# ",
         "; ", "foo ", "--", "?", "&", "run ", '"', "'", "a:b ", "{a, ", "x # y, "]  # fmt: skip
NAMES = ["password", "api_key", "token", "DB_PASSWORD", "secret", "PGPASSWORD", "auth_token"]
OPS = [":", ": ", "=", " = ", "=>", ":=", "= "]
VALUES = ["Xy7pQ2mnA9kL", "s3cr3tV4lu3Th4t", "hunter22x", "value", '"Xy7pQ2mnA9kL"', "x"]
TAILS = [
    "",
    " ",
    " # c",
    " ;",
    ";",
    " --",
    "-",
    " \\",
    "\\",
    "\r",
    " \r",
    " psql",
    ",",
    " x",
    "\t#",
]
LINE = st.tuples(*(st.sampled_from(part) for part in (LEADS, NAMES, OPS, VALUES, TAILS)))


@pytest.mark.parametrize("syntax", [None, "yaml", "ini", "make", "shell", "hcl", "dockerfile"])
@settings(max_examples=400, deadline=None)
@given(lines=st.lists(LINE, min_size=1, max_size=6), sep=st.sampled_from(["\n", "\r\n", " "]))
def test_the_line_index_judges_assignments_as_reading_the_line_does(
    syntax: str | None, lines: list[tuple[str, ...]], sep: str
) -> None:
    # Given lines of assignments with every lead and tail the rules read, or one long line
    text = sep.join("".join(line) for line in lines)
    low = text.lower()
    # When they are judged with the line index, then as by reading each line's lead and tail
    found = list(assignments.assignment_spans(text, low, syntax))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(assignments, "_bare_literal_context", _reference_bare_literal_context)
        mp.setattr(assignments, "_leads_its_line", _reference_leads_its_line)
        expected = list(assignments.assignment_spans(text, low, syntax))
    assert found == expected


def test_a_flag_s_dashes_are_read_before_the_name_on_its_line() -> None:
    # A name at the text's start has no `--` before it, whatever the text ends with (a negative
    # offset would read the end); `--password=` is a flag's value, a literal
    text = "password = Xy7pQ2mnA9kL --"
    assert list(assignments.assignment_spans(text, text.lower())) == []
    text = "run --password=Xy7pQ2mnA9kL"
    assert [s[:2] for s in assignments.assignment_spans(text, text.lower())] == [(15, 27)]
