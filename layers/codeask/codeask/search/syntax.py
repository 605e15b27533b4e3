"""Code structure around a search hit, from tree-sitter: scopes, hit kinds, key paths, statements, bodies."""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from codeask.search import heuristics, languages
from codeask.search.gotemplate import TemplateSyntax, described_row
from codeask.search.languages import (
    ASSIGNMENTS,
    CALLEE_FIELDS,
    CALLS,
    CONTAINERS,
    FUNCTIONS,
    NAMES,
    STRINGS,
)

# What a hit is, best first: the order ranks hits within a file.
KINDS = ("definition", "assignment", "call", "reference", "import", "string", "comment")
MAX_PARSE_BYTES = 1_500_000  # a bigger file (a bundle, a dump) is read with heuristics
# tree-sitter-yaml 0.7.2's scanner saves its stack of block indents into a 1024-byte buffer
# unchecked: a block nested 255 deep (`- ` 300 times on a line, 300 ever more indented keys; 600
# bytes) overruns it and kills the process (tree-sitter-grammars/tree-sitter-yaml#48). The
# indents on that stack only grow, so a file whose content starts left of this column is safe.
YAML_MAX_COLUMN = 200
_YAML_LEAD = re.compile(r"[ ]*(?:[-?:][ \t]+)*")  # a line's indent and its block indicators
# Flow brackets nested deeper than this make the config keys' query quadratic (100,000 `[`: 21 s
# in YAML, 6 s in JSON); such a file is read with heuristics.
FLOW_MAX_DEPTH = 500
_BRACKETS = re.compile(r"[\[\]{}]")
SLICE_BYTES = 96_000  # a bigger file is parsed only around its hits (where that is safe)
SLICEABLE = frozenset({"c", "cpp", "go", "rust", "javascript", "typescript", "tsx"})
CACHE_BYTES = 24_000_000  # parsed sources kept per process; snapshots are immutable
SCOPE_CHARS = 110
NEARBY_ROWS = 30  # how far above a hit an assignment of one of its names is worth a line
ITEM_ROWS = 9  # an element around a hit shown whole with it when it spans fewer rows ...
ITEM_ABOVE = 2  # ... and starts at most this far above it
_LABEL_ONLY = frozenset({"case_item"})  # scopes that label a hit but define no name
# glibc's symbol macros: `weak_alias (__strverscmp, strverscmp)`, `strong_alias (a, b)`,
# `libm_alias_double (__cos, cos)`, `versioned_symbol (libc, __x, x, GLIBC_2_1)`
_ALIAS_LINE = re.compile(
    r"^\s*(?P<macro>\w*(?:alias|symbol)\w*)\s*\((?P<args>[\w\s,]*)\)\s*;?\s*(?:/\*.*)?$"
)
_CODE_ISLANDS = frozenset(
    {"interpolation", "template_substitution", "expansion", "command_substitution",
     "simple_expansion", "string_interpolation", "escape_interpolation"}
)  # fmt: skip
_ANON_FUNCTIONS = frozenset({"arrow_function", "function_expression", "function", "func_literal"})
_NAMED_BY_PARENT = frozenset(
    {"variable_declarator", "pair", "assignment_expression", "public_field_definition",
     "field_definition"}
)  # fmt: skip
_KEY_NODES = frozenset(
    {"block_mapping_pair", "flow_pair", "pair", "table", "table_array_element", "block",
     "attribute", "object_elem"}
)  # fmt: skip
_OPERATIONS = frozenset(
    {"binary_expression", "binary_operator", "comparison_operator", "boolean_operator",
     "not_operator", "unary_expression", "conditional_expression", "ternary_expression"}
)  # fmt: skip
_NEEDS_BODY = frozenset(
    {"struct_specifier", "union_specifier", "enum_specifier", "class_specifier"}
)
_SEQUENCE_ITEMS = frozenset({"block_sequence_item"})
_ARRAYS = frozenset({"array", "flow_sequence", "tuple"})
_TRAILER = re.compile(r"(\s*(\{|:|=>|=|\bdo|\bthen))+\s*$")
# (`(?:\s*;)?\s*`, not `\s*;?\s*`: two runs of blanks around an optional `;` backtrack quadratically)
_MACRO_LINE = re.compile(r"^\s*[A-Za-z_]\w*\s*\([^()]*\)(?:\s*;)?\s*$")
_DECORATOR_LINE = re.compile(r"^\s*(@|#\[|\[[A-Z])")


@dataclass
class HitInfo:
    """What the parser says about one hit line."""

    kind: str = "reference"
    scope: list[str] = field(default_factory=list)  # outer to inner labels
    decorates: str | None = None  # the definition a decorator line decorates
    whole: tuple[int, int] | None = None  # 1-based rows of the definition this line defines
    header_end: int | None = None  # last row of that definition's signature
    extent: tuple[int, int] | None = None  # 1-based rows of the innermost enclosing scope
    defines: str | None = None  # the name a definition hit defines
    encloser: tuple[str, int] | None = None  # the enclosing definition's name and its name's row
    belongs_to: int | None = None  # a comment line's: the row of the key or code it is above


