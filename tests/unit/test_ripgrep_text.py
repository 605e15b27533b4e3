"""A file's lines decoded whole (clean_lines) read exactly as its lines decoded one by one."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeask.search.ripgrep import clean_lines, clean_text, find_rg, run_rg


def one_by_one(data: bytes) -> list[str]:
    raw = data.split(b"\n") if data else []
    if raw and raw[-1] == b"":
        raw.pop()
    return [clean_text(r) for r in raw]


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\n",
        b"\n\n",
        b"one",
        b"one\ntwo\n",
        b"one\ntwo",
        b"tab\there\n\tlead\n",
        b"crlf\r\nlines\r\n",  # a carriage return is a control byte: dropped
        b"bell\x07 and escape\x1b[0m\n",
        b"caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x94\x91\n",
        b"cut \xe2\x86\nhalf a character before the newline\n",
        b"lone \xff byte\nand \xc3\n",
        "a real \ufffd in the file\n".encode(),
        "line\u2028separator and next\u0085line\n".encode(),
        b"form\x0cfeed\x0bvertical\n",
        b"no newline at the end \xe2",
    ],
)
def test_whole_file_decoding_matches_line_by_line(data: bytes) -> None:
    assert clean_lines(data) == one_by_one(data)


def test_a_capped_search_keeps_exactly_the_cap_in_path_order(tmp_path: Path) -> None:
    # Given far more matching lines than the cap, arriving from rg in chunks of any size
    for i in range(20):
        (tmp_path / f"f{i:02}.txt").write_text("".join(f"needle {n}\n" for n in range(3000)))
    # When the same capped, path-sorted search runs a few times
    runs = [
        run_rg(find_rg(), tmp_path, "needle", max_matches=1234, extra_args=["--sort", "path"])
        for _ in range(3)
    ]
    # Then each keeps the cap's worth, the same first matches every time, however the output
    # was chunked
    for r in runs:
        assert r.stopped_early and len(r.matches) == 1234
        assert [(m.path, m.line) for m in r.matches] == [(m.path, m.line) for m in runs[0].matches]
    assert {m.path for m in runs[0].matches} == {"f00.txt"}
