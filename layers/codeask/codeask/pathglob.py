"""Globs as ripgrep's --glob reads them (gitignore-style, over snapshot-relative paths), matched in bounded time."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# ripgrep's globs come from its globset crate (0.4.14 in ripgrep 14.1): `*` and `?` never match
# `/`, `**` is recursive only next to a `/` (elsewhere it is two `*`), `{a,b}` does not nest and
# drops empty alternatives, `[!x]` and `[^x]` negate a class (which may match `/`), a backslash
# escapes the next character, and everything is matched byte by byte on the UTF-8 path. The
# gitignore layer on top: a leading `!` negates, a leading `/` anchors, a trailing `/` matches
# directories only, and a glob without `/` matches a name at any depth.
#
# Python's `re` backtracks, so the straight translation (`[^/]*a[^/]*a…`) takes exponential time
# on a dozen stars. Each glob is compiled instead into pieces of fixed length separated by stars,
# and every piece but the last is matched at its leftmost place inside an atomic group: for a star
# that can absorb whatever lies between two pieces, the leftmost place of a piece never loses a
# match, so nothing is ever retried. That keeps one match to O(path × glob), at worst quadratic.
MAX_ALTERNATIVES = 32  # a glob whose braces and classes expand past this is refused

_SLASH = ord("/")


class GlobError(ValueError):
    """A glob ripgrep would refuse, or one too complex to match in bounded time."""


# --- Tokens, as globset parses them ---------------------------------------------------------------

_ANY, _STAR, _RPREFIX, _RSUFFIX, _RZM = "any", "star", "**/", "/**", "/**/"


@dataclass(frozen=True)
class _Class:
    negated: bool
    ranges: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class _Alternates:
    branches: tuple[tuple[object, ...], ...]


class _Parser:
    """The glob's tokens; `prev`/`cur` follow the characters exactly as globset's parser does,
    because whether `**` is recursive depends on the character before it."""

    def __init__(self, glob: str) -> None:
        self.glob = glob
        self.pos = 0
        self.prev: str | None = None
        self.cur: str | None = None
        self.stack: list[list[object]] = [[]]

    def bump(self) -> str | None:
        self.prev = self.cur
        self.cur = self.glob[self.pos] if self.pos < len(self.glob) else None
        self.pos += 1
        return self.cur

    def peek(self) -> str | None:
        return self.glob[self.pos] if self.pos < len(self.glob) else None

    def parse(self) -> list[object]:
        while (c := self.bump()) is not None:
            if c == "?":
                self.stack[-1].append(_ANY)
            elif c == "*":
                self.star()
            elif c == "[":
                self.stack[-1].append(self.char_class())
            elif c == "{":
                if len(self.stack) > 1:
                    raise GlobError("nested braces are not allowed")
                self.stack.append([])
            elif c == "}":
                branches: list[tuple[object, ...]] = []
                while len(self.stack) >= 2:
                    branches.append(tuple(self.stack.pop()))
                self.stack[-1].append(_Alternates(tuple(reversed(branches))))
            elif c == "," and len(self.stack) > 1:
                self.stack.append([])
            elif c == "\\":
                escaped = self.bump()
                if escaped is None:
                    raise GlobError("a backslash at the end escapes nothing")
                self.stack[-1].append(escaped)
            else:
                self.stack[-1].append(c)
        if len(self.stack) > 1:
            raise GlobError("a '{' is never closed")
        return self.stack[0]

    def star(self) -> None:
        prev = self.prev
        tokens = self.stack[-1]
        if self.peek() != "*":
            tokens.append(_STAR)
            return
        self.bump()
        if not tokens:
            if self.peek() not in (None, "/"):
                tokens += [_STAR, _STAR]
            else:
                tokens.append(_RPREFIX)
                self.bump()
            return
        if prev != "/" and (len(self.stack) <= 1 or prev not in (",", "{")):
            tokens += [_STAR, _STAR]
            return
        nxt = self.peek()
        if nxt is None:
            self.bump()
            suffix = True
        elif nxt in (",", "}") and len(self.stack) >= 2:
            suffix = True
        elif nxt == "/":
            self.bump()
            suffix = False
        else:
            tokens += [_STAR, _STAR]
            return
        last = tokens.pop()  # the `/` the recursive token stands for
        if last in (_RPREFIX, _RSUFFIX):
            tokens.append(last)
        else:
            tokens.append(_RSUFFIX if suffix else _RZM)

    def char_class(self) -> _Class:
        negated = self.peek() in ("!", "^")
        if negated:
            self.bump()
        ranges: list[tuple[str, str]] = []
        first, in_range = True, False
        while True:
            c = self.bump()
            if c is None:
                raise GlobError("a '[' is never closed")
            if c == "]" and not first:
                break
            if c == "-" and not first:
                if in_range:
                    ranges[-1] = _range(ranges[-1][0], "-")
                    in_range = False
                else:
                    in_range = True
            elif in_range:
                ranges[-1] = _range(ranges[-1][0], c)
                in_range = False
            else:
                ranges.append((c, c))
            first = False
        if in_range:
            ranges.append(("-", "-"))
        return _Class(negated, tuple(ranges))


def _range(lo: str, hi: str) -> tuple[str, str]:
    if hi < lo:
        raise GlobError(f"the range {lo}-{hi} in a class runs backwards")
    return lo, hi


# --- Compiling to a regex that never backtracks far ---------------------------------------------


def _byte_literal(ch: str) -> str:
    data = ch.encode("utf-8", "surrogateescape")
    if len(data) == 1 and (ch.isalnum() or ch in "_"):
        return ch
    return "".join(f"\\x{b:02x}" for b in data)


def _class_regex(c: _Class) -> str:
    body = "".join(
        _byte_literal(lo) if lo == hi else f"{_byte_literal(lo)}-{_byte_literal(hi)}"
        for lo, hi in c.ranges
    )
    return f"[{'^' if c.negated else ''}{body}]"


def _expand(tokens: Sequence[object]) -> list[list[object]]:
    """Every brace alternative as a flat token list (globset drops empty ones)."""
    out: list[list[object]] = [[]]
    for tok in tokens:
        if isinstance(tok, _Alternates):
            options = [alt for b in tok.branches for alt in _expand(b) if alt]
            if options:
                out = [a + b for a in out for b in options]
        else:
            out = [a + [tok] for a in out]
        if len(out) > MAX_ALTERNATIVES:
            raise GlobError(f"its braces make more than {MAX_ALTERNATIVES} alternatives")
    return out


# Atoms of a flat alternative: ("lit", regex) and ("one", regex) match one byte or character,
# "Z" is a star inside a path component, "D" any run of characters, "A" "at the start or after /".
_Atom = tuple[str, str]
_Z: _Atom = ("Z", "")
_D: _Atom = ("D", "")
_A: _Atom = ("A", "(?<![^/])")
_SLASH_ATOM: _Atom = ("lit", "/")


def _atoms(tokens: list[object]) -> list[list[_Atom]]:
    """One flat alternative as atoms; a class that can match `/` splits it in two (a `/`, or the
    class without it), and so does a `**/` that follows no `/`, so that only a literal `/` ever
    matches one and the pieces stay of fixed length."""
    outs: list[list[_Atom]] = [[]]
    for i, tok in enumerate(tokens):
        options: list[list[_Atom]]
        if tok == _ANY:
            options = [[("one", "[^/]")]]
        elif tok == _STAR:
            options = [[_Z]]
        elif tok == _RZM:
            options = [[_SLASH_ATOM, _D, _A]]
        elif tok == _RSUFFIX:
            options = [[_SLASH_ATOM, _D]]
        elif tok == _RPREFIX:
            at_boundary = i == 0 or tokens[i - 1] in ("/", _RZM, _RPREFIX)
            options = [[_D, _A]] if at_boundary else [[], [_D, _A]]
        elif isinstance(tok, _Class):
            rx = _class_regex(tok)
            if re.fullmatch(rx.encode(), b"/") is None:
                options = [[("one", rx)]]
            elif _beside_slash(tokens, i):
                options = [[("one", f"(?!/){rx}")]]
            else:
                options = [[_SLASH_ATOM], [("one", f"(?!/){rx}")]]
        else:
            assert isinstance(tok, str)
            options = [[("lit", _byte_literal(tok))]]
        outs = [a + b for a in outs for b in options]
        if len(outs) > MAX_ALTERNATIVES:
            raise GlobError(
                f"its classes and braces make more than {MAX_ALTERNATIVES} alternatives"
            )
    return outs


def _beside_slash(tokens: list[object], i: int) -> bool:
    """Whether a `/` at token i would make a path start or end with `/`, or hold `//`: a
    relative path never does, so a class there needs no `/` alternative."""
    before = tokens[i - 1] if i > 0 else None
    after = tokens[i + 1] if i + 1 < len(tokens) else None
    return (
        i in (0, len(tokens) - 1)
        or before in ("/", _RPREFIX, _RZM)
        or after in ("/", _RZM, _RSUFFIX)
    )


def _pieces(group: list[_Atom]) -> list[str]:
    """A group's fixed-length pieces, split at its stars (a run of stars is one star)."""
    pieces = [""]
    for kind, rx in group:
        if kind == "Z":
            if pieces[-1] or len(pieces) == 1:
                pieces.append("")
        else:
            pieces[-1] += rx
    return pieces