@dataclass
class _Walk:
    """What a walk from a hit up to the root has seen so far."""

    row: int
    c0: int
    c1: int
    info: HitInfo = field(default_factory=HitInfo)
    flags: set[str] = field(default_factory=set)
    string_closed: bool = False
    chain: list[Any] = field(default_factory=list)  # enclosing definitions, innermost first
    decorator: Any = None
    recovered: tuple[str, int, int] | None = None


@dataclass
class Context:
    """Lines worth showing around a hit so it reads like code (1-based rows)."""

    statement: tuple[int, int] | None = None
    headers: list[int] = field(default_factory=list)  # enclosing loops, ifs, calls: nearest first
    assignments: list[int] = field(default_factory=list)  # where names used on the line were set
    item: tuple[int, int] | None = None  # the few rows of the element or entry the hit is in


def nesting_ok(language: str | None, lines: list[str]) -> bool:
    """Whether a file of a config language nests shallowly enough to be given to its grammar (see
    YAML_MAX_COLUMN and FLOW_MAX_DEPTH); True for the other languages."""
    if language not in ("yaml", "json"):
        return True
    if language == "yaml" and any(
        m.end() >= YAML_MAX_COLUMN for line in lines if (m := _YAML_LEAD.match(line))
    ):
        return False
    depth = deepest = 0
    for b in _BRACKETS.findall("\n".join(lines)):
        depth += 1 if b in "[{" else -1
        if depth > deepest:
            deepest = depth
            if deepest > FLOW_MAX_DEPTH:
                return False
    return True


