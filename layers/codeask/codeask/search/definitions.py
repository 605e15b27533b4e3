"""What a file defines (functions, methods, classes, constants, config keys), read by the parser, with names and docs."""

from __future__ import annotations

import os
import re
import threading
from typing import Any, NamedTuple

from codeask.search import heuristics, languages
from codeask.search.filekinds import file_kind, language_of, refine_language
from codeask.search.gotemplate import NAMED, TemplateSyntax
from codeask.search.languages import CALLS, FUNCTIONS, STRINGS
from codeask.search.ranking import is_licence_header

# Helpers of the parser's walk, shared inside the search package.
from codeask.search.syntax import (
    _KEY_NODES,
    MAX_PARSE_BYTES,
    _end_row,
    _key_of,
    _name_node,
    nesting_ok,
)

MAX_PER_FILE = 3000  # a data file with a key per line says little more after this many
DOC_CHARS = 400
DOC_LINES = 12  # comment lines read above a definition
_CLASSY = ("class", "struct", "interface", "trait", "impl", "enum", "module", "record", "union")
_NEEDS_BODY = frozenset(
    {"struct_specifier", "union_specifier", "enum_specifier", "class_specifier"}
)
# a block comment's end: `*/`, or a template comment's `*/}}` (one optional part between two runs
# of blanks, `\s*(…)?\s*$`, backtracked quadratically over a long run of them)
_BLOCK_END = re.compile(r"\*/(?:\s*-?\}\})?$")
_BLOCK_START = re.compile(r"/\*")
_TEMPLATE_COMMENT = re.compile(r"^\s*\{\{-?\s*/\*")
_PROSE_LINES = 6
# The walk never enters these: a function's body holds locals, not definitions, and expressions,
# strings and comments hold none. (Only FUNCTIONS changes what is found; the rest saves time.)
_NO_DEFINITIONS = (
    FUNCTIONS
    | STRINGS
    | CALLS
    | frozenset(
        """comment line_comment block_comment argument_list arguments binary_expression
        parenthesized_expression dictionary list tuple set initializer_list subscript attribute
        identifier number_literal integer float string_literal expression_list keyword_argument
        conditional_expression comparison_operator boolean_operator unary_expression
        field_expression pointer_expression cast_expression sizeof_expression primitive_type
        type_identifier parameter_list parameters formal_parameters function_declarator
        pointer_declarator array_declarator compound_literal_expression list_comprehension
        dictionary_comprehension set_comprehension generator_expression lambda preproc_arg
        preproc_params array object member_expression true false null none""".split()
    )
)


class Definition(NamedTuple):
    """One named thing a file defines; `line` is the line of its name (1-based)."""

    line: int
    end: int
    kind: str  # function, method, class, constant, field, key, template, file
    name: str
    scope: tuple[str, ...]  # names of the enclosing definitions, or a config key's parents
    doc: str  # the comment right above it, or the docstring or comment first inside it


def extract(
    path: str, lines: list[str], source: bytes | None = None, kind: str | None = None
) -> list[Definition]:
    """Every definition in one file, in line order, after a file-level entry for the file itself.

    `source` is the file's bytes when the caller has them (`lines` is them decoded and split);
    `kind`, its `file_kind` when the caller has it."""
    language = refine_language(language_of(path), lines)
    if kind is None:
        kind = file_kind(path)
    out = [_file_entry(path, lines, language, kind)]
    if languages.has_grammar(language) and language is not None:
        if source is None:
            source = "\n".join(lines).encode("utf-8", "replace")
        if language == "yaml" and b"{{" in source:
            return (out + _template_keys(lines, language))[: MAX_PER_FILE + 1]
        if len(source) <= MAX_PARSE_BYTES and nesting_ok(language, lines):
            tree = _parser(language).parse(source)
            if language in languages.CONFIG:
                out += _config_keys(language, tree, source, lines)
            else:
                out += _code(language, tree, source, lines)
            return out[: MAX_PER_FILE + 1]
    if kind != "docs":
        found = _heuristic(lines, language)
        out += _template_ends(lines, found) if language == "gotmpl" else found
    return out[: MAX_PER_FILE + 1]


