"""Go and Helm templates, which have no grammar wheel: `{{ define }}`/`if`/`range`/`with`/`block` … `{{ end }}` nesting from a small scanner."""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from dataclasses import dataclass

_COMMENT_CLOSE = re.compile(r"\*/\s*-?\}\}")
_KEYWORD = re.compile(r"(\w+)")
_QUOTED = re.compile(r'"([^"\n]*)"|`([^`\n]*)`')
_CALLERS = re.compile(r'\b(include|template)\s+["`]')
_YAML_KEY = re.compile(r"(- +)?([^\s:#{\"'][^:#]*?|\"[^\"]*\"|'[^']*'):(\s|$)")
OPENERS = frozenset({"define", "block", "if", "range", "with"})
NAMED = frozenset({"define", "block"})
REACH = 2000  # rows walked up for a YAML key path (a container list can span a thousand)


def actions(text: str) -> Iterator[tuple[int, int, str, int]]:
    """Each `{{ … }}` action of a template: (its start, where its words start, its words without
    the trim markers, its end). A comment `{{/* … */}}` ends at `*/}}`, not at the first `}}` (its
    usage notes hold actions of their own); any other action ends at the first `}}`.

    One pass, each character looked at a bounded number of times: an action that never closes
    ends the scan (nothing after it closes either), and a comment's close is searched for once
    and remembered for the comments that open before it (`{{/*` repeated 40,000 times, never
    closed, was 87 s as a backtracking regex)."""
    pos, n = 0, len(text)
    close: re.Match[str] | None = None  # the next comment close at or after `close_from`
    close_from = -1
    while True:
        start = text.find("{{", pos)
        if start < 0:
            return
        j = start + 2
        if j < n and text[j] == "-":
            j += 1
        while j < n and text[j].isspace():
            j += 1
        if text.startswith("/*", j):
            if close_from < 0 or (close is not None and close.start() < j + 2):
                close = _COMMENT_CLOSE.search(text, j + 2)
                close_from = j + 2
            if close is not None:
                yield start, j, text[j : close.start() + 2], close.end()
                pos = close.end()
                continue
        end = text.find("}}", j)
        if end < 0:
            return
        words = text[j:end]
        if words.endswith("-"):
            words = words[:-1]
        yield start, j, words.rstrip(), end + 2
        pos = end + 2


@dataclass
class Block:
    """One `{{ define "x" }} … {{ end }}` (or if/range/with/block); rows are 1-based."""

    kind: str
    header: str  # the opening action's words: `if .Values.auth.enabled`, `define "x"`
    start: int
    end: int
    name: str = ""  # a define's or block's template name
    name_cols: tuple[int, int] | None = None  # where that name sits on the start row

    @property
    def label(self) -> str:
        return f'{self.kind} "{self.name}"' if self.kind in NAMED else self.header


@dataclass
class TemplateHit:
    kind: str
    scope: list[str]
    whole: tuple[int, int] | None = None
    extent: tuple[int, int] | None = None
    defines: str | None = None
    encloser: tuple[str, int] | None = None  # the define a row is in: its name and first row
    belongs_to: int | None = None  # a YAML comment line's: the row of the key below it


