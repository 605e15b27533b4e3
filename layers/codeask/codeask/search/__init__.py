"""Code search: the ripgrep runner, syntax from tree-sitter, file kinds and ranking, and the rendered result."""

from codeask.search.layout import BUDGET, FileSource
from codeask.search.query import RAW_MATCH_CAP, FileHits, Hit, SearchOutcome, search
from codeask.search.render import no_matches, render

__all__ = [
    "BUDGET",
    "RAW_MATCH_CAP",
    "FileHits",
    "FileSource",
    "Hit",
    "SearchOutcome",
    "no_matches",
    "render",
    "search",
]