# -- parsed files ----------------------------------------------------------------------------------

_local = threading.local()
_queries: dict[str, Any] = {}
_queries_lock = threading.Lock()


def _unlock_after_fork() -> None:
    global _queries_lock
    _queries_lock = threading.Lock()  # another thread may have held it when a worker was forked


os.register_at_fork(after_in_child=_unlock_after_fork)


def _parser(grammar: str) -> Any:
    """This thread's parser for a grammar (a parser is not shared across threads)."""
    parsers = _local.__dict__.setdefault("parsers", {})
    p = parsers.get(grammar)
    if p is None:
        import tree_sitter

        p = parsers[grammar] = tree_sitter.Parser(languages.load(grammar))
    return p


def _code(grammar: str, tree: Any, source: bytes, lines: list[str]) -> list[Definition]:
    """Definitions outside function bodies, in one walk that never enters a function, a string or
    an expression: the scopes around each are the walk's own stack, not a climb to the root.
    (A node's list of children costs one call, so the walk reads lists, not a cursor.)"""
    scopes = languages.RULES[grammar].scopes
    wanted = _wanted(grammar)
    out: list[Definition] = []
    stack: list[tuple[int, str, str]] = []  # enclosing scopes: (end byte, node type, name)
    decorated: dict[int, int] = {}  # end byte of a decorated definition -> its first row
    todo = [iter(tree.root_node.named_children)]
    while todo:
        n = next(todo[-1], None)
        if n is None:
            todo.pop()
            continue
        t = n.type
        if t in wanted:
            start = n.start_byte
            while stack and stack[-1][0] <= start:
                stack.pop()
            d, pushed = _code_definition(
                grammar, n, t, t in scopes, stack, source, lines, decorated
            )
            if d is not None:
                out.append(d)
                if len(out) >= MAX_PER_FILE:
                    break
            if pushed is not None:
                stack.append(pushed)
        elif t == "decorated_definition":
            decorated[n.end_byte] = n.start_point.row
        if t not in _NO_DEFINITIONS:
            kids = n.named_children
            if kids:
                todo.append(iter(kids))
    return out


_wanted_types: dict[str, frozenset[str]] = {}


def _wanted(grammar: str) -> frozenset[str]:
    """The node types that may define a name in a grammar: its scopes and its values."""
    got = _wanted_types.get(grammar)
    if got is None:
        rules = languages.RULES[grammar]
        got = _wanted_types[grammar] = rules.scopes | rules.values
    return got


def _code_definition(
    grammar: str,
    n: Any,
    t: str,
    is_scope: bool,
    stack: list[tuple[int, str, str]],
    source: bytes,
    lines: list[str],
    decorated: dict[int, int],
) -> tuple[Definition | None, tuple[int, str, str] | None]:
    """The definition `n` makes, if any, and what it adds to the scope stack."""
    if is_scope and t in _NEEDS_BODY and n.child_by_field_name("body") is None:
        return None, None  # `struct foo *p` names a type; it does not define one
    if not is_scope and t == "declaration" and _declares_function(n):
        return None, None  # a prototype; the definition is elsewhere
    name_node = _name_node(n)
    name = ""
    row = 0
    if name_node is not None:
        row = name_node.start_point.row
        name = source[name_node.start_byte : name_node.end_byte].decode("utf-8", "replace").strip()
        if len(name) > 120 or "\n" in name:
            name = ""
    end_byte = n.end_byte
    pushed = (end_byte, t, name) if is_scope else None
    if not name:
        return None, pushed
    kind = _kind(t, is_scope, stack)
    first_row = n.start_point.row
    top = decorated.get(end_byte, first_row) if decorated else first_row
    above = _comment_above(lines, top, grammar)
    inside = _doc_inside(n, source) if is_scope else ""
    doc = f"{above} {inside}" if above and inside else above or inside
    scope = tuple(nm for _, _, nm in stack if nm)
    end = n.end_point  # the last row, as syntax._end_row reads it (the start row is known here)
    last_row = end.row - 1 if end.column == 0 and end.row > first_row else end.row
    return Definition(row + 1, last_row + 1, kind, name, scope, doc[:DOC_CHARS]), pushed


