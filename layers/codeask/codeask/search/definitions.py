"""What a file defines (functions, methods, classes, constants, config keys), read by the parser, with names and docs."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any

from codeask.search import heuristics, languages
from codeask.search.filekinds import file_kind, language_of, refine_language
from codeask.search.languages import FUNCTIONS, STRINGS
from codeask.search.ranking import is_licence_header

# Helpers of the parser's walk, shared inside the search package.
from codeask.search.syntax import _KEY_NODES, FileSyntax, _end_row, _key_of, _name_node

MAX_PER_FILE = 3000  # a data file with a key per line says little more after this many
DOC_CHARS = 400
DOC_LINES = 12  # comment lines read above a definition
_CLASSY = ("class", "struct", "interface", "trait", "impl", "enum", "module", "record", "union")
_BLOCK_END = re.compile(r"\*/\s*(-?\}\})?\s*$")
_BLOCK_START = re.compile(r"/\*")
_TEMPLATE_COMMENT = re.compile(r"^\s*\{\{-?\s*/\*")
_PROSE_LINES = 6


@dataclass(frozen=True)
class Definition:
    """One named thing a file defines; `line` is the line of its name (1-based)."""

    line: int
    end: int
    kind: str  # function, method, class, constant, field, key, template, file
    name: str
    scope: tuple[str, ...]  # names of the enclosing definitions, or a config key's parents
    doc: str  # the comment right above it, or the docstring or comment first inside it


def extract(path: str, lines: list[str]) -> list[Definition]:
    """Every definition in one file, in line order, after a file-level entry for the file itself."""
    language = refine_language(language_of(path), lines)
    out = [_file_entry(path, lines, language)]
    if languages.has_grammar(language):
        syntax = FileSyntax(language, lines, slicing=False)
        if syntax.parsed:
            out += _parsed(syntax, lines)
            return out[: MAX_PER_FILE + 1]
    if file_kind(path) != "docs":
        out += _heuristic(lines, language)
    return out[: MAX_PER_FILE + 1]


# -- parsed files ----------------------------------------------------------------------------------

_queries: dict[str, Any] = {}
_queries_lock = threading.Lock()


def _query(grammar: str) -> Any:
    """One query capturing every node type that may define a name in this grammar."""
    with _queries_lock:
        q = _queries.get(grammar)
        if q is None:
            import tree_sitter

            lang = languages.load(grammar)
            rules = languages.RULES[grammar]
            wanted = rules.scopes | rules.values
            if grammar in languages.CONFIG:
                wanted = wanted | _KEY_NODES
            kinds = sorted(t for t in wanted if lang.id_for_node_kind(t, True) is not None)
            q = tree_sitter.Query(lang, "[" + " ".join(f"({t})" for t in kinds) + "] @d")
            _queries[grammar] = q
        return q


def _parsed(syntax: FileSyntax, lines: list[str]) -> list[Definition]:
    import tree_sitter

    grammar = syntax.grammar or ""
    rules = syntax.rules
    nodes = tree_sitter.QueryCursor(_query(grammar)).captures(syntax.tree.root_node).get("d", [])
    nodes.sort(key=lambda n: n.start_byte)
    out = []
    for n in nodes:
        d = (
            _config_key(syntax, n, lines)
            if syntax.config
            else _code_definition(syntax, rules, n, lines)
        )
        if d is not None:
            out.append(d)
            if len(out) >= MAX_PER_FILE:
                break
    return out


def _code_definition(syntax: FileSyntax, rules: Any, n: Any, lines: list[str]) -> Definition | None:
    t = n.type
    is_scope = t in rules.scopes
    if is_scope and t in (
        "struct_specifier",
        "union_specifier",
        "enum_specifier",
        "class_specifier",
    ):
        if n.child_by_field_name("body") is None:
            return None  # `struct foo *p` names a type; it does not define one
    chain = _enclosing(n, rules.scopes)
    if not is_scope:
        if any(p.type in FUNCTIONS for p in _ancestors(n)):
            return None  # a local variable
        if t == "declaration" and _declares_function(n):
            return None  # a prototype; the definition is elsewhere
    name_node = _name_node(n)
    if name_node is None:
        return None
    name = _text(syntax, name_node).strip()
    if not name or len(name) > 120 or "\n" in name:
        return None
    kind = _kind(t, is_scope, chain)
    top = n.parent if n.parent is not None and n.parent.type == "decorated_definition" else n
    doc = " ".join(filter(None, (_comment_above(lines, top.start_point.row, syntax.language),
                                 _doc_inside(syntax, n))))  # fmt: skip
    scope = tuple(_text(syntax, m).strip() for p in chain if (m := _name_node(p)) is not None)
    return Definition(
        name_node.start_point.row + 1, _end_row(n) + 1, kind, name, scope, doc[:DOC_CHARS]
    )


def _config_key(syntax: FileSyntax, n: Any, lines: list[str]) -> Definition | None:
    if n.type not in _KEY_NODES:
        return None
    key = _key_of(n, syntax.source)
    if not key:
        return None
    parents = [
        k for p in _ancestors(n) if p.type in _KEY_NODES and (k := _key_of(p, syntax.source))
    ]
    doc = _comment_above(lines, n.start_point.row, syntax.language)
    return Definition(
        n.start_point.row + 1,
        _end_row(n) + 1,
        "key",
        key,
        tuple(reversed(parents)),
        doc[:DOC_CHARS],
    )


def _ancestors(n: Any) -> Any:
    p = n.parent
    while p is not None:
        yield p
        p = p.parent


def _enclosing(n: Any, scopes: frozenset[str]) -> list[Any]:
    """The definitions around `n`, outer first."""
    return [p for p in _ancestors(n) if p.type in scopes][::-1]


def _declares_function(n: Any) -> bool:
    stack = [c for c in n.named_children if c.type != "compound_statement"]
    depth = 0
    while stack and depth < 40:
        m = stack.pop()
        depth += 1
        if m.type == "function_declarator":
            return True
        if m.type in ("init_declarator", "pointer_declarator", "parenthesized_declarator"):
            stack.extend(m.named_children)
    return False


def _kind(t: str, is_scope: bool, chain: list[Any]) -> str:
    if t in FUNCTIONS or t == "preproc_function_def":
        inside_class = any(any(w in p.type for w in _CLASSY) for p in chain)
        return "method" if inside_class else "function"
    if is_scope:
        return "class"
    if chain and any(any(w in p.type for w in _CLASSY) for p in chain):
        return "field"
    if t in ("field_declaration", "enumerator", "enum_constant", "enum_variant", "pair"):
        return "field"
    return "constant"


def _text(syntax: FileSyntax, n: Any) -> str:
    return syntax.source[n.start_byte : n.end_byte].decode("utf-8", "replace")


def _doc_inside(syntax: FileSyntax, n: Any) -> str:
    """A docstring, or a comment that opens the body."""
    body = n.child_by_field_name("body")
    if body is None or not body.named_children:
        return ""
    first = body.named_children[0]
    if "comment" in first.type:
        return _text(syntax, first)
    if first.type == "expression_statement" and first.named_children:
        inner = first.named_children[0]
        if inner.type in STRINGS:
            return _text(syntax, inner)
    return ""


# -- comments, line by line ------------------------------------------------------------------------


def _comment_above(lines: list[str], row: int, language: str | None) -> str:
    """The comment lines right above 0-based `row`: line comments, or a whole block comment."""
    got: list[str] = []
    i = row - 1
    while i >= 0 and len(got) < DOC_LINES:
        text = lines[i]
        if _BLOCK_END.search(text) and not _BLOCK_START.search(text):
            j = i
            while j > 0 and i - j < DOC_LINES and not _BLOCK_START.search(lines[j]):
                j -= 1
            got[:0] = lines[j : i + 1]
            i = j - 1
            continue
        stripped = text.strip()
        if stripped and (
            heuristics.looks_like_comment(text, language) or _TEMPLATE_COMMENT.match(text)
        ):
            got.insert(0, text)
            i -= 1
            continue
        break
    return " ".join(s.strip() for s in got if not is_licence_header(1, s))


# -- files without a grammar -------------------------------------------------------------------------


def _heuristic(lines: list[str], language: str | None) -> list[Definition]:
    out = []
    for i, text in enumerate(lines):
        if len(text) > 300 or not heuristics.is_definition(text):
            continue
        name = heuristics.defined_name(text)
        if not name:
            continue
        scope = heuristics.enclosing_scope(lines, i + 1) if text[:1].isspace() else None
        kind = "template" if "define" in text and "{{" in text else "definition"
        out.append(
            Definition(i + 1, i + 1, kind, name, (scope,) if scope else (),
                       _comment_above(lines, i, language)[:DOC_CHARS])
        )  # fmt: skip
        if len(out) >= MAX_PER_FILE:
            break
    return out


def _file_entry(path: str, lines: list[str], language: str | None) -> Definition:
    """The file itself: its name, and its opening comment or docstring (prose: its first lines)."""
    name = path.rsplit("/", 1)[-1]
    head: list[str] = []
    if file_kind(path) == "docs":
        head = [ln for ln in lines[:40] if ln.strip()][:_PROSE_LINES]
    else:
        for i, text in enumerate(lines[:40]):
            s = text.strip()
            if not s or is_licence_header(i + 1, text):
                continue
            if s.startswith(('"""', "'''")):  # a module docstring, to its end
                quote = s[:3]
                for j, more in enumerate(lines[i : i + _PROSE_LINES]):
                    head.append(more.strip())
                    if more.count(quote) >= (1 if j else 2):
                        break
                break
            if heuristics.looks_like_comment(text, language):
                head.append(s)
                if len(head) >= _PROSE_LINES:
                    break
            elif head:
                break
    return Definition(1, len(lines), "file", name, (), " ".join(head)[:DOC_CHARS])
