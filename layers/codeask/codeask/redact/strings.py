"""Which lines of a file are data: inside a string literal or block comment spanning lines, or prose.

In code, `password = Xy7pQ2mnA9kL` reads as a variable assigned to another (a bare identifier is
an expression); inside a multi-line string (a docstring, an SQL or INI template, a heredoc) or in
a README the same line is an example config, and its value is what was typed. The scanner here
finds the lines that are data so that their assignments are judged as data.

Fails closed: a file in no language with a scanner here is data throughout, and a string or
comment left open runs to the end of the file.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

# A rule: what opens a token, and how to find its end from the opener's text (a compiled
# pattern `match`ed at the opener's end, whose end is the token's end; None: the opener is the
# whole token). Tokens that span lines make their lines data; single-line strings and line
# comments are only skipped, so that a quote inside them opens nothing.
Closer = Callable[[str], re.Pattern[str] | None]


def _fixed(body: str) -> Closer:
    pattern = re.compile(body, re.DOTALL)
    return lambda _: pattern


def _escaped(quote: str, *, spans_lines: bool) -> Closer:
    """A string with backslash escapes (an escaped line break continues it, as in C); one that
    cannot span lines ends at the line's end when left open."""
    q = re.escape(quote)
    if spans_lines:
        return _fixed(rf"(?:[^{q}\\]|\\.)*(?:{q}|\Z)")
    return _fixed(rf"(?:[^{q}\\\n]|\\.)*(?:{q}|(?=\n)|\Z)")


def _triple(quote: str) -> Closer:
    q = re.escape(quote[0])
    return _fixed(rf"(?:[^{q}\\]|\\.|{q}(?!{q}{q}))*(?:{q}{{3}}|\Z)")


def _until(end: str) -> Closer:
    """Up to a fixed closing text, no escapes (block comments, raw strings); else the end."""
    return _fixed(rf".*?(?:{re.escape(end)}|\Z)")


def _to(end: str) -> re.Pattern[str]:
    return re.compile(rf".*?(?:{re.escape(end)}|\Z)", re.DOTALL)


def _raw_cpp(opener: str) -> re.Pattern[str]:
    """R"delim( … )delim", with any encoding prefix before the R."""
    return _to(")" + opener[opener.index('"') + 1 : -1] + '"')


def _raw_rust(opener: str) -> re.Pattern[str]:
    """r#"…"# with as many hashes to close as opened."""
    return _to('"' + "#" * opener.count("#"))


def _lua_long(opener: str) -> re.Pattern[str]:
    """[==[ … ]==], also after `--` as a comment."""
    return _to("]" + "=" * opener.count("=") + "]")


_WORD = re.compile(r"[A-Za-z_]\w*")


def _heredoc(opener: str) -> re.Pattern[str]:
    """A heredoc's body: from the next line to the line holding only its word (indented after
    `<<~`/`<<-`, and in PHP 7.3 followed by `;`, `,` or `)`)."""
    found = _WORD.search(opener)
    word = re.escape(found.group() if found else opener)
    return re.compile(rf"[^\n]*(?:\n.*?^[ \t]*{word}(?!\w)[^\n\w]*$|\Z)", re.DOTALL | re.MULTILINE)


def _none(_: str) -> None:
    return None


@dataclass(frozen=True)
class _Family:
    opener: re.Pattern[str]  # alternation of the rules' openers, one named group each
    closers: dict[str, Closer]


def _family(rules: list[tuple[str, Closer]]) -> _Family:
    """Rules in priority order (longer openers first: `\"\"\"` before `\"`)."""
    groups = [f"(?P<r{i}>{opener})" for i, (opener, _) in enumerate(rules)]
    return _Family(
        re.compile("|".join(groups), re.MULTILINE),
        {f"r{i}": closer for i, (_, closer) in enumerate(rules)},
    )


_LINE_COMMENT = _fixed(r"[^\n]*")
_C_COMMENTS = [("//", _LINE_COMMENT), (r"/\*", _until("*/"))]
_C_CHAR = ("'", _escaped("'", spans_lines=False))
_DQ = ('"', _escaped('"', spans_lines=False))
_DQ_SPANNING = ('"', _escaped('"', spans_lines=True))
_SQ_SPANNING = ("'", _escaped("'", spans_lines=True))
_TRIPLE_DQ = ('"""', _triple('"""'))
_TRIPLE_SQ = ("'''", _triple("'''"))
_HEREDOC_RUBY_PERL = (
    r"<<[~-]?(?P<hq>[\"'`]?)(?P<w>[A-Za-z_]\w*)(?P=hq)(?=[^\n]*\n(?:.*\n)*?[ \t]*(?P=w)[^\n\w]*$)",
    _heredoc,
)

