"""A file's lines decoded whole (clean_lines) read exactly as its lines decoded one by one."""

from __future__ import annotations

import pytest

from codeask.search.ripgrep import clean_lines, clean_text


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