class FileSyntax:
    """One file's structure: a parse tree when the language has a grammar, else heuristics."""

    def __init__(self, language: str | None, lines: list[str], *, slicing: bool = True) -> None:
        self.language = language
        self.lines = lines
        self.tree: Any = None
        self.source = b""
        self.config = language in languages.CONFIG
        size = sum(map(len, lines)) + len(lines)
        self.grammar = (
            language
            if languages.has_grammar(language)
            and size <= MAX_PARSE_BYTES
            and nesting_ok(language, lines)
            else None
        )
        if self.grammar is not None:
            self.rules = languages.RULES[self.grammar]
        self.template = (
            TemplateSyntax(lines, yaml=language == "gotmpl-yaml")
            if language in ("gotmpl", "gotmpl-yaml") and size <= MAX_PARSE_BYTES
            else None
        )
        # A big file in a language whose top-level definitions start at column 0 is parsed only
        # around its hits: the other lines are blanked, so rows stay true and parsing is quick.
        self.sliced = slicing and self.grammar in SLICEABLE and size > SLICE_BYTES
        self._kept: list[tuple[int, int]] = []  # 0-based inclusive row ranges parsed so far
        self._covered = bytearray(len(lines) if self.sliced else 0)  # 1 for each parsed row
        # Parallel searches share cached parses; a sliced parse grows, so readers take turns.
        self._lock = threading.RLock()
        self._aliases: list[tuple[str, str, int]] | None = None
        if self.grammar is not None and not self.sliced:
            self._parse(None)

    @property
    def parsed(self) -> bool:
        """The hit kinds come from a parser (a grammar, or the template scanner), not a guess."""
        return self.grammar is not None or self.template is not None

    def prepare(self, line_nos: list[int]) -> None:
        """Make sure the structure around these lines is parsed (one parse for many hits)."""
        if not self.sliced:
            return
        with self._lock:
            self._prepare(line_nos)

    def _prepare(self, line_nos: list[int]) -> None:
        covered = self._covered
        new = [r - 1 for r in line_nos if 1 <= r <= len(self.lines) and not covered[r - 1]]
        if not new and self.tree is not None:
            return
        spans = self._kept + [_top_level_span(self.lines, r) for r in new]
        merged: list[tuple[int, int]] = []
        for a, b in sorted(spans):
            if merged and a <= merged[-1][1] + 1:
                merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
            else:
                merged.append((a, b))
        self._kept = merged
        for a, b in merged:
            covered[a : b + 1] = b"\x01" * (b - a + 1)
        if sum(b - a + 1 for a, b in merged) * 2 > len(self.lines):
            self.sliced = False  # most of the file is wanted: parse it all
            self._parse(None)
        else:
            self._parse(merged)

    def _parse(self, keep: list[tuple[int, int]] | None) -> None:
        import tree_sitter

        lines = self.lines
        if keep is not None:
            wanted = bytearray(len(lines))
            for a, b in keep:
                wanted[a : b + 1] = b"\x01" * (b - a + 1)
            lines = [line if wanted[i] else "" for i, line in enumerate(lines)]
        self.source = "\n".join(lines).encode("utf-8", errors="replace")
        parser = tree_sitter.Parser(languages.load(self.grammar or ""))
        self.tree = parser.parse(self.source)

    # -- one hit ---------------------------------------------------------------------------------

    def info(self, line_no: int, spans: list[tuple[int, int]]) -> HitInfo:
        """Kind, scope chain, and what the line defines, for a hit at `line_no` matching at `spans`."""
        if not 1 <= line_no <= len(self.lines):
            return HitInfo()
        if self.template is not None:
            t = self.template.info(line_no, spans)
            header_end = t.whole[0] if t.whole else None
            return HitInfo(t.kind, t.scope, whole=t.whole, header_end=header_end, extent=t.extent,
                           defines=t.defines, encloser=t.encloser,
                           belongs_to=t.belongs_to)  # fmt: skip
        if self.grammar is None:
            return self._heuristic_info(line_no)
        with self._lock:
            return self._info(line_no, spans)

    def _info(self, line_no: int, spans: list[tuple[int, int]]) -> HitInfo:
        self.prepare([line_no])
        nodes = [self._node_at(line_no, span) for span in spans[:3]] or [
            self._node_at(line_no, None)
        ]
        best: HitInfo | None = None
        for node, (c0, c1) in nodes:
            info = self._info_for(node, line_no - 1, c0, c1)
            if best is None or KINDS.index(info.kind) < KINDS.index(best.kind):
                best = info
        assert best is not None
        return best

    def context(self, line_no: int, spans: list[tuple[int, int]]) -> Context:
        """The statement around a hit, the blocks it sits in, and where its names were assigned."""
        if self.template is not None and 1 <= line_no <= len(self.lines):
            return Context(headers=self.template.headers(line_no)[:3])
        if self.grammar is None or not 1 <= line_no <= len(self.lines):
            return Context()
        with self._lock:
            if self.config:
                self.prepare([line_no])
                node, _ = self._node_at(line_no, spans[0] if spans else None)
                return Context(item=self._item(node, line_no - 1, None))
            return self._context(line_no, spans)

    def _context(self, line_no: int, spans: list[tuple[int, int]]) -> Context:
        self.prepare([line_no])
        node, _ = self._node_at(line_no, spans[0] if spans else None)
        row = line_no - 1
        stmt = node
        while stmt.parent is not None and stmt.parent.type not in CONTAINERS:
            if stmt.type in self.rules.scopes:
                break
            stmt = stmt.parent
        out = Context()
        s0, s1 = stmt.start_point.row, _end_row(stmt)
        if s1 - s0 <= 6:
            out.statement = (s0 + 1, s1 + 1)
        anc = node
        function = None
        while anc is not None:
            if (anc.type in self.rules.scopes and self._has_body(anc)) or anc.type in FUNCTIONS:
                function = anc
                break
            if anc.start_point.row < row and anc.type not in CONTAINERS:
                if anc.start_point.row + 1 not in out.headers:
                    out.headers.append(anc.start_point.row + 1)
            anc = anc.parent
        out.headers = out.headers[:3]
        if function is not None:
            out.assignments = self._assignments(stmt, row, function)
        if out.statement is None:
            out.item = self._item(node, row, stmt)
        return out

    def _item(self, node: Any, row: int, stop: Any) -> tuple[int, int] | None:
        """The largest element around a hit that is still a few rows, starting near it: the
        option entry `("max-args", {"default": 5, …})` in a long tuple, the list item or the
        key a YAML value is under, so that context ends where the entry does."""
        best = None
        n = node
        while n is not None and n is not stop and n.type not in CONTAINERS:
            first, last = n.start_point.row, _end_row(n)
            if last - first >= ITEM_ROWS or first < row - ITEM_ABOVE:
                break
            if last > first:
                best = (first + 1, last + 1)
            n = n.parent
        return best

    def macro_definition(self, name: str) -> tuple[int, int] | None:
        """The rows of this file's `#define name(…)` or `#define name value`: a top-level
        `name (x, y)` line (glibc's `TUNABLE_CALLBACK_FNDECL (set_arena_max, size_t)`) means what
        that macro expands to; `#define A B` means what B's own define holds."""
        if self.grammar not in ("c", "cpp"):
            return None
        with self._lock:
            for i, line in enumerate(self.lines):
                s = line.lstrip()
                if not (s.startswith("#") and name in s and "define" in s):
                    continue
                self.prepare([i + 1])
                col = len(line.encode("utf-8", "replace")) - len(s.encode("utf-8", "replace"))
                node = self.tree.root_node.named_descendant_for_point_range((i, col), (i, col))
                while node is not None and node.type not in ("preproc_function_def", "preproc_def"):
                    node = node.parent
                name_node = node.child_by_field_name("name") if node is not None else None
                if name_node is not None and self._text(name_node) == name:
                    return node.start_point.row + 1, _end_row(node) + 1
        return None

    def aliases(self) -> list[tuple[str, str, int]]:
        """The symbol aliases a C file declares: (defined name, other name, 1-based row), from
        `weak_alias (__getdelim, getdelim)` and its kin: the public name of a definition that
        is written under an internal one."""
        if self.grammar not in ("c", "cpp"):
            return []
        found = self._aliases
        if found is None:
            found = []
            for i, line in enumerate(self.lines):
                if "alias" not in line and "symbol" not in line:
                    continue
                m = _ALIAS_LINE.match(line)
                if m is None:
                    continue
                args = [a.strip() for a in m.group("args").split(",")]
                if len(args) == 4 and m.group("macro").endswith("symbol"):
                    args = args[1:3]  # versioned_symbol (libc, __x, x, GLIBC_2_1)
                if len(args) == 2 and all(re.fullmatch(r"[A-Za-z_]\w*", a) for a in args):
                    found.append((args[0], args[1], i + 1))
            self._aliases = found
        return found

    def definition_of(self, name: str) -> tuple[int, int, int] | None:
        """The rows (first, signature end, last; 1-based) of this C file's function `name`,
        found from a line that names it at the start (`__getdelim (char **lineptr, …`) and
        confirmed by the parser."""
        if self.grammar not in ("c", "cpp"):
            return None
        rx = re.compile(rf"^(?:[A-Za-z_][\w\s*]*[\s*])?{re.escape(name)}\s*\(")
        with self._lock:
            for i, line in enumerate(self.lines):
                if name not in line or not rx.match(line) or line.rstrip().endswith(";"):
                    continue
                self.prepare([i + 1])
                col = line.encode("utf-8", "replace").find(name.encode("utf-8", "replace"))
                node = self.tree.root_node.named_descendant_for_point_range((i, col), (i, col))
                while node is not None and node.type != "function_definition":
                    node = node.parent
                if node is not None:
                    return _start_row(node) + 1, self._header_end(node) + 1, _end_row(node) + 1
        return None

    # -- internals -------------------------------------------------------------------------------

    def _node_at(self, line_no: int, span: tuple[int, int] | None) -> tuple[Any, tuple[int, int]]:
        text = self.lines[line_no - 1]
        if span is None:
            span = (len(text) - len(text.lstrip()), len(text))
        c0 = len(text[: span[0]].encode("utf-8", errors="replace"))
        c1 = c0 + len(text[span[0] : span[1]].encode("utf-8", errors="replace"))
        row = line_no - 1
        node = self.tree.root_node.named_descendant_for_point_range((row, c0), (row, max(c0, c1)))
        return node, (c0, c1)

    def _info_for(self, node: Any, row: int, c0: int, c1: int) -> HitInfo:
        """Walk from the matched node to the root, noting what the hit is and what encloses it."""
        if self.config:
            return self._config_info(node, row, c0, c1)
        walk = _Walk(row, c0, c1)
        below, n = node, node
        while n is not None:
            if n.type == "ERROR" and not walk.chain and walk.recovered is None:
                if self.grammar in ("c", "cpp"):
                    walk.recovered = self._recover_function(n, below, row)
            self._note_text_kind(walk, n)
            if n.type in self.rules.decorators and walk.decorator is None:
                walk.decorator = n
            if n.type in CALLS and not walk.flags & {"call", "string", "comment"}:
                if _callee_contains(n, row, c0):
                    walk.flags.add("call")
            self._note_assignment(walk, n)
            self._note_scope(walk, n)
            below, n = n, n.parent
        return self._conclude(walk)

    def _note_text_kind(self, walk: _Walk, n: Any) -> None:
        t = n.type
        if "comment" in t:
            walk.flags.add("comment")
        elif t in _CODE_ISLANDS:
            walk.string_closed = True  # code inside a string: `f"{retry()}"`
        elif t in STRINGS and not walk.string_closed:
            walk.flags.add("string")
        if (
            t in self.rules.imports
            or (t in ("call", "call_expression") and _is_require(n))
            or (t == "variable_declarator" and _is_require(n.child_by_field_name("value")))
        ):
            walk.flags.add("import")  # also `const express = require("express")`

    @staticmethod
    def _note_assignment(walk: _Walk, n: Any) -> None:
        """The match is in a statement that sets a value (`fp->_flags |= _IO_LINE_BUF`,
        `self.timeout = timeout`), not passed to a call or tested: a writer ranks above readers."""
        t = n.type
        if "statement_done" in walk.flags:
            return
        if t in CALLS:
            walk.flags.add("statement_done")  # an argument: `f(FLAG)`, `x = f(FLAG)`
        elif t in _OPERATIONS:
            op = n.child_by_field_name("operator")
            if op is None or op.type not in ("|", "+"):
                walk.flags.add("operand")  # `x = fp->_flags & FLAG` reads FLAG
        elif t in ASSIGNMENTS:
            op = n.child_by_field_name("operator")
            compound = "augmented" in t or "compound" in t or (op is not None and op.type != "=")
            if compound or "operand" not in walk.flags:
                walk.flags.add("assignment")  # `flags |= FLAG`, `flags &= ~FLAG`, `x = FLAG`
            walk.flags.add("statement_done")
        elif t in CONTAINERS or t in FUNCTIONS or t.endswith(("_statement", "_clause")):
            walk.flags.add("statement_done")

    def _note_scope(self, walk: _Walk, n: Any) -> None:
        """An enclosing definition joins the chain; one whose name the hit matched is defined here."""
        t = n.type
        is_scope = (t in self.rules.scopes and self._has_body(n)) or self._named_anonymous(n)
        if is_scope:
            walk.chain.append(n)
        if (
            "definition" in walk.flags
            or not (is_scope or t in self.rules.values)
            or t in _LABEL_ONLY
        ):
            return
        name = _name_node(n)
        if name is None or not _overlaps(name, walk.row, walk.c0, walk.c1):
            return
        if not is_scope and self._inside_function(n):
            return  # a local variable, not a definition anyone would look for
        walk.flags.add("definition")
        walk.info.defines = self._text(name)
        walk.info.whole = (_start_row(n) + 1, _end_row(n) + 1)
        walk.info.header_end = self._header_end(n) + 1
        if walk.chain and walk.chain[-1] is n:
            walk.chain.pop()  # the line itself shows the name it defines

    def _conclude(self, walk: _Walk) -> HitInfo:
        info, chain = walk.info, walk.chain
        info.kind = next(
            (
                k
                for k in ("comment", "import", "definition", "string", "call", "assignment")
                if k in walk.flags
            ),
            "reference",
        )
        info.scope = [self._label(s, inner=i == 0) for i, s in enumerate(chain)][::-1]
        if chain:
            info.extent = (chain[0].start_point.row + 1, _end_row(chain[0]) + 1)
            named = next((c for c in chain if c.type not in _LABEL_ONLY), None)
            name = _name_node(named) if named is not None else None
            if name is not None and name.type in NAMES:
                info.encloser = (self._text(name), name.start_point.row + 1)
        elif walk.recovered is not None:
            label, first, last = walk.recovered
            info.scope = [label]
            info.extent = (first + 1, last + 1)
        if walk.decorator is not None:
            target = _decorated(walk.decorator, self.rules.scopes)
            if target is not None:
                if chain and chain[0] == target:
                    info.scope.pop()
                info.decorates = self._label(target, inner=True)
        return info

    def _config_info(self, node: Any, row: int, c0: int, c1: int) -> HitInfo:
        """A config file's hit: its key path (`plugin_routing › cache › redis`), and whether the
        match is in a key (a definition), a value, or a comment."""
        info = HitInfo()
        path: list[str] = []
        defined = comment = False
        n = node
        while n is not None:
            comment = comment or "comment" in n.type
            if n.type in _KEY_NODES:
                key = _key_of(n, self.source)
                if key:
                    path.append(key)
                    if not defined and _key_overlaps(n, row, c0, c1):
                        defined = True
                        info.whole = (n.start_point.row + 1, _end_row(n) + 1)
                        info.header_end = n.start_point.row + 1
            elif n.type in _SEQUENCE_ITEMS or (n.parent is not None and n.parent.type in _ARRAYS):
                path.append(f"[{_index_among(n)}]")
            n = n.parent
        info.kind = "comment" if comment else "definition" if defined else "reference"
        info.scope = path[::-1]
        if comment and self.lines[row].lstrip().startswith(("#", "//")):
            below = self._described_row(row)
            if below is not None:  # a comment above a key is about that key
                text = self.lines[below - 1]
                col = len(text.encode("utf-8", "replace")) - len(
                    text.lstrip().encode("utf-8", "replace")
                )
                node = self.tree.root_node.named_descendant_for_point_range(
                    (below - 1, col), (below - 1, col + 1)
                )
                owner = self._config_info(node, below - 1, col, col + 1)
                info.scope = owner.scope
                info.belongs_to = below
        return info

    def _described_row(self, row: int) -> int | None:
        """The row right below a comment block (1-based): what the comment is about. None for a
        file's opening comment or a block a blank line parts from what follows."""
        return described_row(self.lines, row + 1, ("#", "//"))

    def _recover_function(self, error: Any, below: Any, row: int) -> tuple[str, int, int] | None:
        """A C function the parser could not close (`#if` branches with unbalanced braces, as in
        glibc's malloc): its signature is among the error's children before the hit, within the
        top-level block the hit is in. Returns the label and the function's rows (0-based)."""
        kids = error.children
        idx = next((i for i, k in enumerate(kids) if k.start_byte == below.start_byte), None)
        if idx is None:
            return None
        first, last = _top_level_span(self.lines, row)
        for j in range(idx - 1, -1, -1):
            k = kids[j]
            if k.start_point.row < first:
                return None
            if k.type == "function_declarator" or (
                k.type == "pointer_declarator" and "function_declarator" in _types_below(k)
            ):
                s = j
                while (
                    s > 0
                    and kids[s - 1].type in _TYPE_PARTS
                    and kids[s - 1].start_point.row >= first
                ):
                    s -= 1
                label = _tidy(self.source[kids[s].start_byte : k.end_byte], True)
                return label, kids[s].start_point.row, last
        return None

    @staticmethod
    def _has_body(n: Any) -> bool:
        """`struct foo { … }` defines; `struct foo *p` in a parameter list only names it."""
        if n.type in _NEEDS_BODY:
            return n.child_by_field_name("body") is not None
        return True

    def _named_anonymous(self, n: Any) -> bool:
        """`const handler = async (req) => {…}`: an anonymous function named by what holds it."""
        return (
            n.type in _ANON_FUNCTIONS and n.parent is not None and n.parent.type in _NAMED_BY_PARENT
        )

    def _inside_function(self, n: Any) -> bool:
        p = n.parent
        while p is not None:
            if p.type in FUNCTIONS:
                return True
            p = p.parent
        return False

    def _label(self, n: Any, *, inner: bool) -> str:
        """`class Session`, `def send(self, request, *, stream=False)`: a definition's signature."""
        if n.type == "case_item":  # a shell case arm: `case "$1" in --help | -h)`
            head = self.source[n.start_byte : self.source.find(b"\n", n.start_byte)]
            close = head.find(b")")
            head = head[: close + 1] if close >= 0 else head
            value = n.parent.child_by_field_name("value") if n.parent is not None else None
            word = self.source[value.start_byte : value.end_byte] if value is not None else b""
            return _tidy(b"case " + word + b" in " + head if word else head, inner)
        if self._named_anonymous(n):
            holder = n.parent
            if holder.type == "variable_declarator" and holder.parent is not None:
                holder = holder.parent  # `const makeApp = (secret) =>`, with its keyword
            end = _body_start(n) if inner else n.start_byte
            return _tidy(self.source[holder.start_byte : max(end, n.start_byte)], inner)
        if not inner:
            name = _name_node(n)
            if name is not None and n.type != "block":
                return _tidy(self.source[n.start_byte : name.end_byte], False)
        end = _body_start(n)
        if end < 0:  # no body to stop at: the first line (`type Server struct {`)
            end = self.source.find(b"\n", n.start_byte)
        prefix = "type " if n.type == "type_spec" else ""
        return prefix + _tidy(self.source[n.start_byte : end], inner)

    def _assignments(self, stmt: Any, row: int, function: Any) -> list[int]:
        """Rows above the hit where the names on its line were last assigned: in the function
        first (a default a few lines up), then at the top of the file (a constant)."""
        query = languages.locals_query(self.language or "")
        if query is None:
            return []
        import tree_sitter

        small = _end_row(stmt) - stmt.start_point.row <= 6
        wanted: set[str] = set()
        stack = [stmt]
        while stack and len(wanted) < 16:
            n = stack.pop()
            if not small and not n.start_point.row <= row <= n.end_point.row:
                continue
            if n.type in NAMES and n.child_count == 0 and (small or n.start_point.row == row):
                wanted.add(self._text(n))
            stack.extend(n.children)
        if not wanted:
            return []
        signature_end = self._header_end(function) if function.child_by_field_name("body") else -1
        cursor = tree_sitter.QueryCursor(query)
        first = max(function.start_point.row, stmt.start_point.row - NEARBY_ROWS)
        cursor.set_point_range((first, 0), (max(row, _end_row(stmt)) + 1, 0))
        found: dict[str, int] = {}
        for n in cursor.captures(function).get("n", []):
            r = n.start_point.row
            name = self._text(n)
            if r >= stmt.start_point.row:
                wanted.discard(name)  # the hit assigns it itself: an earlier value is moot
            elif r > signature_end and name in wanted:  # the signature is in the scope label
                found[name] = max(found.get(name, -1), r)
        found = {k: v for k, v in found.items() if k in wanted}
        top = self.tree.root_node
        if function.parent is not None:
            for c in top.named_children:
                if c.start_point.row >= function.start_point.row:
                    break
                for cand in (c, *c.named_children):
                    if cand.type in self.rules.values:
                        name_node = _name_node(cand)
                        if name_node is not None and self._text(name_node) in wanted:
                            found.setdefault(self._text(name_node), cand.start_point.row)
        rows = sorted({r + 1 for r in found.values()}, reverse=True)
        return rows[:3]

    def _text(self, n: Any) -> str:
        return self.source[n.start_byte : n.end_byte].decode("utf-8", "replace")

    def _header_end(self, n: Any) -> int:
        """The last row of a definition's signature (several for a long parameter list)."""
        body = n.child_by_field_name("body")
        if body is None or body.start_point.row == n.start_point.row:
            return int(n.start_point.row)
        row = int(body.start_point.row)
        text = self.lines[row]
        first_col = len(text.encode("utf-8", "replace")) - len(
            text.lstrip().encode("utf-8", "replace")
        )
        # a body that starts its own line (Python's block, a K&R `{`) leaves the signature above it
        return row - 1 if body.start_point.column <= first_col else row

    def _heuristic_info(self, line_no: int) -> HitInfo:
        text = self.lines[line_no - 1]
        info = HitInfo()
        if self.language is not None and heuristics.looks_like_comment(text, self.language):
            info.kind = "comment"  # in prose (Markdown's `* item`, `# Title`) nothing is a comment
        elif heuristics.is_definition(text):
            info.kind = "definition"
        scope = heuristics.enclosing_scope(self.lines, line_no)
        if scope:
            info.scope = [scope]
        return info


