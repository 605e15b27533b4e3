"""Matches judged on the text redaction leaves: a match that touches a masked secret counts as none."""

from __future__ import annotations

import re
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

from codeask.redact import VALUE_BELOW, config_syntax, has_value_below, masks_more_as_data
from codeask.redact.assignments import PASSWORD_WORDS
from codeask.redact.kinds import MARKER_PREFIX
from codeask.search.filekinds import CONFIG_LANGUAGES, language_of
from codeask.search.patterns import compile_python
from codeask.search.ripgrep import MAX_COLUMNS, RawMatch, rg_command

_MARKER = re.compile(re.escape(MARKER_PREFIX) + r"[a-z0-9-]+\]")

# What a search is given to drop the matches a redaction hides: from a run's pattern and case,
# a filter over the matches rg printed.
Keep = Callable[[list[RawMatch]], list[RawMatch]]
Hider = Callable[[str, bool], Keep]


def shows_match(rx: re.Pattern[str] | None, masked: str) -> bool:
    """Whether the pattern matches a masked line outside its markers. Each stretch between
    markers is searched as a text of its own, so the answer depends on nothing a marker hides
    (the secret's characters, even its length): searching a secret's value answers as searching
    a random string does. A pattern Python cannot read matches no line that has a marker."""
    if rx is None:
        return False
    return any(rx.search(piece) for piece in _MARKER.split(masked) if piece)


# What redact.mask_file (files.py) needs in a file of code to mask more than the scanner masks
# each line alone: a private key's armour, base64 that may hold one ("LS0t", five dashes
# encoded), a value continued with a backslash, a netrc entry's password keyword (any of the
# password words) on a later line. Read as a superset: in any case, anywhere in the file.
# (Substring tests: a regex alternation with IGNORECASE costs 0.17 ms on a 50-line file.) rg
# reads the same signs (_RG_SIGNS is made from them). A new whole-file rule for code in files.py
# must add its sign here, with a case in tests/unit/test_search_unmasked.py.
_WHOLE_FILE_SIGNS = ("private key", "ls0t", *PASSWORD_WORDS, "\\\n", "\\\r\n")
# And a sign read as a pattern: a line ending with a secret's name and an assignment, its value
# on the line below (redact.VALUE_BELOW; Python judges the name, rg lists every such line).
_RG_VALUE_BELOW = (
    VALUE_BELOW.pattern.replace("*+", "*").replace("?P<op>", "").replace("?P<open>", "")
)


def stands_alone(text: str, path: str) -> bool:
    """Whether no line of this file can be masked by more than the scanner finds in the line
    itself, so that a search may judge its hits line by line without masking the whole file:
    true only for code (a programming language by the name; no config, build or unknown one,
    whose rules read structure and the path) in plain ASCII (a look-alike letter may spell a
    name) without any of the signs above. Anything else is masked whole: when in doubt, it is."""
    if not code_by_name(path) or not text.isascii():
        return False
    low = text.lower()
    return not any(sign in low for sign in _WHOLE_FILE_SIGNS) and not has_value_below(text, low)


def code_by_name(path: str) -> bool:
    """A programming language by the file's name, and no config or build language."""
    language = language_of(path)
    return language is not None and language not in CONFIG_LANGUAGES and config_syntax(path) is None


def _rg_sign(sign: str) -> str:
    """A sign as an rg pattern: rg reads line by line, so a line break it ends with is the
    line's end (`$`); every other character but a letter, a digit or a space by its code."""
    body, end = (sign[:-1], "$") if sign.endswith("\n") else (sign, "")
    return "".join(c if c.isalnum() or c == " " else f"\\x{ord(c):02x}" for c in body) + end


# The same signs for rg, with what else keeps a file from standing alone: a control byte (a
# carriage return too) or a NUL, a byte outside ASCII. Searched case-insensitively, as text, in
# the raw bytes Python reads (`--encoding none`: rg would otherwise strip a byte-order mark and
# decode UTF-16 before looking).
_RG_SIGNS = "|".join(
    [
        *map(_rg_sign, _WHOLE_FILE_SIGNS),
        f"(?:{_RG_VALUE_BELOW})",
        r"(?-u:[\x00-\x08\x0b-\x1f\x7f-\xff])",
    ]
)


