"""Any argument a model can send, of any type, comes back as an error result the model can act on."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from codeask.snapshot import RepoRef, Snapshot
from codeask.tools import Toolbox

SHA = "c0ffee1" + "0" * 33
HUGE = 10**5000  # past Python's 4,300-digit limit for turning an int into a string


@pytest.fixture
def toolbox(tmp_path: Path) -> Toolbox:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("".join(f"line_{i} = {i}\n" for i in range(1, 41)))
    return Toolbox(Snapshot(tmp_path, SHA, RepoRef("app", str(tmp_path))))


BAD_LINES: list[Any] = [
    "²", "٣", "1e3", " 7 ", "+3", "0x10", "-1", "", "7.0", "12abc", "9" * 5000,
    2.5, float("nan"), float("inf"), HUGE, -HUGE, -1, 0, 10**12, True, False,
    [], [1], {}, {"n": 1},
]  # fmt: skip
BAD_STRINGS: list[Any] = [
    "a\x00b", "\ud800", "x\udfff.py", 12, 1.5, True, [], ["src"], {}, {"a": "b"}, "x" * 5000,
]  # fmt: skip


def _id(value: Any) -> str:
    if isinstance(value, int) and value.bit_length() > 64:
        return "huge" if value > 0 else "-huge"
    return repr(value)[:20]


def assert_error(result: Any, *needles: str) -> None:
    assert result.is_error, result.text
    assert result.text.startswith("Error: "), result.text
    assert "Traceback" not in result.text
    result.text.encode("utf-8")  # plain text, whatever came in
    for needle in needles:
        assert needle in result.text, result.text


@pytest.mark.parametrize("value", BAD_LINES, ids=_id)
@pytest.mark.parametrize("key", ["start_line", "end_line"])
def test_a_bad_line_number_is_an_error_result(toolbox: Toolbox, key: str, value: Any) -> None:
    # Given a line number that is no whole number of at least 1, or too big to mean a line
    # When the model sends it
    result = toolbox.run("read_file", {"path": "src/app.py", key: value})
    # Then it gets an error naming the argument, and the call is logged like any other
    assert_error(result, key)
    assert toolbox.calls[-1].is_error


@pytest.mark.parametrize("value", BAD_STRINGS, ids=_id)
@pytest.mark.parametrize(
    ("tool", "key", "base"),
    [
        ("search_code", "pattern", {}),
        ("search_code", "glob", {"pattern": "line"}),
        ("search_code", "path", {"pattern": "line"}),
        ("read_file", "path", {}),
        ("list_files", "glob", {}),
        ("list_files", "path", {}),
    ],
)
def test_a_bad_string_is_an_error_result(
    toolbox: Toolbox, tool: str, key: str, base: dict[str, Any], value: Any
) -> None:
    result = toolbox.run(tool, {**base, key: value})
    assert_error(result, key)


def test_numbers_the_schema_allows_are_taken(toolbox: Toolbox) -> None:
    # Whole floats (JSON's 3.0) and plain decimal strings are whole numbers; null is absent.
    for start in (3, 3.0, "3"):
        result = toolbox.run(
            "read_file", {"path": "src/app.py", "start_line": start, "end_line": 4}
        )
        assert not result.is_error and "3  line_3 = 3" in result.text
    result = toolbox.run("read_file", {"path": "src/app.py", "start_line": None})
    assert not result.is_error and "lines 1-40 of 40" in result.text


@pytest.mark.parametrize(
    ("name", "args", "needle"),
    [
        ("read_file", "src/app.py", "JSON object"),
        ("read_file", ["src/app.py"], "JSON object"),
        ("read_file", None, "JSON object"),
        ("read_file", 7, "JSON object"),
        ("read_file", {}, "needs 'path'"),
        ("read_file", {"path": None}, "needs 'path'"),
        ("search_code", {"pattern": "x", "flags": "-f"}, "no argument 'flags'"),
        ("search_code", {"pattern": "x", "\x1b[31m": 1}, "no argument '\\x1b[31m'"),
        ("delete_repo", {}, "unknown tool"),
        ("", {}, "unknown tool"),
        (None, {}, "unknown tool"),
        (["read_file"], {}, "unknown tool"),
        ("read_file\x00", {"path": "src/app.py"}, "unknown tool"),
    ],
)
def test_malformed_calls_are_error_results(
    toolbox: Toolbox, name: Any, args: Any, needle: str
) -> None:
    assert_error(toolbox.run(name, args), needle)


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_an_unexpected_fault_inside_a_tool_is_an_error_result_logged_with_its_type(
    toolbox: Toolbox,
) -> None:
    # Given a tool that breaks in a way nobody planned for
    def broken(args: dict[str, Any]) -> str:
        raise KeyError("nobody expected this")

    toolbox.tools["list_files"].run = broken
    log = Records()
    logging.getLogger("codeask").addHandler(log)
    try:
        # When the model calls it
        result = toolbox.run("list_files", {})
    finally:
        logging.getLogger("codeask").removeHandler(log)
    # Then the model reads that the fault is the tool's, and the log names the exception's type
    assert_error(result, "list_files failed inside codeask (KeyError)", "Try another way")
    assert any(
        getattr(r, "error", None) == "KeyError" and getattr(r, "tool", None) == "list_files"
        for r in log.records
    )
    # And the next call works as usual
    assert not toolbox.run("read_file", {"path": "src/app.py", "end_line": 1}).is_error


def test_a_tool_past_its_deadline_is_an_error_result(toolbox: Toolbox) -> None:
    import time

    toolbox.timeout_s = 0.2

    def slow(args: object) -> str:
        time.sleep(2)
        return ""

    toolbox.tools["list_files"].run = slow
    assert_error(toolbox.run("list_files", {}), "ran out of time after 0.2 s")


@pytest.mark.parametrize("path", ["..%2f..%2fetc", "src/missing", "src/app.py/x"])
def test_a_search_under_a_path_that_does_not_exist_says_so(toolbox: Toolbox, path: str) -> None:
    assert_error(toolbox.run("search_code", {"pattern": "line", "path": path}), "list_files")
