"""Which lines of a file are data: inside a string literal or block comment spanning lines, or prose.

In code, `password = Xy7pQ2mnA9kL` reads as a variable assigned to another (a bare identifier is
an expression); inside a multi-line string (a docstring, an SQL or INI template, a heredoc) or in
a README the same line is an example config, and its value is what was typed. The scanner here
finds the lines that are data so that their assignments are judged as data.

Fails closed: a file in no language with a scanner here is data throughout, and a string or
comment left open runs to the end of the file.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

# A rule: what opens a token, and where the token ends, given the scan, the opener's text and
# the offset after it; None: the opener opens nothing after all (a Ruby shift `x <<ITEM` with
# no line ending a heredoc). Tokens that span lines make their lines data; single-line strings
# and line comments are only skipped, so that a quote inside them opens nothing.
Closer = Callable[["_Scan", str, int], int | None]


class _Scan:
    """A file's text, with the lines that hold a single word (heredoc terminators) indexed on
    first need, so that finding any heredoc's end is a lookup, never a search to the end."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._words: dict[str, list[int]] | None = None

    def word_lines(self, word: str) -> list[int]:
        """The offsets just past each line that holds `word` alone (indent and `;`/`,`/`)`
        after it allowed, as PHP 7.3 and `<<~`/`<<-` do), in order."""
        if self._words is None:
            self._words = {}
            for m in _WORD_LINE.finditer(self.text):
                self._words.setdefault(m.group(1), []).append(m.end())
        return self._words.get(word, [])


_WORD_LINE = re.compile(r"^[ \t]*([A-Za-z_]\w*)[^\n\w]*$", re.MULTILINE)


def _pattern(body: str) -> Closer:
    """Up to where `body`, matched right after the opener, ends; a body that cannot match
    (a lone backslash at the very end) leaves the token open to the end."""
    pattern = re.compile(body, re.DOTALL)

    def close(scan: _Scan, _: str, at: int) -> int:
        m = pattern.match(scan.text, at)
        return len(scan.text) if m is None else m.end()

    return close


def _escaped(quote: str, *, spans_lines: bool) -> Closer:
    """A string with backslash escapes (an escaped line break continues it, as in C); one that
    cannot span lines ends at the line's end when left open."""
    q = re.escape(quote)
    if spans_lines:
        return _pattern(rf"(?:[^{q}\\]|\\.)*(?:{q}|\Z)")
    return _pattern(rf"(?:[^{q}\\\n]|\\.)*(?:{q}|(?=\n)|\Z)")


def _triple(quote: str) -> Closer:
    q = re.escape(quote[0])
    return _pattern(rf"(?:[^{q}\\]|\\.|{q}(?!{q}{q}))*(?:{q}{{3}}|\Z)")


def _until(end: str) -> Closer:
    """Up to a fixed closing text, no escapes (block comments, raw strings); else the end."""
    return _pattern(rf".*?(?:{re.escape(end)}|\Z)")


def _closing_text(make: Callable[[str], str]) -> Closer:
    """Up to a closing text made from the opener, no escapes; else the end."""

    def close(scan: _Scan, opener: str, at: int) -> int:
        end = scan.text.find(make(opener), at)
        return len(scan.text) if end < 0 else end + len(make(opener))

    return close


# R"delim( … )delim" (any encoding prefix before the R); r#"…"# with as many hashes to close as
# opened; Lua's [==[ … ]==], also after `--` as a comment.
_RAW_CPP = _closing_text(lambda o: ")" + o[o.index('"') + 1 : -1] + '"')
_RAW_RUST = _closing_text(lambda o: '"' + "#" * o.count("#"))
_LUA_LONG = _closing_text(lambda o: "]" + "=" * o.count("=") + "]")
_WORD = re.compile(r"[A-Za-z_]\w*")


def _heredoc(opener: str, *, required: bool) -> Closer:
    """A heredoc's body: from the next line to the first line after it holding only its word.
    `required`: with no such line the opener still opens one, to the end (PHP's `<<<`); else it
    was no heredoc (Ruby's `<<` is also a shift). Heredocs opened on one line (`f(<<~A, <<~B)`)
    have their bodies one after the other: the token runs to the end of the last."""
    more = re.compile(opener)

    def close(scan: _Scan, first: str, at: int) -> int | None:
        line_end = scan.text.find("\n", at)
        end = _body_end(scan, first, line_end)
        if end is None:
            return len(scan.text) if required else None
        for m in more.finditer(scan.text, at, line_end):
            after = _body_end(scan, m.group(), end)
            if after is None and required:
                return len(scan.text)
            end = end if after is None else after
        return end

    return close