def _config_keys(grammar: str, tree: Any, source: bytes, lines: list[str]) -> list[Definition]:
    """Every key of a config file, with the keys above it as its scope."""
    import tree_sitter

    nodes = tree_sitter.QueryCursor(_key_query(grammar)).captures(tree.root_node).get("k", [])
    nodes.sort(key=lambda n: (n.start_byte, -n.end_byte))
    out = []
    ends: list[int] = []  # the end bytes of the enclosing keys ...
    keys: list[str] = []  # ... and the keys
    for n in nodes:
        start = n.start_byte
        while ends and ends[-1] <= start:
            ends.pop()
            keys.pop()
        key = _key_of(n, source)
        if not key:
            continue
        row = n.start_point.row
        parents = tuple(keys)
        ends.append(n.end_byte)
        keys.append(key)
        doc = _comment_above(lines, row, grammar)
        out.append(Definition(row + 1, _end_row(n) + 1, "key", key, parents, doc[:DOC_CHARS]))
        if len(out) >= MAX_PER_FILE:
            break
    return out


def _key_query(grammar: str) -> Any:
    with _queries_lock:
        q = _queries.get(grammar)
        if q is None:
            import tree_sitter

            lang = languages.load(grammar)
            kinds = sorted(t for t in _KEY_NODES if lang.id_for_node_kind(t, True) is not None)
            q = _queries[grammar] = tree_sitter.Query(
                lang, f"[{' '.join(f'({t})' for t in kinds)}] @k"
            )
        return q


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


_classy: dict[str, bool] = {}


def _is_classy(t: str) -> bool:
    got = _classy.get(t)
    if got is None:
        got = _classy[t] = any(w in t for w in _CLASSY)
    return got


def _kind(t: str, is_scope: bool, stack: list[tuple[int, str, str]]) -> str:
    """A definition's kind from its node type and the types of the scopes around it."""
    inside_class = False
    for _, typ, _ in stack:
        if _is_classy(typ):
            inside_class = True
            break
    if t in FUNCTIONS or t == "preproc_function_def":
        return "method" if inside_class else "function"
    if is_scope:
        return "class"
    if inside_class or t in ("field_declaration", "enumerator", "enum_constant", "enum_variant"):
        return "field"
    return "constant"


def _doc_inside(n: Any, source: bytes) -> str:
    """A docstring, or a comment that opens the body."""
    body = n.child_by_field_name("body")
    if body is None or body.named_child_count == 0:
        return ""
    first = body.named_child(0)
    first_type = first.type
    if "comment" in first_type:
        return source[first.start_byte : first.end_byte].decode("utf-8", "replace")
    if first_type == "expression_statement":
        inner = first.named_child(0) if first.named_child_count else None
        if inner is not None and inner.type in STRINGS:
            return source[inner.start_byte : inner.end_byte].decode("utf-8", "replace")
    return ""


# -- comments, line by line ------------------------------------------------------------------------


def _comment_above(lines: list[str], row: int, language: str | None) -> str:
    """The comment lines right above 0-based `row`: line comments, or a whole block comment."""
    got: list[str] = []
    i = row - 1
    while i >= 0 and len(got) < DOC_LINES:
        text = lines[i]
        stripped = text.strip()
        if not stripped:
            break
        if stripped.endswith(("*/", "}}")) and _BLOCK_END.search(stripped) and "/*" not in text:
            j = i
            while j > 0 and i - j < DOC_LINES and not _BLOCK_START.search(lines[j]):
                j -= 1
            got[:0] = lines[j : i + 1]
            i = j - 1
            continue
        if heuristics.looks_like_comment(text, language) or _TEMPLATE_COMMENT.match(text):
            got.insert(0, text)
            i -= 1
            continue
        break
    if not got:
        return ""
    return " ".join(s.strip() for s in got if not is_licence_header(1, s))