# -- slicing -------------------------------------------------------------------------------------

_LABEL = re.compile(r"^\w+:(?!:)")  # a C goto label sits at column 0 inside a function


def _starts_top_level(lines: list[str], i: int) -> bool:
    """Row i (0-based) begins a top-level definition: it starts at column 0 after a blank line,
    a closing brace or the end of a comment."""
    text = lines[i]
    if not text or text[0] in " \t}#)/*" or _LABEL.match(text):
        return False
    if i == 0:
        return True
    before = lines[i - 1].rstrip()
    return not before or before.endswith(("}", "};", "*/")) or before.startswith("//")


def _top_level_span(lines: list[str], row: int, reach: int = 4000) -> tuple[int, int]:
    """The rows of the top-level definition around `row` (0-based, inclusive)."""
    start = row
    while start > 0 and row - start < reach and not _starts_top_level(lines, start):
        start -= 1
    end = row
    last = min(len(lines) - 1, row + reach)
    while end < last:
        text = lines[end]
        if end > row and (text.startswith("}") or _starts_top_level(lines, end + 1)):
            break
        end += 1
    return start, end


_TYPE_PARTS = frozenset(
    {"storage_class_specifier", "type_qualifier", "primitive_type", "type_identifier",
     "sized_type_specifier", "struct_specifier", "enum_specifier", "union_specifier",
     "attribute_specifier", "ms_declspec_modifier", "identifier"}
)  # fmt: skip