def _group_regex(pieces: list[str], *, free_end: bool) -> str:
    out = pieces[0]
    for i, piece in enumerate(pieces[1:], 1):
        if free_end and i == len(pieces) - 1:
            out += "[^/]*" + piece  # the last piece backtracks to fit what must follow
        else:
            out += f"(?>[^/]*?{piece})"  # leftmost, never retried
    return out


def _alternative_regex(atoms: list[_Atom]) -> str:
    groups: list[list[_Atom]] = [[]]
    for atom in atoms:
        if atom == _D:
            groups.append([])
        else:
            groups[-1].append(atom)
    if len(groups) == 1:
        return _group_regex(_pieces(groups[0]), free_end=True)
    # Between two `D`s, a group's earliest end is the best one: the next `D` absorbs the rest.
    out = f"(?>{_group_regex(_pieces(groups[0]), free_end=False)})"
    for i, group in enumerate(groups[1:], 1):
        last = i == len(groups) - 1
        # A `D` that starts where a name starts, then `A`: whole directories, `(?:.*/)?`, which
        # Python's engine tries faster than a look-behind at every character.
        whole_dirs = group[:1] == [_A] and (groups[i - 1] or [_SLASH_ATOM])[-1] == _SLASH_ATOM
        if whole_dirs:
            group = group[1:]
        body = _group_regex(_pieces(group), free_end=last)
        if last:
            out += ("(?:.*/)?" if whole_dirs else ".*") + body
        else:
            out += f"(?>{'(?:.*?/)?' if whole_dirs else '.*?'}{body})"
    return out


