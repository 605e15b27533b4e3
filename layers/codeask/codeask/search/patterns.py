"""What a search pattern means: its case, its alternatives, whether it is a plain word, where it matched."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

_WORD_CHAR = re.compile(r"\w")
_PLAIN_WORD = re.compile(r"\w{2,}")
_INLINE_FLAGS = re.compile(r"\(\?[a-zA-Z]*[is][a-zA-Z-]*[:)]")


def _literal_chars(pattern: str) -> str:
    """The pattern without escapes and class shorthands (`\\S`, `\\W`, `\\p{Lu}`), as rg's smart case sees it."""
    return re.sub(r"\\p\{[^}]*\}|\\.", "", pattern)


def split_alternatives(pattern: str) -> list[str]:
    """The top-level alternatives of `a|b|c` (none inside groups or classes); one item if there are none."""
    parts: list[str] = []
    depth = 0
    in_class = False
    start = 0
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
            if pattern[i + 1 : i + 2] == "]":
                i += 1  # `[]...]`: a literal ] first in a class
        elif c == "(":
            depth += 1
        elif c == ")":
            depth = max(0, depth - 1)
        elif c == "|" and depth == 0:
            parts.append(pattern[start:i])
            start = i + 1
        i += 1
    parts.append(pattern[start:])
    return [p for p in parts if p] or [pattern]


def compile_python(pattern: str, *, ignore_case: bool) -> re.Pattern[str] | None:
    """The pattern as Python's `re` reads it (rg's syntax mostly agrees), or None when it cannot,
    or when Python's backtracking could take exponential time on it (see `_may_backtrack`):
    rg, whose engine is linear, still finds the matches; only their spans go unmarked."""
    try:
        if _may_backtrack(pattern):
            return None
        return re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except (re.error, RecursionError, OverflowError, ValueError):
        return None


_REPEATS = frozenset({"MAX_REPEAT", "MIN_REPEAT"})
_WIDE = frozenset({"ANY", "NOT_LITERAL"})  # `.` and `[^x]`: most of any line matches them
WIDE_REPEATS_MAX = 2  # `.*a.*b` is fine; each more `.*` multiplies the work by a line's length


def _may_backtrack(pattern: str) -> bool:
    """A repeat around another repeat or an alternation (`(a+)+`, `(a|a)*`: exponential), or
    more than WIDE_REPEATS_MAX repeats of a wide item (`.*.*.*x`: a power of the line's length)."""
    from re import _parser  # type: ignore[attr-defined]  # the tree `re.compile` itself builds

    wide = 0

    def walk(items: Any, inside: bool) -> bool:
        nonlocal wide
        for op, av in items:
            name = str(op)
            if name in _REPEATS:
                _low, high, sub = av
                if high > 1:
                    if inside:
                        return True
                    wide += any(str(o) in _WIDE or _negated(o, a) for o, a in sub)
                    if walk(sub, True):
                        return True
                    continue
            if name == "BRANCH" and inside:
                return True
            for child in _children(name, av):
                if walk(child, inside):
                    return True
        return False

    return walk(_parser.parse(pattern), False) or wide > WIDE_REPEATS_MAX


def _negated(op: Any, av: Any) -> bool:
    return str(op) == "IN" and bool(av) and str(av[0][0]) == "NEGATE"


def _children(name: str, av: Any) -> list[Any]:
    if name == "SUBPATTERN":
        return [av[-1]]
    if name == "BRANCH":
        return list(av[1])
    if name in ("ASSERT", "ASSERT_NOT"):
        return [av[1]]
    if name in _REPEATS or name in ("ATOMIC_GROUP", "POSSESSIVE_REPEAT"):
        return [av[-1]]
    if name == "GROUPREF_EXISTS":
        return [b for b in av[1:] if b]
    return []