def _types_below(n: Any, depth: int = 4) -> set[str]:
    out = set()
    stack = [(n, 0)]
    while stack:
        m, d = stack.pop()
        out.add(m.type)
        if d < depth:
            stack.extend((c, d + 1) for c in m.named_children)
    return out


# -- tree helpers ----------------------------------------------------------------------------------


def _end_row(n: Any) -> int:
    """The last row a node covers (a node ending at column 0 ends on the row before)."""
    end = n.end_point
    return end.row - 1 if end.column == 0 and end.row > n.start_point.row else end.row


def _start_row(n: Any) -> int:
    """A definition's first row, its decorators included."""
    p = n.parent
    if p is not None and p.type == "decorated_definition":
        return p.start_point.row
    return n.start_point.row


def _callee_contains(call: Any, row: int, col: int) -> bool:
    """The match is in what a call calls (`send` in `adapter.send(x)`), not in its arguments."""
    callee = next(
        (c for f in CALLEE_FIELDS if (c := call.child_by_field_name(f)) is not None), None
    )
    return callee is not None and _contains(callee, row, col)


def _contains(n: Any, row: int, col: int) -> bool:
    return (
        (n.start_point.row, n.start_point.column)
        <= (row, col)
        < (
            n.end_point.row,
            n.end_point.column,
        )
    )


