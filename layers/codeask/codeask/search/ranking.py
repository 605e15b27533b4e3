"""How useful a hit is likely to be: definitions and code over mentions, source over tests, docs and vendored code."""

from __future__ import annotations

import math
import re

from codeask.search import heuristics
from codeask.search.filekinds import KIND_WEIGHT

# What a line is worth by what it is; a definition is usually what the question is about.
HIT_KIND_WEIGHT = {
    "definition": 2.5,
    "assignment": 1.6,  # where a value is set: asked about more than the places that read it
    "call": 1.1,
    "reference": 1.0,
    "import": 0.6,
    "string": 0.45,
    "comment": 0.35,
}
WORD_FIT_WEIGHT = {"whole": 1.0, "part": 0.85, "edge": 0.6, "inside": 0.3}
CASE_DIFFERS_WEIGHT = 0.5
LICENCE_WEIGHT = 0.05

_LICENCE_RE = re.compile(
    r"licen[cs]e|copyright|\(c\)\s*\d|redistribut|warrant|permission is hereby|spdx", re.IGNORECASE
)
_TEMPLATE_DEFINE = re.compile(r"^\s*\{\{-?\s*(define|block)\s")
_IMPORT_PREFIXES = ("import ", "from ", "#include", "use ", "require(", "using ", "require ")


def is_licence_header(line_no: int, text: str) -> bool:
    return line_no <= 40 and _LICENCE_RE.search(text) is not None


def guess_kind(text: str, language: str | None, spans: list[tuple[int, int]] | None = None) -> str:
    """A hit's kind from its line alone, before (or without) a parse."""
    if language is not None and heuristics.looks_like_comment(text, language):
        return "comment"
    if language == "gotmpl":
        return "definition" if _TEMPLATE_DEFINE.match(text) else "reference"
    if text.lstrip().startswith(_IMPORT_PREFIXES):
        return "import"
    if heuristics.is_definition(text):
        return "definition"
    if spans and _sets_value(text, spans[0][0]):
        return "assignment"
    return "reference"


_ASSIGN_OP = re.compile(r"(?<![=!<>])(?:[-+*/%&|^]|<<|>>)?=(?!=)")
_CONTROL = re.compile(r"^\s*(if|elif|while|for|return|assert|case|else|switch|until|unless)\b")


def _sets_value(text: str, col: int) -> bool:
    """A guess before the parse: the line assigns, and the match is not inside a call's parentheses."""
    if _CONTROL.match(text) or _ASSIGN_OP.search(text) is None:
        return False
    return text.count("(", 0, col) <= text.count(")", 0, col)


def hit_score(
    file_kind: str, line_no: int, text: str, kind: str, fit: str, *, exact_case: bool = True
) -> float:
    """A score for one matching line; only the order matters."""
    weight = HIT_KIND_WEIGHT[kind]
    if kind == "definition" and file_kind == "test":
        weight = HIT_KIND_WEIGHT["reference"]  # a test named after a thing is not the thing
    score = KIND_WEIGHT[file_kind] * weight * WORD_FIT_WEIGHT[fit]
    if not exact_case:
        score *= CASE_DIFFERS_WEIGHT
    if is_licence_header(line_no, text):
        score *= LICENCE_WEIGHT
    return score


def file_score(hit_scores: list[float]) -> float:
    best = max(hit_scores) if hit_scores else 0.0
    return best + 0.15 * math.log1p(len(hit_scores)) * best