class TemplateSyntax:
    """The blocks and comments of one template file; `yaml` when the text around the actions is YAML."""

    def __init__(self, lines: list[str], *, yaml: bool) -> None:
        self.lines = lines
        self.yaml = yaml
        self.blocks: list[Block] = []
        self.comments: list[
            tuple[int, int, int, int]
        ] = []  # (row, col, end row, end col), 1-based rows
        self.calls: list[
            tuple[int, int, int]
        ] = []  # (row, col, end col) of included template names
        self._scan()

    def _scan(self) -> None:
        text = "\n".join(self.lines)
        starts = [0]
        for line in self.lines:
            starts.append(starts[-1] + len(line) + 1)

        def at(offset: int) -> tuple[int, int]:
            row = bisect.bisect_right(starts, offset) - 1
            return row + 1, offset - starts[row]

        stack: list[Block] = []
        for start, inner, body, stop in actions(text):
            row, col = at(start)
            if body.startswith("/*"):
                end_row, end_col = at(stop)
                self.comments.append((row, col, end_row, end_col))
                continue
            for c in _CALLERS.finditer(body):
                q = _QUOTED.match(body, c.end() - 1)
                if q is not None:
                    r, c0 = at(inner + q.start() + 1)
                    self.calls.append((r, c0, c0 + q.end() - q.start() - 2))
            word = _KEYWORD.match(body)
            keyword = word.group(1) if word else ""
            if keyword in OPENERS:
                block = Block(keyword, " ".join(body.split())[:100], row, len(self.lines))
                if keyword in NAMED:
                    q = _QUOTED.search(body)
                    if q is not None:
                        block.name = q.group(1) if q.group(1) is not None else q.group(2)
                        r, c0 = at(inner + q.start() + 1)
                        if r == row:
                            block.name_cols = (c0, c0 + len(block.name))
                stack.append(block)
                self.blocks.append(block)
            elif keyword == "end" and stack:
                stack.pop().end = at(stop)[0]

    # -- one hit ---------------------------------------------------------------------------------

    def enclosing(self, row: int) -> list[Block]:
        """The blocks around a row, outermost first."""
        return [b for b in self.blocks if b.start <= row <= b.end]

    def info(self, row: int, spans: list[tuple[int, int]]) -> TemplateHit:
        around = self.enclosing(row)
        defines = [b for b in around if b.kind in NAMED]
        hit = TemplateHit("reference", [b.label for b in defines])
        if defines:
            hit.extent = (defines[-1].start, defines[-1].end)
            if defines[-1].name:
                hit.encloser = (defines[-1].name, defines[-1].start)
        col = spans[0][0] if spans else len(self.lines[row - 1]) - len(self.lines[row - 1].lstrip())
        end = spans[0][1] if spans else col + 1
        defining = next((b for b in defines if b.start == row and b.name_cols), None)
        if defining is not None and defining.name_cols is not None:
            a, b = defining.name_cols
            if a < end and col < b:
                hit.kind = "definition"
                hit.defines = defining.name
                hit.whole = (defining.start, defining.end)
                hit.scope.pop()  # the line itself names what it defines
        if hit.kind != "definition":
            if self._in_comment(row, col):
                hit.kind = "comment"
            elif any(r == row and c0 < end and col < c1 for r, c0, c1 in self.calls):
                hit.kind = "call"
        if self.yaml:
            key_row = row
            if hit.kind == "comment" and self.lines[row - 1].lstrip().startswith("#"):
                below = described_row(self.lines, row)
                if below is not None:  # a comment above a key is about that key
                    key_row = hit.belongs_to = below
            path, own_key = yaml_path(self.lines, key_row)
            if key_row != row and own_key is not None:
                text = self.lines[key_row - 1]
                path.append(text[own_key[0] : own_key[1]].strip("\"'- "))
            hit.scope += path
            if own_key is not None and hit.kind == "reference" and own_key[0] <= col < own_key[1]:
                hit.kind = "definition"  # the match is in the key, as in a config file
        return hit

    def headers(self, row: int) -> list[int]:
        """The `if`/`range`/`with` lines a row sits in, nearest first."""
        return [
            b.start for b in reversed(self.enclosing(row)) if b.kind not in NAMED and b.start < row
        ]

    def _in_comment(self, row: int, col: int) -> bool:
        for r0, c0, r1, c1 in self.comments:
            if (r0, c0) <= (row, col) < (r1, c1):
                return True
        text = self.lines[row - 1].lstrip()
        return self.yaml and text.startswith("#")


def described_row(
    lines: list[str], row: int, markers: tuple[str, ...] = ("#",), reach: int = 30
) -> int | None:
    """The row right below the comment block a comment line is in (1-based): what the comment
    is about, skipping a template's own lines. None for a file's opening comment, or a block
    that a blank line parts from what follows."""
    first = row
    while first > 1 and lines[first - 2].strip().startswith(markers):
        first -= 1
    if first == 1:
        return None  # a file's opening comment is about the file
    for j in range(row, min(len(lines), row + reach)):
        s = lines[j].strip()
        if not s:
            return None
        if not s.startswith((*markers, "{{")):
            return j + 1
    return None


def yaml_path(lines: list[str], row: int) -> tuple[list[str], tuple[int, int] | None]:
    """A templated YAML line's key path by indentation (`spec › containers[postgresql] › env[X]`),
    skipping template actions and comments, and the columns of the key on the line itself."""
    text = lines[row - 1]
    stripped = text.lstrip()
    ceiling = len(text) - len(stripped)
    own = _YAML_KEY.match(stripped)
    own_key = None
    if own is not None and not stripped.startswith("{{"):
        start = ceiling + own.start(2)
        own_key = (start, start + len(own.group(2)))
    path: list[str] = []
    # A list may sit at its key's own indentation (`env:` over `- name: X`), so below an item a
    # key at the item's indentation is its parent too; another item there is its sibling.
    item_indent = ceiling if stripped.startswith("-") else None
    for i in range(row - 2, max(-1, row - 1 - REACH), -1):
        if ceiling == 0 and item_indent is None:
            break
        line = lines[i]
        s = line.lstrip()
        if not s or s.startswith(("{{", "#")):
            continue
        indent = len(line) - len(s)
        item = s.startswith("-")
        if not (indent < ceiling or (indent == item_indent and not item)):
            continue
        m = _YAML_KEY.match(s)
        if item:
            name = m.group(2).strip("\"'") if m is not None else ""
            value = s[m.end() :].strip() if m is not None else ""
            label = (
                value.strip("\"'")[:40] if name == "name" and value and "{{" not in value else ""
            )
            path.append(f"[{label}]")
            item_indent = indent
        elif m is not None:
            key = m.group(2).strip("\"'")[:40]
            if path and path[-1].startswith("["):
                path[-1] = key + path[-1]
            else:
                path.append(key)
            item_indent = None
        else:
            continue
        ceiling = indent
    return path[::-1], own_key