def _overlaps(n: Any, row: int, c0: int, c1: int) -> bool:
    s = (n.start_point.row, n.start_point.column)
    e = (n.end_point.row, n.end_point.column)
    return s < (row, max(c1, c0 + 1)) and (row, c0) < e


def _name_node(n: Any) -> Any | None:
    name = n.child_by_field_name("name")
    if name is not None:
        return name
    d = n.child_by_field_name("declarator")
    while d is not None and d.type not in NAMES:
        inner = d.child_by_field_name("declarator")
        if inner is None:
            inner = next((c for c in d.named_children if c.type in NAMES), None)
        d = inner
    if d is not None:
        return d
    left = n.child_by_field_name("left")
    if left is not None and left.type in NAMES:
        return left
    return next((c for c in n.named_children if c.type in NAMES), None)


def _body_start(n: Any) -> int:
    """Where a definition's body begins (its signature ends), as a byte offset."""
    body = n.child_by_field_name("body")
    if body is None:
        body = next(
            (c for c in n.children if c.type in ("block_start", "field_declaration_list",
                                                 "declaration_list", "class_body", "block")),
            None,
        )  # fmt: skip
    comment = next(
        (c for c in n.children if "comment" in c.type and c.start_byte > n.start_byte), None
    )  # Ruby keeps a class's leading comment inside the class node
    if body is not None and body.start_byte > n.start_byte:
        end = int(body.start_byte)
        return min(end, int(comment.start_byte)) if comment is not None else end
    return int(n.end_byte) if n.end_point.row == n.start_point.row else -1