@dataclass(frozen=True)
class Pattern:
    """A model's regex and what follows from it; `ignore_case` is rg's smart case unless said otherwise."""

    text: str
    ignore_case: bool

    @classmethod
    def smart(cls, text: str) -> Pattern:
        """Smart case, as rg has it: case-insensitive unless a literal capital letter appears."""
        return cls(text, not any(c.isupper() for c in _literal_chars(text)))

    @property
    def has_inline_case_flag(self) -> bool:
        """The model said `(?i)` or `(?-i)` itself: its choice stands."""
        return bool(_INLINE_FLAGS.search(self.text))

    @cached_property
    def compiled(self) -> re.Pattern[str] | None:
        return compile_python(self.text, ignore_case=self.ignore_case)

    @cached_property
    def alternatives(self) -> list[str]:
        return split_alternatives(self.text)

    @cached_property
    def compiled_alternatives(self) -> list[re.Pattern[str] | None]:
        return [compile_python(a, ignore_case=self.ignore_case) for a in self.alternatives]

    @cached_property
    def plain_words(self) -> list[str]:
        """The alternatives that are plain words: `redis`, both of `redis|memcached`, and
        `_IO_cleanup` in `_IO_cleanup|lock\\(`."""
        return [a for a in self.alternatives if _PLAIN_WORD.fullmatch(a)]

    def plain_word_of(self, alternative: int | None) -> str | None:
        """The plain word a hit of this alternative matched (None for a regex alternative)."""
        alts = self.alternatives
        word = alts[0] if alternative is None and len(alts) == 1 else None
        if alternative is not None and 0 <= alternative < len(alts):
            word = alts[alternative]
        return word if word is not None and _PLAIN_WORD.fullmatch(word) else None

    def spans(self, text: str, limit: int = 4) -> list[tuple[int, int]]:
        """Where the pattern matched in one line (Python's reading), at most `limit` spans."""
        rx = self.compiled
        if rx is None:
            return []
        out = []
        for m in rx.finditer(text):
            if m.end() > m.start():
                out.append(m.span())
            if len(out) >= limit:
                break
        return out

    def alternative_of(self, text: str) -> int | None:
        """Which top-level alternative matched this line first (None without alternation)."""
        if len(self.alternatives) < 2:
            return None
        best: tuple[int, int] | None = None
        for i, rx in enumerate(self.compiled_alternatives):
            if rx is None:
                continue
            m = rx.search(text)
            if m and (best is None or m.start() < best[0]):
                best = (m.start(), i)
        return None if best is None else best[1]


@lru_cache(maxsize=256)
def is_identifier(word: str) -> bool:
    """A word that is a name on its own (`_IO_cleanup`, `commonEnv`), not a plain English word:
    `_IO_cleanup_region_start` is another name, while `redis_client` is about redis."""
    return (
        "_" in word.strip("_") or word.startswith("_") or re.search(r"[a-z][A-Z]", word) is not None
    )


def word_fit(text: str, start: int, end: int, *, identifier: bool = False) -> str:
    """'whole' for a whole word, 'part' for a part of an identifier (snake_case, camelCase),
    'edge' when it starts or ends a longer word ('redis' in 'redistribute', a stem, or an
    identifier in a longer one), 'inside' when it sits within one ('edis' in 'redistribute')."""
    before = text[start - 1] if start > 0 else " "
    after = text[end] if end < len(text) else " "
    if identifier:
        # a name grown on the right is another name (`_IO_cleanup_region_start`); one with a
        # prefix at a boundary is often about it (`freeClusterNode`, `do_set_arena_max`)
        left_whole = not _WORD_CHAR.match(before)
        right_whole = not _WORD_CHAR.match(after)
        prefixed = before == "_" or (before.islower() and text[start : start + 1].isupper())
        if right_whole:
            return "whole" if left_whole else "part" if prefixed else "edge"
        return "edge" if left_whole or prefixed else "inside"
    first = text[start : start + 1]
    last = text[end - 1 : end]
    left_whole = not _WORD_CHAR.match(before)
    right_whole = not _WORD_CHAR.match(after)
    if left_whole and right_whole:
        return "whole"
    left_ok = left_whole or before == "_" or (before.islower() and first.isupper())
    right_ok = (
        right_whole or after == "_" or (after.isupper() and last.islower()) or after.isdigit()
    )
    if left_ok and right_ok:
        return "part"
    return "edge" if left_ok or right_ok else "inside"
