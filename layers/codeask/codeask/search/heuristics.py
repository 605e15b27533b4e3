"""Today's line heuristics, for languages codeask ships no grammar for: definitions and enclosing scopes."""

from __future__ import annotations

import re

# A line that introduces a named thing, in the languages teams mostly write.
_DEF_RE = re.compile(
    r"""^\s*(?:
        (?:@\w[\w.]*\s+)*(?:export\s+)?(?:default\s+)?(?:pub(?:\([\w:]+\))?\s+)?(?:async\s+)?
        (?:abstract\s+|final\s+|sealed\s+|data\s+|open\s+|inline\s+|unsafe\s+|const\s+)*
        (?:def|class|function\*?|func|fn|struct|enum|trait|interface|impl|module|object|record|type|
           protocol|extension|namespace|macro_rules!|defmodule|defp?|sub|procedure|CREATE\s+(?:OR\s+REPLACE\s+)?\w+)\b
      | (?:public|private|protected|internal|static|override|virtual)\b[^=;(]*\(
      | (?:export\s+)?(?:const|let|var|val)\s+\w+\s*[:=]
      | [A-Z][A-Z0-9_]{2,}\s*(?::[^=]+)?=[^=]
      | \{\{-?\s*define\s+"
    )""",
    re.VERBOSE,
)
_SCOPE_RE = re.compile(
    r"""^(\s*)(?:export\s+)?(?:default\s+)?(?:pub(?:\([\w:]+\))?\s+)?(?:async\s+)?(?:static\s+)?
        (?:def|class|function\*?|func|fn|struct|enum|trait|interface|impl|module|object|type|namespace)
        \s+(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*(?:::\w+)?)""",
    re.VERBOSE,
)


# The name a definition line defines: a template's `{{ define "name" }}`, the word after the
# keyword, an assigned constant, or the word before a method's parameter list.
_NAME_RE = re.compile(
    r"""\{\{-?\s*define\s+"(?P<tpl>[^"]+)"
      | \b(?:def|class|function\*?|func|fn|struct|enum|trait|interface|impl|module|object|record|
           type|protocol|extension|namespace|macro_rules!|defmodule|defp?|sub|procedure|const|let|
           var|val)\s+(?:\([^)]*\)\s*)?(?P<kw>[A-Za-z_$][\w$]*)
      | ^\s*(?P<const>[A-Z][A-Z0-9_]{2,})\s*(?::[^=]+)?=
      | (?P<call>[A-Za-z_$][\w$]*)\s*\(""",
    re.VERBOSE,
)


def is_definition(text: str) -> bool:
    return _DEF_RE.match(text) is not None


def defined_name(text: str) -> str | None:
    """The name a definition line (one `is_definition` accepts) defines, if it can be told."""
    m = _NAME_RE.search(text)
    if m is None:
        return None
    return m.group("tpl") or m.group("kw") or m.group("const") or m.group("call")


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


def enclosing_scope(lines: list[str], line_no: int) -> str | None:
    """The def/class that encloses line `line_no` (1-based), with its class for a method.

    Walks up through the hit's ancestors only: a line indented less than everything seen so far
    opens a block the hit is in; deeper lines belong to siblings (an earlier nested helper) and
    are skipped.
    """
    if not 1 <= line_no <= len(lines):
        return None
    ceiling = _indent(lines[line_no - 1])
    found: list[str] = []
    for i in range(line_no - 2, max(-1, line_no - 3000), -1):
        text = lines[i]
        if not text.strip() or ceiling == 0:
            if ceiling == 0:
                break
            continue
        indent = _indent(text)
        if indent >= ceiling:
            continue
        ceiling = indent
        m = _SCOPE_RE.match(text)
        if m is None:
            continue
        if not found:
            found.append(text.strip()[:80])
            if not text.lstrip().startswith(("def ", "async def ", "fn ", "func ", "function ")):
                break  # a class or type: that is the whole answer
        else:
            first = text.split()[0]
            kind = (
                first if first in ("class", "def", "fn", "func", "impl", "struct", "trait") else ""
            )
            found.insert(0, f"{kind} {m.group(2)}".strip())
            break
    return " › ".join(found) if found else None


_COMMENT_RE = re.compile(r"^\s*(#(?![!\[{])|//|/\*|\*(?![\w(]*\s*=)|--(?!-)|<!--|\"\"\"|''')")
_HASH_IS_CODE = {"c", "cpp", "c_sharp", "objc"}  # `#include`, `#define`, `#region`


def looks_like_comment(text: str, language: str | None = None) -> bool:
    """A line that starts like a comment in most languages (a guess; the parser knows better)."""
    m = _COMMENT_RE.match(text)
    if m is None:
        return False
    return not (m.group(1) == "#" and language in _HASH_IS_CODE)