def _tidy(raw: bytes, inner: bool) -> str:
    text = raw.decode("utf-8", errors="replace")
    kept = [ln for ln in text.splitlines() if not _DECORATOR_LINE.match(ln)] or [text]
    while len(kept) > 1 and _MACRO_LINE.match(kept[0]) and "(" in " ".join(kept[1:]):
        kept.pop(0)  # `libc_hidden_def (x)` without a semicolon, read as part of what follows
    s = " ".join(" ".join(kept).split())
    s = re.sub(r"\(\s+", "(", s)
    s = re.sub(r",?\s*\)", ")", s)
    s = _TRAILER.sub("", s)
    limit = SCOPE_CHARS if inner else 60
    return s if len(s) <= limit else s[: limit - 1].rstrip() + "…"


def _is_require(n: Any | None) -> bool:
    if n is None or n.type not in ("call", "call_expression"):
        return False
    fn = n.child_by_field_name("function") or n.child_by_field_name("method")
    return (
        fn is not None
        and fn.type == "identifier"
        and fn.text
        in (
            b"require",
            b"require_relative",
        )
    )


def _decorated(decorator: Any, scopes: frozenset[str]) -> Any | None:
    """The definition a decorator, annotation or attribute belongs to."""
    p = decorator.parent
    while p is not None and p.type in ("modifiers", "attribute_list", "decorated_definition"):
        if p.type == "decorated_definition":
            return p.child_by_field_name("definition")
        p = p.parent
    if p is not None and p.type in scopes:
        return p
    sib = decorator.next_named_sibling
    while sib is not None and (
        sib.type in ("attribute_item", "decorator") or "comment" in sib.type
    ):
        sib = sib.next_named_sibling
    return sib if sib is not None and sib.type in scopes else None