class Signs:
    """Which files of code a search hit stand alone, asked of rg a batch at a time (`sort`): one
    rg lists the batch's files that hold a sign, so that a hit in any other is judged on its
    line as rg printed it (`alone`), unread; the scanner masks that line whatever the rest of
    the file is. A batch too small to pay for an rg, a file rg lists, and every file of a batch
    whose listing failed are judged on the file read and masked whole, as before: the answer
    is the same either way, only slower."""

    BATCH_MIN = 128  # fewer new files are read in Python in less time than an rg lists them
    TIMEOUT_S = 2.0  # a batch is listed in milliseconds; a stuck listing must not eat the search

    def __init__(self, rg: str, root: Path, timeout_s: float) -> None:
        self.rg, self.root, self.timeout_s = rg, root, min(timeout_s, self.TIMEOUT_S)
        self._alone: set[str] = set()
        self._asked: set[str] = set()
        self._lock = threading.Lock()  # a search's rg runs judge their matches in parallel

    def sort(self, matches: list[RawMatch]) -> None:
        with self._lock:
            new = {m.path for m in matches if m.path not in self._asked and code_by_name(m.path)}
            self._asked |= new
        if len(new) < self.BATCH_MIN:
            return
        listed = self._listed(sorted(new))
        if listed is not None:
            with self._lock:
                self._alone |= new - listed

    def _listed(self, paths: list[str]) -> set[str] | None:
        cmd = rg_command(self.rg, _RG_SIGNS, ignore_case=True, max_filesize=1 << 62,
                         extra_args=["--files-with-matches", "--text", "--encoding", "none"])  # fmt: skip
        cmd = cmd[: cmd.index("--") + 1] + paths
        try:
            done = subprocess.run(cmd, cwd=self.root, stdin=subprocess.DEVNULL,
                                  capture_output=True, timeout=self.timeout_s)  # fmt: skip
        except (OSError, subprocess.SubprocessError):
            return None
        if done.returncode not in (0, 1):
            return None
        found = (p.decode("utf-8", errors="surrogateescape") for p in done.stdout.split(b"\0"))
        return {p for p in found if p}

    def alone(self, m: RawMatch) -> bool:
        """Whether the match's line may be judged as rg printed it: its file stands alone, the
        line is in plain ASCII and shorter than rg's preview cut (so printed whole), and it
        holds nothing that would be a secret were the line data (line_alone)."""
        return (
            m.path in self._alone
            and len(m.text) < MAX_COLUMNS
            and m.text.isascii()
            and line_alone(m.text)
        )


def line_alone(line: str) -> bool:
    """Whether a line of a file that stands alone may be judged by itself. A line inside a
    multi-line string or block comment is data, and mask_file judges its assignments as data
    (`password = Xy7pQ2mnA9kL` in a docstring); only the whole file tells whether it is inside
    one. Openers of such strings are too common (every docstring) to be a sign of the whole
    file, so the line itself is asked: one that would show a secret as data is judged on the
    whole file, masked by mask_file; any other shows the same either way."""
    return not masks_more_as_data(line)


def _preview(line: str) -> str:
    """The line cut as rg cuts a long one (--max-columns-preview)."""
    if len(line) <= MAX_COLUMNS:
        return line
    return line[:MAX_COLUMNS] + " [... omitted end of long line]"


def show_all(pattern: str, ignore_case: bool) -> Keep:
    """The Hider of a search with nothing redacted."""
    return list


def hider(
    masked_line: Callable[[RawMatch], str | None],
    sort: Callable[[list[RawMatch]], None] | None = None,
) -> Hider:
    """A Hider over `masked_line(match)`: its line as the redaction gate shows it, or None
    when it cannot be read (then the match is dropped: fail closed). Lines with no marker keep
    rg's verdict; a kept line with one carries its masked text, so that nothing ranked, counted
    or shown after it (alternatives, spans, kinds) reads the secret either."""

    def for_run(pattern: str, ignore_case: bool) -> Keep:
        rx: list[re.Pattern[str] | None] = []

        def keep(matches: list[RawMatch]) -> list[RawMatch]:
            if sort is not None:
                sort(matches)
            out = []
            for m in matches:
                masked = masked_line(m)
                if masked is None:
                    continue
                if MARKER_PREFIX not in masked:
                    out.append(m)
                    continue
                if not rx:
                    rx.append(compile_python(pattern, ignore_case=ignore_case))
                if shows_match(rx[0], masked):
                    out.append(RawMatch(m.path, m.line, _preview(masked)))
            return out

        return keep

    return for_run