def _body_end(scan: _Scan, opener: str, after: int) -> int | None:
    """The end of the first line after offset `after` holding only the opener's word."""
    found = _WORD.search(opener)
    if found is None or after < 0:
        return None
    ends = scan.word_lines(found.group())
    i = bisect.bisect_right(ends, after)
    return ends[i] if i < len(ends) else None


_PAIRS = {"(": ")", "[": "]", "{": "}", "<": ">"}


def _percent(scan: _Scan, opener: str, at: int) -> int:
    """Ruby's percent literals (`%q{…}`, `%w[…]`, `%(…)`): to the delimiter that closes the
    opener's, brackets nested, backslash escapes skipped; else the end."""
    open_ = opener[-1]
    close = _PAIRS.get(open_, open_)
    marks = re.compile(rf"\\.|{re.escape(open_)}|{re.escape(close)}", re.DOTALL)
    depth = 1
    for m in marks.finditer(scan.text, at):
        mark = m.group()
        if mark == close:
            depth -= 1
            if depth == 0:
                return m.end()
        elif mark == open_:
            depth += 1
    return len(scan.text)


def _to_end(scan: _Scan, _: str, __: int) -> int:
    """Ruby's `__END__` and PHP's `__halt_compiler();`: what follows is the file's data, never
    code."""
    return len(scan.text)


def _whole(_: _Scan, __: str, at: int) -> int:
    return at  # the opener is the whole token


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


_LINE_COMMENT = _pattern(r"[^\n]*")
_BLOCK_COMMENT = _until("*/")
_COMMENT_MARKS = re.compile(r"/\*|\*/")


def _nested_comment(scan: _Scan, _: str, at: int) -> int:
    """A block comment of Rust, Swift, Kotlin, Scala or Dart, where `/* … */` nests: closed by
    the `*/` that closes its opener, not the first (`/* a /* b */ still a comment */`); else
    the end."""
    depth = 1
    for m in _COMMENT_MARKS.finditer(scan.text, at):
        depth += 1 if m.group() == "/*" else -1
        if depth == 0:
            return m.end()
    return len(scan.text)


_RUBY_DOC = _pattern(r".*?(?:^=end\b|\Z)")
_LUA_COMMENT = _closing_text(lambda o: "]" + "=" * o.count("=") + "]")
# Comments: data where they span lines (a block of docs), but not on one line, where they are
# as often code commented out (`# password = get_password()`), a variable's name as before.
_COMMENTS = frozenset({_LINE_COMMENT, _BLOCK_COMMENT, _nested_comment, _RUBY_DOC, _LUA_COMMENT})
_C_COMMENTS = [("//", _LINE_COMMENT), (r"/\*", _BLOCK_COMMENT)]
_NESTED_COMMENTS = [("//", _LINE_COMMENT), (r"/\*", _nested_comment)]
_C_CHAR = ("'", _escaped("'", spans_lines=False))
_DQ = ('"', _escaped('"', spans_lines=False))
_DQ_SPANNING = ('"', _escaped('"', spans_lines=True))
_SQ_SPANNING = ("'", _escaped("'", spans_lines=True))
_TRIPLE_DQ = ('"""', _triple('"""'))
_TRIPLE_SQ = ("'''", _triple("'''"))
# A regular expression literal, read whole so that a quote in it (`/'/`, `/`/`) opens nothing: a
# slash where an operand is expected (after an operator, an opening bracket, a separator or
# `return`), not `//` or `/*`, closed on its line. A character class may hold a slash (`[/\\]`),
# but at most two: a class that never closes then fails at the third slash, not at the line's
# end, so a line of `=/[a/` openers costs linear time, not a scan to the end from each one.
_CLASS = r"\[(?:[^\]\\\n/]|\\.)*+(?:/(?:[^\]\\\n/]|\\.)*+){0,2}\]"
_OPERAND = r"(?:(?<=[(,=:\[!&|?{};~+\-*%<>^])|(?<=\breturn)|(?<=\bwhen)|(?<=\bif)|^)[ \t]*"
_REGEX_LITERAL = (
    _OPERAND + r"/(?![/*\s])(?:[^/\\\n\[]|\\.|" + _CLASS + r")+/",
    _whole,
)


