"""How useful a hit is likely to be: definitions over mentions, source over tests, docs and vendored code."""

from __future__ import annotations

import math
import re
from functools import lru_cache

# Weights for the kind of file a hit is in; users ask about the code, rarely its tests or its lockfile.
KIND_WEIGHT = {
    "source": 1.0,
    "config": 0.75,
    "test": 0.45,
    "docs": 0.35,
    "vendored": 0.2,
    "generated": 0.1,
}

_TEST_DIRS = {
    "test",
    "tests",
    "testing",
    "__tests__",
    "spec",
    "specs",
    "testdata",
    "fixtures",
    "e2e",
}
_DOC_DIRS = {
    "doc",
    "docs",
    "documentation",
    "examples",
    "example",
    "samples",
    "changelog",
    "changes",
}
_VENDOR_DIRS = {
    "vendor",
    "vendored",
    "_vendor",
    "third_party",
    "thirdparty",
    "node_modules",
    "external",
}
_GENERATED_DIRS = {
    "dist",
    "build",
    "generated",
    "gen",
    "__generated__",
    "out",
    "target",
    "coverage",
}
_LOCKFILES = {
    "package-lock.json", "yarn.lock", "pnpm-lock.yaml", "poetry.lock", "cargo.lock", "go.sum",
    "composer.lock", "gemfile.lock", "pipfile.lock", "uv.lock", "flake.lock", "npm-shrinkwrap.json",
}  # fmt: skip
_DOC_EXT = {".md", ".rst", ".txt", ".adoc", ".org", ".html", ".ipynb"}
_CONFIG_EXT = {
    ".yaml",
    ".yml",
    ".json",
    ".toml",
    ".ini",
    ".cfg",
    ".conf",
    ".xml",
    ".properties",
    ".env",
}
_GENERATED_RE = re.compile(
    r"(_pb2(_grpc)?\.py|\.pb\.go|\.min\.(js|css)|\.generated\.\w+|\.g\.dart|\.map)$"
)
_TEST_NAME_RE = re.compile(r"(^test_.*|.*_test\.\w+|.*\.(test|spec)\.\w+|^conftest\.py)$")
_DOC_NAMES = {"readme", "changelog", "changes", "history", "news", "license", "licence", "copying",
              "authors", "contributing", "notice"}  # fmt: skip


@lru_cache(maxsize=65536)
def path_kind(path: str) -> str:
    """source, config, test, docs, vendored or generated: a guess from the path alone."""
    lower = path.lower()
    parts = lower.split("/")
    name = parts[-1]
    dirs = set(parts[:-1])
    if name in _LOCKFILES or _GENERATED_RE.search(name) or dirs & _GENERATED_DIRS:
        return "generated"
    if dirs & _VENDOR_DIRS or "site-packages" in dirs:
        return "vendored"
    if dirs & _TEST_DIRS or _TEST_NAME_RE.match(name):
        return "test"
    stem, dot, ext = name.rpartition(".")
    ext = dot + ext if dot else ""
    if dirs & _DOC_DIRS or ext in _DOC_EXT or (stem or name) in _DOC_NAMES:
        return "docs"
    if ext in _CONFIG_EXT:
        return "config"
    return "source"


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
    )""",
    re.VERBOSE,
)
_SCOPE_RE = re.compile(
    r"""^(\s*)(?:export\s+)?(?:default\s+)?(?:pub(?:\([\w:]+\))?\s+)?(?:async\s+)?(?:static\s+)?
        (?:def|class|function\*?|func|fn|struct|enum|trait|interface|impl|module|object|type|namespace)
        \s+(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*(?:::\w+)?)""",
    re.VERBOSE,
)
_LICENCE_RE = re.compile(
    r"licen[cs]e|copyright|\(c\)\s*\d|redistribut|warrant|permission is hereby|spdx", re.IGNORECASE
)


def is_definition(text: str) -> bool:
    return _DEF_RE.match(text) is not None


def is_licence_header(line_no: int, text: str) -> bool:
    return line_no <= 40 and _LICENCE_RE.search(text) is not None


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


_WORD = re.compile(r"[A-Za-z0-9_]")


def word_match_quality(text: str, start: int, end: int) -> float:
    """1.0 when the match is a whole identifier or a part of one, lower when it is inside a word."""
    before = text[start - 1] if start > 0 else " "
    after = text[end] if end < len(text) else " "
    left_ok = (
        not _WORD.match(before)
        or before == "_"
        or (before.islower() and text[start : start + 1].isupper())
    )
    right_ok = (
        not _WORD.match(after)
        or after == "_"
        or (after.isupper() and text[end - 1 : end].islower())
    )
    if left_ok and right_ok:
        return 1.0
    if left_ok or right_ok:
        return 0.7
    return 0.35


def hit_score(
    path: str, line_no: int, text: str, match_span: tuple[int, int] | None, definition: bool
) -> float:
    """A score for one matching line; only the order matters."""
    score = KIND_WEIGHT[path_kind(path)]
    if match_span is not None:
        score *= word_match_quality(text, *match_span)
    if definition:
        score *= 2.5
    if is_licence_header(line_no, text):
        score *= 0.05
    stripped = text.lstrip()
    if stripped.startswith(("import ", "from ", "#include", "use ", "require(", "using ")):
        score *= 0.6  # an import says where a thing is used, rarely what it is
    return score


def file_score(hit_scores: list[float]) -> float:
    best = max(hit_scores) if hit_scores else 0.0
    return best + 0.15 * math.log1p(len(hit_scores)) * best