# -- files without a grammar -------------------------------------------------------------------------

# A key line of templated YAML (a Helm template): indentation, an optional list dash, key, value.
# (the value is read greedily and stripped after: `(.*?)\s*$` backtracked over a long run of
# blanks inside a line, quadratic in it)
_TEMPLATE_KEY = re.compile(r"^( *)(- +)?([A-Za-z_][\w.-]*)\s*:(?:\s+(.*))?$")
VALUE_CHARS = 160


def _template_keys(lines: list[str], language: str | None) -> list[Definition]:
    """Keys of YAML with template directives in it, which no YAML parser reads: each key line,
    under the keys its indentation puts it in, with its value (`{{ .Values.broker.heapOpts }}`)
    as part of what describes it, so the line that uses a setting is found by the setting's name."""
    out = []
    indents: list[int] = []  # the indents of the enclosing keys ...
    keys: list[str] = []  # ... and the keys
    for i, text in enumerate(lines):
        m = _TEMPLATE_KEY.match(text)
        if m is None:
            continue
        lead, dash, key, value = m.groups()
        value = value.rstrip() if value is not None else None
        indent = len(lead) + len(dash or "")
        while indents and indents[-1] >= indent:
            indents.pop()
            keys.pop()
        value = (value or "")[:VALUE_CHARS]
        above = _comment_above(lines, i, language)
        doc = f"{above} {value}" if above and value else above or value
        out.append(Definition(i + 1, i + 1, "key", key, tuple(keys), doc[:DOC_CHARS]))
        indents.append(indent)
        keys.append(key)
        if len(out) >= MAX_PER_FILE:
            break
    return out


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


def _template_ends(lines: list[str], found: list[Definition]) -> list[Definition]:
    """A Go or Helm template's `{{ define "x" }}` down to its `{{ end }}`, as the template scanner
    nests them (the line scanner sees only the opening line): the helper's body is its own, so a
    search hit inside it is evidence for the helper, and its citation shows the whole of it."""
    ends = {(b.start, b.name): b.end for b in TemplateSyntax(lines, yaml=False).blocks
            if b.kind in NAMED and b.name}  # fmt: skip
    return [d._replace(end=max(d.end, ends.get((d.line, d.name), d.end))) if d.kind == "template"
            else d for d in found]  # fmt: skip


_TEMPLATE_COMMENT_MARKS = re.compile(r"\{\{-?\s*/\*|\*/\s*-?\}\}")


def _template_head(lines: list[str]) -> list[str]:
    """A Go/Helm template file's opening comment: the first `{{/* … */}}` in its first 40 lines
    that is not a licence header or an editor's modeline (`{{/* vim: set filetype=mustache: */}}`)."""
    for row, _, end_row, _ in TemplateSyntax(lines[:40], yaml=False).comments:
        rows = range(row, min(end_row, row + _PROSE_LINES) + 1)
        if any(is_licence_header(r, lines[r - 1]) for r in rows):
            continue
        text = [_TEMPLATE_COMMENT_MARKS.sub(" ", lines[r - 1]).strip() for r in rows]
        text = [t for t in text if t]
        if text and not text[0].startswith("vim:"):
            return text
    return []


def _file_entry(path: str, lines: list[str], language: str | None, kind: str) -> Definition:
    """The file itself: its name, and its opening comment or docstring (prose: its first lines)."""
    name = path.rsplit("/", 1)[-1]
    head: list[str] = []
    if kind == "docs":
        head = [ln for ln in lines[:40] if ln.strip()][:_PROSE_LINES]
    elif language == "gotmpl":
        head = _template_head(lines)
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