class _Interpolated:
    """A string spanning lines whose interpolations (`${…}` in a JS template, `#{…}` in Ruby,
    `{$…}` in PHP) hold code up to the brace that closes them: a quote in that code (`${"`"}`,
    `#{'"'}`) belongs to a string of the code, never closing the outer one, which is read to its
    own closing quote. Code skips whole what `skip` matches (its other strings, comments); a
    quote of `quotes` in it opens a nested string of this kind. Read with a stack, not
    recursion, so that nesting costs no depth; each character is read once."""

    def __init__(self, quotes: str, interpolation: str, skip: str) -> None:
        self.quotes = quotes
        self.in_text = {
            q: re.compile(rf"\\.|{interpolation}|{re.escape(q)}", re.DOTALL) for q in quotes
        }
        self.in_code = re.compile(rf"{skip}|[{{}}{re.escape(quotes)}]", re.DOTALL | re.MULTILINE)

    def __call__(self, scan: _Scan, opener: str, at: int) -> int:
        text = scan.text
        stack: list[str | int] = [opener[-1]]  # a quote: in its string's text; a depth: in code
        pos = at
        while stack:
            top = stack[-1]
            if isinstance(top, str):
                m = self.in_text[top].search(text, pos)
                if m is None:
                    return len(text)
                token = m.group()
                if token == top:
                    stack.pop()
                elif token[0] != "\\":
                    stack.append(0)
            else:
                m = self.in_code.search(text, pos)
                if m is None:
                    return len(text)
                token = m.group()
                if token == "{":
                    stack[-1] = top + 1
                elif token == "}":
                    stack[-1:] = [top - 1] if top else []
                elif token in self.quotes:
                    stack.append(token)
            pos = m.end()
        return pos


_PYTHON = _family(
    [("#", _LINE_COMMENT), _TRIPLE_DQ, _TRIPLE_SQ, _DQ, ("'", _escaped("'", spans_lines=False))]
)
_C_LIKE = _family(
    [*_C_COMMENTS, (r"(?<!\w)(?:u8|[uUL])?R\"[^\s()\\\"]{0,16}\(", _RAW_CPP), _DQ, _C_CHAR]
)
_LINE_STRINGS = r"""'(?:[^'\\\n]|\\.)*(?:'|$)|"(?:[^"\\\n]|\\.)*(?:"|$)"""
_SPANNING_SQ = r"'(?:[^'\\]|\\.)*(?:'|\Z)"
_TEMPLATE = _Interpolated(
    "`", r"\$\{", rf"//[^\n]*|/\*.*?(?:\*/|\Z)|{_LINE_STRINGS}|{_REGEX_LITERAL[0]}"
)
_JAVASCRIPT = _family([*_C_COMMENTS, _REGEX_LITERAL, ("`", _TEMPLATE), _DQ, _C_CHAR])
_GO = _family([*_C_COMMENTS, ("`", _until("`")), _DQ, _C_CHAR])
_RUST = _family(
    [
        *_NESTED_COMMENTS,
        (r"\bb?r#*\"", _RAW_RUST),
        _DQ_SPANNING,
        # A char literal; any other quote is a lifetime (`&'a str`) and opens nothing.
        (r"'(?:\\(?:u\{[0-9a-fA-F]{1,6}\}|x[0-9a-fA-F]{2}|.)|[^\\'\n])'", _whole),
    ]
)


@functools.lru_cache(maxsize=64)
def _run_closer(quotes: int, hashes: int) -> Closer:
    """The closer of a string opened by `quotes` quotes after `hashes` `#`s (see _quote_run)."""
    if hashes:  # a raw string: no escapes
        return _pattern(rf'.*?(?:"{{{quotes},}}{"#" * hashes}|\Z)')
    shorter = rf'"{{1,{quotes - 1}}}(?!")'
    return _pattern(rf'(?:[^"\\]|\\.|{shorter})*+(?:"{{{quotes},}}|\Z)')


