"""An answer streamed only as far as every path in it is complete and checked: the hold-back."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Protocol

from codeask.snapshot import Snapshot
from codeask.verify import Mention, Verification, settled, verify_answer

_FENCE_LINE = re.compile(r"^[ \t]*(?P<marker>`{3,}|~{3,})(?P<info>.*)$")
# The settled check reads the text from the last line start outside a code block (`_base`), so
# inside one long line or code block each check costs that much. Up to _RECHECK_FREE characters
# it runs at every word; beyond, once what is read has grown by 1/_RECHECK_SHARE since the last
# check: geometric steps, so an answer costs a bounded multiple of its length, whatever its shape.
_RECHECK_FREE = 128
_RECHECK_SHARE = 8
_Open = tuple[int, str, bool]  # an open code block: where its line starts, its marker, mermaid
Marks = list[tuple[int, str]]  # where UNVERIFIED_MARK goes in a text, in order


@dataclass(frozen=True)
class Settled:
    """The part of an answer that is final: a prefix of the finished text, and its checked paths."""

    text: str
    verification: Verification
    done: bool = False  # the answer is finished and `text` is all of it
    # Where the unverified marks go in `text` (`Verification.marks`), worked out a line at a time
    # as the text grew; None: ask the verification, which reads the whole text.
    marks: Marks | None = None


class AnswerSink(Protocol):
    """Where an answer goes while it is written (a Slack message, a terminal). `show` gets the
    whole settled text each time it grows; what it shows must grow with it, never change."""

    def show(self, settled: Settled) -> None: ...


def marked(text: str, verification: Verification, marks: Marks | None = None) -> str:
    """The text with every unverified reference marked, for plain-text readers (a terminal)."""
    out: list[str] = []
    pos = 0
    for p, mark in verification.marks(text) if marks is None else marks:
        out.append(text[pos:p] + mark)
        pos = p
    out.append(text[pos:])
    return "".join(out)


@dataclass
class _Fences:
    """What `_show_limit` read of a text's complete lines: each update reads only the new ones."""

    read: int = 0  # offset just past the last complete line read
    opened: _Open | None = None  # the code block open there


def _fence_line(line: str, pos: int, opened: _Open | None) -> _Open | None:
    """The open block after `line` (at offset `pos`), given the one open before it."""
    m = _FENCE_LINE.match(line)
    if opened is None:
        if m and not (m["marker"][0] == "`" and "`" in m["info"]):
            return (pos, m["marker"], m["info"].strip().lower().startswith("mermaid"))
        return None
    s = line.strip()
    return None if len(s) >= len(opened[1]) and s == opened[1][0] * len(s) else opened


def _show_limit(text: str, fences: _Fences | None = None) -> int:
    """How far the stream may show, by what the text is: inside an open code block, whole lines
    only (a half-written line of code reads as noise); an open ```mermaid block not at all until
    it closes (a diagram is read whole, and is checked to parse as a whole). `fences` carries
    what earlier calls read of the same growing text."""
    fences = fences if fences is not None else _Fences()
    while (end := text.find("\n", fences.read)) >= 0:
        fences.opened = _fence_line(text[fences.read : end], fences.read, fences.opened)
        fences.read = end + 1
    opened = _fence_line(text[fences.read :], fences.read, fences.opened)
    if opened is None:
        return len(text)
    return opened[0] if opened[2] else text.rfind("\n") + 1


@dataclass
class HoldBack:
    """Takes the answer's text as the model writes it and gives the sink what is settled.

    Text from where a path may be starting is held until the path and its line suffix are
    complete and checked (`verify.settled`); prefaces (notes that go before the answer) come out
    with its first words. Until something has been shown, a failed model call can be retried:
    `rewind` forgets what was written since a mark.
    """

    snapshot: Snapshot
    sink: AnswerSink | None = None
    _prefaces: list[str] = field(default_factory=list)
    _body: str = ""
    _shown: int = 0  # characters of the assembled text given to the sink
    # Settling starts again from `_base`, a line start before the cut outside any code block;
    # what lies before it is final, and `_before` holds its mentions. This keeps each update to
    # the last line or so, instead of the whole answer so far.
    _base: int = 0
    _before: list[Mention] = field(default_factory=list)
    _marks_before: Marks = field(default_factory=list)  # the marks before `_base`
    _fences: _Fences = field(default_factory=_Fences)
    _checked: int = 0  # how much text was available at the last settled check

    @property
    def shown(self) -> bool:
        """Whether the sink has been given any of the answer."""
        return self._shown > 0

    @property
    def has_body(self) -> bool:
        return bool(self._body.strip())

    def preface(self, note: str) -> None:
        """A note for the top of the answer; once some of it is shown, it goes where it stands."""
        if self.shown:
            self.write(f"\n\n{note}\n\n")
        else:
            self._prefaces.append(note.strip())
            self._fences, self._checked = _Fences(), 0  # the text before the body changed

    def mark(self) -> int:
        return len(self._body)

    def rewind(self, mark: int) -> bool:
        """Forget what was written after `mark`, unless some of it was shown (then False)."""
        if self._shown > len(self._assembled(self._body[:mark])):
            return False
        self._body = self._body[:mark]
        self._fences, self._checked = _Fences(), 0
        return True

    def write(self, piece: str) -> None:
        if not self._body:
            piece = piece.lstrip()
        if not piece:
            return
        self._body += piece
        if self.sink is not None and not piece.replace("_", "a").isalnum():
            # Only a space or a punctuation mark can settle more: within a word nothing moves.
            self._update()

    def finish(self) -> str:
        """The whole answer, shown in full; what the caller keeps as the answer's text."""
        text = self._assembled(self._body).strip() or "\n\n".join(self._prefaces)
        if self.sink is not None:
            self.sink.show(Settled(text, verify_answer(text, self.snapshot), done=True))
        self._shown = len(text)
        return text

    def _assembled(self, body: str) -> str:
        return "\n\n".join([*self._prefaces, body]) if body else ""

    def _update(self) -> None:
        assert self.sink is not None
        text = self._assembled(self._body)
        limit = _show_limit(text, self._fences)
        if limit <= self._shown:
            return
        base = self._base
        if limit - base > _RECHECK_FREE and (limit - self._checked) * _RECHECK_SHARE < limit - base:
            return
        self._checked = limit
        available = text[:limit]
        cut, found = settled(available[base:], self.snapshot)
        cut += base
        head = len(text) - len(self._body)  # the prefaces and the blank line after them
        if cut <= max(self._shown, head):
            return
        moved = [
            dataclasses.replace(m, span=(m.span[0] + base, m.span[1] + base))
            for m in found.mentions
        ]
        mentions = [*self._before, *moved]
        # Code spans end on their line, so the marks after `base` are found from there on.
        marks = [*self._marks_before, *((p + base, m) for p, m in found.marks(available[base:]))]
        self._shown = cut
        self.sink.show(
            Settled(text[:cut], Verification(sha=found.sha, mentions=mentions), marks=marks)
        )
        line = text.rfind("\n", 0, cut) + 1
        # An even number of ``` before it: outside a fenced block, as the verifier pairs them.
        if line > base and text.count("```", 0, line) % 2 == 0:
            self._base = line
            self._before = [m for m in mentions if m.span[1] <= line]
            self._marks_before = [k for k in marks if k[0] <= line]
