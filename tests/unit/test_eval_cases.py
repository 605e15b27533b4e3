"""Loading evaluation cases: every bad file is bad input naming the problem, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeask.errors import BadInput
from codeask.evaluate import load_cases

GOOD = b'{"id": "c1", "repo": "r", "question": "q?", "expected": [{"path": "a.py", "line": 3}]}\n'


@pytest.mark.parametrize(
    "data", [b"\xff\xfe" + GOOD, GOOD + b"\x80\n", GOOD.replace(b"q?", b"q\xc3"), b"\xed\xa0\x80\n"]
)
def test_a_cases_file_that_is_not_utf8_is_bad_input(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_bytes(data)
    with pytest.raises(BadInput, match="not UTF-8 text"):
        load_cases(path)


def test_a_utf8_cases_file_loads(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_bytes(GOOD.replace(b"q?", "où?".encode()))
    (case,) = load_cases(path)
    assert case.question == "où?"