def _quote_run(*, counted: bool) -> Closer:
    """A string opened by three quotes or more. `counted`: C#'s raw string literal, closed by as
    many quotes as opened it (four let three stand inside); else a text block or a Kotlin, Scala
    or Dart raw string, closed by three (quotes after the opening three are its text). Swift's
    raw string (`#` before the quotes) is closed by the quotes and as many `#`. A run of fewer
    quotes inside does not close it."""

    def close(scan: _Scan, opener: str, at: int) -> int | None:
        hashes = opener.count("#")
        quotes = len(opener) - hashes if counted else 3
        return _run_closer(quotes, hashes)(scan, opener, at)

    return close


# Java, Kotlin, Scala, Groovy, Swift, Dart, C#: text blocks and raw strings in triple quotes,
# C#'s verbatim @"…" and $@"…" (a doubled quote inside). Kotlin, Scala, Swift and Dart nest
# their block comments, as Rust does; Java, Groovy and C# do not.
_JVM_RULES = [
    (r'#*"{3,}', _quote_run(counted=False)),
    _TRIPLE_SQ,
    (r'\$?@\$?"', _pattern(r'(?:[^"]|"")*(?:"|\Z)')),
    _DQ,
    _C_CHAR,
]
_JVM_LIKE = _family([*_C_COMMENTS, *_JVM_RULES])
_CSHARP = _family([*_C_COMMENTS, (r'"{3,}', _quote_run(counted=True)), *_JVM_RULES[1:]])
# Groovy's slashy strings span lines: `/…/` where an operand is expected (as a regex literal
# is read), `$/…/$` anywhere.
_GROOVY = _family(
    [
        *_C_COMMENTS,
        (r"\$/", _until("/$")),
        (_OPERAND + r"/(?![/*])", _pattern(r"(?:[^/\\]|\\.)*(?:/|\Z)")),
        *_JVM_RULES,
    ]
)
_JVM_NESTING = _family([*_NESTED_COMMENTS, *_JVM_RULES])
_RUBY_HEREDOC = r"<<[~-]?(?P<hq>[\"'`]?)[A-Za-z_]\w*(?P=hq)"
_RUBY = _family(
    [
        (r"^__END__\r?$", _to_end),
        (r"^=begin\b", _RUBY_DOC),
        ("#", _LINE_COMMENT),
        (_RUBY_HEREDOC, _heredoc(_RUBY_HEREDOC, required=False)),
        # A percent literal: a type letter and any delimiter, or a bare % and a bracket where
        # an operand is expected (`x %(y)` with no space is not a modulo in Ruby either).
        (r"%[qQwWiIrsx][^\w\s]|(?<=[\s(=,\[])%[({\[<|!]", _percent),
        _REGEX_LITERAL,
        ('["`]', _Interpolated('"`', r"\#\{", _SPANNING_SQ)),
        _SQ_SPANNING,
    ]
)
_PHP_OPEN = re.compile(r"<\?(?:php\b|=)?", re.IGNORECASE)


def _inline_html(scan: _Scan, _: str, at: int) -> int:
    """PHP's inline HTML, from `?>` (or the file's start) to the next `<?php`, `<?=` or `<?`:
    text, never code, so an apostrophe in it (`Don't`) opens no string; else the end."""
    m = _PHP_OPEN.search(scan.text, at)
    return len(scan.text) if m is None else m.start()


