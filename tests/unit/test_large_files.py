"""Files over the size limit: read in bounded memory with secrets still masked, and named when a search skips them."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from codeask.snapshot import RepoRef, Snapshot
from codeask.tools import Toolbox

LIMIT = 64 * 1024  # the size limit, configured down so that tests stay small
KEY_BODY = ["MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7" + "A" * 12] * 30


def toolbox(root: Path) -> Toolbox:
    return Toolbox(Snapshot(root, "d" * 40, RepoRef("r", str(root))), large_file_bytes=LIMIT)


def big_file(path: Path, lines: int, *, insert: dict[int, str] | None = None) -> None:
    insert = insert or {}
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        for n in range(1, lines + 1):
            f.write(insert.get(n, f"row {n} of a generated table, nothing to see here") + "\n")


def test_reading_near_the_end_of_a_large_file_uses_bounded_memory(tmp_path: Path) -> None:
    # Given a 40 MB file, 600 times the size limit
    big_file(tmp_path / "data/dump.sql", 800_000)
    size = (tmp_path / "data/dump.sql").stat().st_size
    tb = toolbox(tmp_path)
    # When 12 lines near its end are read
    tracemalloc.start()
    result = tb.run(
        "read_file", {"path": "data/dump.sql", "start_line": 799_980, "end_line": 799_991}
    )
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # Then they come back numbered, with the true line count, and memory stayed a small
    # fraction of the file (whole-file reading peaked at several times its size)
    assert not result.is_error, result.text
    assert "lines 799980-799991 of 800000" in result.text and "large file" in result.text
    assert "799985  row 799985 of" in result.text
    assert peak < size / 8, f"peak {peak} bytes for a {size}-byte file"


def test_a_window_inside_a_private_key_block_stays_masked(tmp_path: Path) -> None:
    # Given a large file holding a private key, read from the middle of the key's body, and
    # from a window that starts more than the masking context below its BEGIN line
    lines = {500: "-----BEGIN RSA PRIVATE KEY-----"}
    lines.update({501 + i: body for i, body in enumerate(KEY_BODY)})
    lines[531] = "-----END RSA PRIVATE KEY-----"
    far = {10: "-----BEGIN PRIVATE KEY-----"}
    far.update({11 + i: KEY_BODY[0] for i in range(2000)})
    far[2011] = "-----END PRIVATE KEY-----"
    big_file(tmp_path / "keys.txt", 4000, insert=lines)
    big_file(tmp_path / "far.txt", 4000, insert=far)
    tb = toolbox(tmp_path)
    mid = tb.run("read_file", {"path": "keys.txt", "start_line": 510, "end_line": 520})
    deep = tb.run("read_file", {"path": "far.txt", "start_line": 1800, "end_line": 1805})
    # Then no key material shows, and the lines around it do
    for result in (mid, deep):
        assert not result.is_error, result.text
        assert "MIIEvQIBADAN" not in result.text and "[REDACTED:private-key]" in result.text
    after = tb.run("read_file", {"path": "far.txt", "start_line": 2012, "end_line": 2013})
    assert "row 2012 of a generated table" in after.text


def test_a_config_secret_in_a_large_file_is_masked_with_exact_line_numbers(tmp_path: Path) -> None:
    big_file(
        tmp_path / "deploy/values.yaml",
        5000,
        insert={4000: "db:", 4001: "  password: hunter2-Zk8qP1x9"},
    )
    result = toolbox(tmp_path).run(
        "read_file", {"path": "deploy/values.yaml", "start_line": 4000, "end_line": 4002}
    )
    assert "hunter2" not in result.text
    assert "4001    password: [REDACTED" in result.text


def test_a_binary_large_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01" * LIMIT)
    result = toolbox(tmp_path).run("read_file", {"path": "blob.bin"})
    assert result.is_error and "binary" in result.text


def test_line_past_the_end_of_a_large_file_is_a_clear_error(tmp_path: Path) -> None:
    big_file(tmp_path / "big.log", 3000)
    result = toolbox(tmp_path).run("read_file", {"path": "big.log", "start_line": 3001})
    assert result.is_error and "has 3000 lines" in result.text


def test_a_search_whose_only_match_is_in_a_skipped_file_says_so(tmp_path: Path) -> None:
    # Given the only mention of a name in a file over the search limit, and a small file
    big_file(tmp_path / "data/fixtures.json", 5000, insert={4321: '{"needle_token": 1}'})
    (tmp_path / "src").mkdir()
    (tmp_path / "src/app.py").write_text("print('hello')\n")
    tb = toolbox(tmp_path)
    # When it is searched for
    result = tb.run("search_code", {"pattern": "needle_token"})
    # Then the result is no bare "No matches": it names the file, its size and where to read
    assert not result.is_error
    assert result.text.startswith("No matches for `needle_token` in the files up to")
    assert "data/fixtures.json" in result.text and "first match at line 4321" in result.text
    # And a search whose matches are elsewhere still names the large file that matched too
    both = tb.run("search_code", {"pattern": "needle_token|hello"})
    assert "src/app.py" in both.text and "first match at line 4321" in both.text
    # And a glob or path that leaves the large file out leaves it out of the note
    assert "fixtures" not in tb.run("search_code", {"pattern": "needle_token", "glob": "*.py"}).text
    assert "fixtures" not in tb.run("search_code", {"pattern": "needle_token", "path": "src"}).text
    # And a large file without a match is not mentioned
    assert "fixtures" not in tb.run("search_code", {"pattern": "hello"}).text


@pytest.mark.parametrize("rows", [0, 1, 2])
def test_line_counts_of_small_files_do_not_change(tmp_path: Path, rows: int) -> None:
    (tmp_path / "f.txt").write_text("".join(f"{i}\n" for i in range(rows)) + "tail")
    snap = Snapshot(tmp_path, "d" * 40, RepoRef("r", str(tmp_path)))
    assert snap.line_count("f.txt") == rows + 1


def test_an_empty_file_has_no_lines(tmp_path: Path) -> None:
    (tmp_path / "empty.txt").write_text("")
    assert Snapshot(tmp_path, "d" * 40, RepoRef("r", str(tmp_path))).line_count("empty.txt") == 0


@pytest.mark.parametrize("tail", ["", "last line without a newline"])
def test_a_file_read_in_several_chunks_counts_every_line(tmp_path: Path, tail: str) -> None:
    from codeask.snapshot import CHUNK

    line = "x" * 99 + "\n"
    rows = 3 * CHUNK // len(line) + 7  # spans four chunks, lines crossing their edges
    (tmp_path / "big.txt").write_text(line * rows + tail)
    snap = Snapshot(tmp_path, "d" * 40, RepoRef("r", str(tmp_path)))
    assert snap.line_count("big.txt") == rows + (1 if tail else 0)
