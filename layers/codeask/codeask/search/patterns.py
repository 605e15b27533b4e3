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


_DEFINES_BEFORE = re.compile(
    r"(?:^|[\s(*&])(?:def|class|func|function|fn|struct|enum|union|interface|type|trait|const|"
    r"let|var|val|define|macro)\s+[*&]*$"
)
_TYPED = re.compile(
    r"(?:(?:static|extern|const|unsigned|signed|struct|enum|volatile|inline)\s+)*[A-Za-z_][\w$]*[\s*&]+"
)
_DEFINES_AFTER = re.compile(r"\s*(?::[^=]*)?(?<![=!<>])=(?!=)|\s*(?::\s|:$)")


def longer_name_defined(text: str, spans: list[tuple[int, int]], word: str) -> str | None:
    """The longer name a line defines or assigns when `word` is one of its components
    (`retry_handlers` for `retry_handler`, `diff_rename_limit_default` for `rename_limit`), or
    None: a longer name that is only used on the line is another name, set aside."""
    for a, b in spans:
        if text[a:b].lower() != word.lower():
            continue
        start, end = a, b
        while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_$"):
            start -= 1
        while end < len(text) and (text[end].isalnum() or text[end] in "_$"):
            end += 1
        name = text[start:end]
        if name == text[a:b] or not _is_component(text, start, a, b, end):
            continue
        before = text[:start]
        after = text[end:]
        if _DEFINES_BEFORE.search(before.lstrip("#").lstrip()):
            return name
        # the name leads its statement (`name = …`, `self.name: T = …`, `name:` as a key,
        # `int name = …;`, `name (args)` opening a C definition at the margin)
        bare = re.sub(r"^\s*(?:-\s+)?(?:self\.|this\.|[\w$]+\.)?", "", before)
        typed = _TYPED.fullmatch(before) is not None
        if after.lstrip().startswith("("):
            # `name (…)` opens a C definition only at the margin; elsewhere it is a call
            if before[:1].isspace() or not (before == "" or typed):
                continue
            return name
        if (bare.strip("\"' ") == "" or typed) and _DEFINES_AFTER.match(after):
            return name
        if typed and re.match(r"\s*[;\[,]", after):
            return name  # `int name;`, `char name[16];`
    return None


def _is_component(text: str, start: int, a: int, b: int, end: int) -> bool:
    """The match starts or ends at a component boundary of the longer name (`_`, camelCase, the
    name's own start or end)."""
    left = a == start or text[a - 1] == "_" or (text[a - 1].islower() and text[a].isupper())
    right = b == end or text[b] == "_" or (text[b - 1].islower() and text[b].isupper())
    return left or right


_EDGE_SPACE = re.compile(r"^(?:\^|\\s[*+]|\s)+|(?:\$|\\s[*+]|\s)+$")


def per_line(pattern: str) -> tuple[str, str | None]:
    """A pattern with a line break in it (`\\n`, which rg refuses without multi-line mode) as
    one it can run, and a note saying what was searched: its lines apart, as alternatives,
    or the pattern without its line breaks when a break sits inside a group. ValueError when
    nothing but line breaks is left."""
    cuts: list[tuple[int, int]] = []  # where a line break is written, escaped or raw
    i = 0
    while i < len(pattern):
        if pattern.startswith(("\\r\\n", "\\n"), i):
            n = 4 if pattern.startswith("\\r\\n", i) else 2
            cuts.append((i, i + n))
            i += n
        elif pattern[i] == "\\":
            i += 2
        elif pattern[i] in "\r\n":
            cuts.append((i, i + 1))
            i += 1
        else:
            i += 1
    if not cuts:
        return pattern, None
    pieces, start = [], 0
    for a, b in cuts:
        pieces.append(pattern[start:a])
        start = b
    pieces.append(pattern[start:])
    lines = [_EDGE_SPACE.sub("", p) for p in pieces]
    lines = [p for p in lines if _has_literal(p)]
    said = "the search reads one line at a time, so a line break (`\\n`) cannot match; "
    if lines and all(compile_python(p, ignore_case=False) is not None for p in lines):
        if len(lines) == 1:
            return lines[0], f"Note: {said}`{lines[0]}` was searched alone."
        joined = "|".join(p if len(split_alternatives(p)) == 1 else f"(?:{p})" for p in lines)
        return joined, (
            f"Note: {said}each line of the pattern was searched apart, as `{joined}`: "
            "matches of them on adjacent lines are the multi-line match."
        )
    bare = "".join(pieces)
    if _has_literal(bare) and compile_python(bare, ignore_case=False) is not None:
        return bare, f"Note: {said}the pattern was searched without its line breaks, as `{bare}`."
    raise ValueError(
        "the search reads one line at a time, so a line break (`\\n`) cannot match, and the "
        "pattern has nothing else to search for: search for the text on either side of it"
    )


def _has_literal(pattern: str) -> bool:
    """Some letter or digit of its own to search for (`\\s*` and `^` alone have none)."""
    return re.search(r"\w", re.sub(r"\\.", "", pattern)) is not None