_PHP_HEREDOC = r"<<<[ \t]*(?P<hq>[\"']?)[A-Za-z_]\w*(?P=hq)"
_PHP = _family(
    [
        # A file with no `<?` at all is a fragment of code, not a page.
        (r"\A(?!<\?)(?=[\s\S]*?<\?)|\?>", _inline_html),
        (r"\b(?i:__halt_compiler)\b", _to_end),
        *_C_COMMENTS,
        ("#", _LINE_COMMENT),
        (_PHP_HEREDOC, _heredoc(_PHP_HEREDOC, required=True)),
        ('"', _Interpolated('"', r"\{\$|\$\{", rf"//[^\n]*|/\*.*?(?:\*/|\Z)|{_SPANNING_SQ}")),
        _SQ_SPANNING,
    ]
)
# HCL (Terraform, Nomad): a heredoc's lines (`<<EOT`, `<<-EOT` indented) are data, a user_data
# script or a config file's template; a quoted string stays on its line.
_HCL_HEREDOC = r"<<-?[ \t]*\"?[A-Za-z_]\w*\"?(?=[ \t]*\r?$)"
_HCL = _family(
    [
        *_C_COMMENTS,
        ("#", _LINE_COMMENT),
        (_HCL_HEREDOC, _heredoc(_HCL_HEREDOC, required=True)),
        _DQ,
    ]
)
_LUA = _family(
    [
        (r"--\[=*\[", _LUA_COMMENT),
        ("--", _LINE_COMMENT),
        (r"\[=*\[", _LUA_LONG),
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
    ".java": _JVM_LIKE, ".kt": _JVM_NESTING, ".kts": _JVM_NESTING, ".scala": _JVM_NESTING,
    ".groovy": _GROOVY, ".gradle": _GROOVY, ".swift": _JVM_NESTING, ".dart": _JVM_NESTING,
    ".cs": _CSHARP,
    ".rb": _RUBY, ".rake": _RUBY, ".gemspec": _RUBY, ".php": _PHP, ".lua": _LUA,
    ".tf": _HCL, ".hcl": _HCL, ".tfvars": _HCL, ".nomad": _HCL,
}  # fmt: skip
_FAMILY_BY_NAME = {"rakefile": _RUBY, "gemfile": _RUBY, "vagrantfile": _RUBY}


def _family_of(path: str) -> _Family | None:
    name = path.rsplit("/", 1)[-1].lower()
    if name in _FAMILY_BY_NAME:
        return _FAMILY_BY_NAME[name]
    dot = name.rfind(".")
    return _FAMILY_BY_EXT.get(name[dot:]) if dot > 0 else None


_BREAK = re.compile(r"[\r\n]")  # a carriage return alone ends a line too (an old Mac file)
Ranges = list[tuple[int, int]]  # (start, end) offsets of text that is data


def data_ranges(text: str, path: str, *, comments: bool = False) -> Ranges:
    """The stretches of `text` (a whole file, lines joined with "\\n") that are data, sorted and
    disjoint: each string or block comment that spans lines, from its opener's line start to its
    closer's line end; each string on one line; each run of two lines or more that hold only a
    line comment (a block of docs, as Go and Python write them); the whole text for a file in no
    language scanned here (prose, docs, anything else). With `comments`, every comment too, a line
    comment alone on its line or after code, a block comment on one line: words, for a rule that
    reads sentences only."""
    family = _family_of(path)
    if family is None:
        return [(0, len(text))]
    out: Ranges = []
    comment_lines: Ranges = []
    pos = 0
    search = family.opener.search
    scan = _Scan(text)
    while (m := search(text, pos)) is not None:
        group = m.lastgroup
        assert group is not None
        closer = family.closers[group]
        end = closer(scan, m.group(), m.end())
        if end is None:
            pos = m.end()
            continue
        if _BREAK.search(text, m.start(), end) is not None:
            start = text.rfind("\n", 0, m.start()) + 1
            stop = text.find("\n", end)
            out.append((start, len(text) if stop < 0 else stop))
        elif closer is _LINE_COMMENT:
            if comments:
                out.append((m.start(), end))
            else:
                start = text.rfind("\n", 0, m.start()) + 1
                if not text[start : m.start()].strip(" \t"):
                    comment_lines.append((start, end))
        elif closer not in _COMMENTS and closer is not _whole:
            # A string on one line is data too: `"token=xyzz0Wbap…&team_id=…"` is a request
            # body, not an assignment in code.
            out.append((m.start(), end))
        elif comments and closer is not _whole:
            out.append((m.start(), end))  # a block comment on one line: `/* the token is … */`
        pos = max(end, m.start() + 1)
    return _merged(out + _comment_blocks(comment_lines))


def _comment_blocks(lines: Ranges) -> Ranges:
    """Runs of two or more adjacent lines that hold only a line comment, joined: docs, as a
    block comment is; a comment alone on its line stays code (as often code commented out)."""
    blocks: Ranges = []
    run = 0
    for start, end in lines:
        if blocks and start == blocks[-1][1] + 1:  # the very next line
            blocks[-1] = (blocks[-1][0], end)
            run += 1
        else:
            if blocks and run < 2:
                blocks.pop()
            blocks.append((start, end))
            run = 1
    if blocks and run < 2:
        blocks.pop()
    return blocks


def _merged(ranges: Ranges) -> Ranges:
    """Ranges sorted and overlaps joined: a string's range may begin before the one-line
    strings ahead of it on its opener's line."""
    out: Ranges = []
    for start, end in sorted(ranges):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out