_PYTHON = _family(
    [("#", _LINE_COMMENT), _TRIPLE_DQ, _TRIPLE_SQ, _DQ, ("'", _escaped("'", spans_lines=False))]
)
_C_LIKE = _family(
    [*_C_COMMENTS, (r"(?<!\w)(?:u8|[uUL])?R\"[^\s()\\\"]{0,16}\(", _raw_cpp), _DQ, _C_CHAR]
)
_JAVASCRIPT = _family([*_C_COMMENTS, ("`", _escaped("`", spans_lines=True)), _DQ, _C_CHAR])
_GO = _family([*_C_COMMENTS, ("`", _until("`")), _DQ, _C_CHAR])
_RUST = _family(
    [
        *_C_COMMENTS,
        (r"\bb?r#*\"", _raw_rust),
        _DQ_SPANNING,
        # A char literal; any other quote is a lifetime (`&'a str`) and opens nothing.
        (r"'(?:\\(?:u\{[0-9a-fA-F]{1,6}\}|x[0-9a-fA-F]{2}|.)|[^\\'\n])'", _none),
    ]
)
# Java, Kotlin, Scala, Groovy, Swift, Dart, C#: text blocks and raw strings in triple quotes,
# C#'s verbatim @"…" (a doubled quote inside).
_JVM_LIKE = _family(
    [*_C_COMMENTS, _TRIPLE_DQ, _TRIPLE_SQ, ('@"', _fixed(r'(?:[^"]|"")*(?:"|\Z)')), _DQ, _C_CHAR]
)
_RUBY = _family(
    [
        (r"^=begin\b", _fixed(r".*?(?:^=end\b|\Z)")),
        ("#", _LINE_COMMENT),
        _HEREDOC_RUBY_PERL,
        _DQ_SPANNING,
        _SQ_SPANNING,
        ("`", _escaped("`", spans_lines=True)),
    ]
)
_PHP = _family(
    [
        *_C_COMMENTS,
        ("#", _LINE_COMMENT),
        (r"<<<[ \t]*(?P<hq>[\"']?)(?P<w>[A-Za-z_]\w*)(?P=hq)", _heredoc),
        _DQ_SPANNING,
        _SQ_SPANNING,
    ]
)
_LUA = _family(
    [
        (r"--\[=*\[", _lua_long),
        ("--", _LINE_COMMENT),
        (r"\[=*\[", _lua_long),
        _DQ,
        ("'", _escaped("'", spans_lines=False)),
    ]
)
_FAMILY_BY_EXT = {
    ".py": _PYTHON, ".pyi": _PYTHON, ".pyw": _PYTHON,
    ".c": _C_LIKE, ".h": _C_LIKE, ".cc": _C_LIKE, ".cpp": _C_LIKE, ".cxx": _C_LIKE,
    ".c++": _C_LIKE, ".hh": _C_LIKE, ".hpp": _C_LIKE, ".hxx": _C_LIKE, ".h++": _C_LIKE,
    ".ipp": _C_LIKE, ".inl": _C_LIKE, ".m": _C_LIKE, ".mm": _C_LIKE,
    ".js": _JAVASCRIPT, ".mjs": _JAVASCRIPT, ".cjs": _JAVASCRIPT, ".jsx": _JAVASCRIPT,
    ".ts": _JAVASCRIPT, ".mts": _JAVASCRIPT, ".cts": _JAVASCRIPT, ".tsx": _JAVASCRIPT,
    ".go": _GO, ".rs": _RUST,
    ".java": _JVM_LIKE, ".kt": _JVM_LIKE, ".kts": _JVM_LIKE, ".scala": _JVM_LIKE,
    ".groovy": _JVM_LIKE, ".gradle": _JVM_LIKE, ".swift": _JVM_LIKE, ".dart": _JVM_LIKE,
    ".cs": _JVM_LIKE,
    ".rb": _RUBY, ".rake": _RUBY, ".gemspec": _RUBY, ".php": _PHP, ".lua": _LUA,
}  # fmt: skip
_FAMILY_BY_NAME = {"rakefile": _RUBY, "gemfile": _RUBY, "vagrantfile": _RUBY}


def _family_of(path: str) -> _Family | None:
    name = path.rsplit("/", 1)[-1].lower()
    if name in _FAMILY_BY_NAME:
        return _FAMILY_BY_NAME[name]
    dot = name.rfind(".")
    return _FAMILY_BY_EXT.get(name[dot:]) if dot > 0 else None


Ranges = list[tuple[int, int]]  # (start, end) offsets of text that is data


def data_ranges(text: str, path: str) -> Ranges:
    """The stretches of `text` (a whole file, lines joined with "\\n") that are data: each string
    or block comment that spans lines, from its opener's line start to its closer's line end;
    the whole text for a file in no language scanned here (prose, docs, anything else)."""
    family = _family_of(path)
    if family is None:
        return [(0, len(text))]
    out: Ranges = []
    pos = 0
    search = family.opener.search
    while (m := search(text, pos)) is not None:
        group = m.lastgroup
        assert group is not None
        closer = family.closers[group](m.group())
        found = None if closer is None else closer.match(text, m.end())
        # A closer that cannot match (a lone backslash at the very end) leaves the token open.
        end = m.end() if closer is None else len(text) if found is None else found.end()
        if text.find("\n", m.start(), end) >= 0:
            start = text.rfind("\n", 0, m.start()) + 1
            stop = text.find("\n", end)
            out.append((start, len(text) if stop < 0 else stop))
        pos = max(end, m.start() + 1)
    return out