def _key_node(n: Any) -> Any | None:
    key = n.child_by_field_name("key")
    if key is not None:
        return key
    for c in n.named_children:
        if c.type in ("bare_key", "dotted_key", "quoted_key", "identifier", "expression"):
            return c
    return None


def _key_overlaps(n: Any, row: int, c0: int, c1: int) -> bool:
    """The match is in the key (`redis:`, `"redis":`, `[cache.redis]`, `resource "x" "redis" {`)."""
    if n.type == "block":
        head = [c for c in n.named_children if c.type not in ("block_start", "body", "block_end")]
        return any(_overlaps(c, row, c0, c1) for c in head)
    k = _key_node(n)
    return k is not None and _overlaps(k, row, c0, c1)


def _key_of(n: Any, source: bytes) -> str:
    if n.type == "block":  # HCL: `resource "aws_s3_bucket" "logs"`
        parts = []
        for c in n.named_children:
            if c.type == "block_start" or c.type == "body":
                break
            parts.append(source[c.start_byte : c.end_byte].decode("utf-8", "replace"))
        return " ".join(parts)[:60]
    key = _key_node(n)
    if key is None:
        return ""
    text = source[key.start_byte : key.end_byte].decode("utf-8", "replace").strip().strip("\"'")
    text = " ".join(text.split())[:40]
    return text + "[]" if n.type == "table_array_element" else text


def _index_among(n: Any) -> int:
    i = 0
    sib = n.prev_named_sibling
    while sib is not None:
        if "comment" not in sib.type:
            i += 1
        sib = sib.prev_named_sibling
    return i


# -- the cache -------------------------------------------------------------------------------------

_cache: OrderedDict[tuple[str, str], FileSyntax] = OrderedDict()
_cache_bytes = 0
_cache_lock = threading.Lock()


def syntax_for(key: tuple[str, str], language: str | None, lines: list[str]) -> FileSyntax:
    """The file's structure, parsed once per snapshot file (`key` = snapshot root, path)."""
    global _cache_bytes
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None and hit.lines == lines:
            _cache.move_to_end(key)
            return hit
    syntax = FileSyntax(language, lines)
    with _cache_lock:
        old = _cache.pop(key, None)
        if old is not None:
            _cache_bytes -= len(old.source)
        _cache[key] = syntax
        _cache_bytes += len(syntax.source)
        while _cache_bytes > CACHE_BYTES and len(_cache) > 1:
            _, dropped = _cache.popitem(last=False)
            _cache_bytes -= len(dropped.source)
    return syntax


def clear_cache() -> None:
    """Forget every parse (benchmarks measure the uncached cost)."""
    global _cache_bytes
    with _cache_lock:
        _cache.clear()
        _cache_bytes = 0