@dataclass(frozen=True)
class Glob:
    """One glob as ripgrep's --glob takes it: `selects(path)` says whether a file is searched."""

    text: str
    negated: bool
    only_dirs: bool
    body: str  # the regex of the glob's alternatives, without anchors

    def _regex(self, end: str) -> re.Pattern[bytes]:
        return re.compile(f"(?:{self.body}){end}".encode(), re.DOTALL)

    @functools.cached_property
    def _file(self) -> re.Pattern[bytes]:
        return self._regex(r"\Z")

    @functools.cached_property
    def _tree(self) -> re.Pattern[bytes]:
        return self._regex("/" if self.only_dirs else r"(?:/|\Z)")

    def matches_file(self, path: str) -> bool:
        """The glob, its `!` set aside, names this file itself."""
        return not self.only_dirs and self._file.match(_bytes(path)) is not None

    def matches_tree(self, path: str) -> bool:
        """The glob names this path or a directory above it (how a `!glob` or a deny-list entry
        covers everything below a directory)."""
        return self._tree.match(_bytes(path)) is not None

    def matches_dir(self, path: str) -> bool:
        """The glob, its `!` set aside, names this directory itself."""
        return self._file.match(_bytes(path)) is not None

    def tree_pattern(self) -> str:
        """The regex of matches_tree, to be combined with others (the deny-list)."""
        return f"(?:{self.body})(?:/|\\Z)"


