"""File names with control and invisible characters: parsed NUL-safely, shown escaped, read back and cited."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeask.pathdisplay import display_path, read_displayed
from codeask.search.ripgrep import Records
from codeask.snapshot import RepoRef, Snapshot
from codeask.tools import Toolbox
from codeask.verify import verify_answer

ODD = {
    "newline": ("new\nline.py", "new\\nline.py"),
    "cr": ("car\rriage.py", "car\\rriage.py"),
    "esc": ("e\x1b[31mred.py", "e\\x1b[31mred.py"),
    "tab": ("tab\there.py", "tab\\there.py"),
    "rtl-override": ("evil\u202etxt.py", "evil\\u202etxt.py"),
    "zero-width": ("zero\u200bwidth.py", "zero\\u200bwidth.py"),
    "not-utf8": ("bad\udcffname.py", "bad\\xffname.py"),
    "backslash-with-escape": ("a\\b\n.py", "a\\\\b\\n.py"),
}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    for name, _ in ODD.values():
        (root / name).write_text("needle = 1\nsecond = 2\n")
    (root / "a.py:12:x").write_text("needle = 3\n")  # a name that looks like rg's output
    (root / "a.py").write_text("".join(f"x{i} = {i}\n" for i in range(20)))
    (root / "café.py").write_text("needle = 4\n")  # ordinary unicode stays as it is
    return root


@pytest.fixture
def toolbox(tree: Path) -> Toolbox:
    return Toolbox(Snapshot(tree, "e" * 40, RepoRef("r", str(tree))))


@pytest.mark.parametrize(("name", "shown"), ODD.values(), ids=ODD.keys())
def test_display_escapes_and_reads_back(name: str, shown: str) -> None:
    assert display_path(name) == shown
    assert read_displayed(shown) == name


@pytest.mark.parametrize(
    "plain", ["src/app.py", "café.py", "a.py:12:x", "dir/with space.md", "a\\b.py"]
)
def test_printable_names_are_shown_as_they_are(plain: str) -> None:
    assert display_path(plain) == plain


def test_rg_records_are_framed_at_the_nul_not_at_newlines() -> None:
    out = b"./new\nline.py\x001:needle = 1\n./a.py:12:x\x001:needle = 3\n"
    records = Records()
    # fed a byte at a time, as a pipe may deliver it
    got = [m for i in range(len(out)) for m in records.feed(out[i : i + 1])]
    assert [(m.path, m.line) for m in got] == [("new\nline.py", 1), ("a.py:12:x", 1)]


def test_search_lists_every_odd_name_escaped_and_none_raw(toolbox: Toolbox) -> None:
    text = toolbox.run("search_code", {"pattern": "needle"}).text
    for _name, shown in ODD.values():
        assert f"{shown} — 1 match" in text
    assert "a.py:12:x — 1 match" in text and "café.py — 1 match" in text
    assert "\x1b" not in text and "\u202e" not in text and "\r" not in text
    assert "line.py — 1 match" not in text.replace("new\\nline.py", "")


def test_listing_and_reading_use_the_escaped_names(toolbox: Toolbox) -> None:
    listing = toolbox.run("list_files", {}).text
    for _, shown in ODD.values():
        assert f"\n{shown}" in listing
    for _name, shown in ODD.values():
        result = toolbox.run("read_file", {"path": shown, "end_line": 1})
        assert not result.is_error, result.text
        assert result.text.startswith(f"{shown} lines 1-1 of 2")
    missing = toolbox.run("read_file", {"path": "gone\x1b.py"})
    assert missing.is_error and "gone\\x1b.py" in missing.text and "\x1b" not in missing.text


def test_a_name_that_looks_like_rg_output_is_found_and_read(toolbox: Toolbox) -> None:
    result = toolbox.run("read_file", {"path": "a.py:12:x"})
    assert result.text.startswith("a.py:12:x lines 1-1 of 1") and "needle = 3" in result.text


def test_citations_of_escaped_names_verify_and_map_to_the_real_file(tree: Path) -> None:
    snap = Snapshot(tree, "e" * 40, RepoRef("r", "https://github.com/acme/r.git"))
    answer = (
        "It is set in `new\\nline.py:1`, in e\\x1b[31mred.py:2, in `evil\\u202etxt.py:1`, "
        "in `a.py:12:x:1` and in `bad\\xffname.py:2`; `tab\\there.py:9` is wrong."
    )
    v = verify_answer(answer, snap)
    by_path = {m.path: m for m in v.mentions}
    for real in (
        "new\nline.py",
        "e\x1b[31mred.py",
        "evil\u202etxt.py",
        "a.py:12:x",
        "bad\udcffname.py",
    ):
        assert by_path[real].verified, by_path[real]
        url = by_path[real].url
        assert url and "\n" not in url
    assert not by_path["tab\there.py"].verified  # line 9 of a 2-line file
    assert "a.py" not in by_path  # `a.py:12:x:1` is not a.py line 12


def test_a_line_range_on_an_escaped_name_is_checked_to_its_end(tree: Path) -> None:
    # Given citations of a line range in a 2-line file shown with an escape: one fits, one does not
    snap = Snapshot(tree, "e" * 40, RepoRef("r", "https://github.com/acme/r.git"))
    v = verify_answer("Both are in new\\nline.py:1-2, not in new\\nline.py:1-9.", snap)
    # Then each keeps its whole range, and the one past the end is flagged
    assert [(m.path, m.start_line, m.end_line, m.verified) for m in v.mentions] == [
        ("new\nline.py", 1, 2, True),
        ("new\nline.py", 1, 9, False),
    ]