def _bytes(path: str) -> bytes:
    return path.encode("utf-8", "surrogateescape")


@functools.lru_cache(maxsize=512)
def parse_glob(text: str) -> Glob:
    """A glob, or GlobError with what is wrong with it (as ripgrep would refuse it)."""
    line = text if text.endswith("\\ ") else text.rstrip()
    if not line:
        raise GlobError("the glob is empty")
    if line.startswith("#"):
        raise GlobError("ripgrep reads a glob starting with '#' as a comment; write \\# for a '#'")
    negated, anchored = False, False
    if line.startswith(("\\!", "\\#")):
        line = line[1:]
    else:
        if line.startswith("!"):
            negated, line = True, line[1:]
        if line.startswith("/"):
            anchored, line = True, line[1:]
    only_dirs = line.endswith("/")
    if only_dirs:
        line = line[:-1]
        if line.endswith("\\"):
            line = line[:-1]
    if not anchored and "/" not in line and not (line.startswith("**/") or line == "**"):
        line = "**/" + line
    if line.endswith("/**"):
        line += "/*"
    tokens = _Parser(line).parse()
    if tokens == [_RPREFIX]:
        return Glob(text, negated, only_dirs, ".*")
    alternatives = [atoms for flat in _expand(tokens) for atoms in _atoms(flat)]
    if len(alternatives) > MAX_ALTERNATIVES:
        raise GlobError(f"it makes more than {MAX_ALTERNATIVES} alternatives")
    body = "|".join(_alternative_regex(a) for a in alternatives)
    return Glob(text, negated, only_dirs, body)


def select(globs: Sequence[str], paths: Iterable[str]) -> list[str]:
    """The files ripgrep searches under these --glob options, in order: the last glob that
    matches a file decides; a directory matched last by a `!glob` hides all below it; and
    when there is any positive glob, a file no glob matches is left out."""
    parsed = [parse_glob(g) for g in globs]
    positive = any(not g.negated for g in parsed)
    if all(g.negated for g in parsed):
        return [p for p in paths if not any(g.matches_tree(p) for g in parsed)]
    if all(not g.negated for g in parsed):
        tests = [g._file.match for g in parsed if not g.only_dirs]
        if len(tests) == 1:
            one = tests[0]
            return [p for p in paths if one(_bytes(p))]
        return [p for p in paths if any(t(_bytes(p)) for t in tests)]
    return [p for p in paths if _selected(parsed, p, positive)]


def _selected(globs: list[Glob], path: str, positive: bool) -> bool:
    parts = path.split("/")
    for depth in range(1, len(parts)):
        folder = "/".join(parts[:depth])
        last = next((g for g in reversed(globs) if g.matches_dir(folder)), None)
        if last is not None and last.negated:
            return False
    last = next((g for g in reversed(globs) if g.matches_file(path)), None)
    if last is None:
        return not positive
    return not last.negated


def matches(glob: str, path: str) -> bool:
    """Whether `glob` (as a deny-list entry) covers `path`: the path or a directory above it."""
    return parse_glob(glob).matches_tree(path)
