"""One file's rows in the definitions index: read, parsed, and its path, names, scopes and docs as words."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import NamedTuple

from codeask.search.definitions import extract
from codeask.search.filekinds import file_kind
from codeask.search.vocabulary import stem, word_parts

MAX_FILE_BYTES = 4_000_000
BINARY_SNIFF = 8000
DOC_TOKENS = 60
STEMS_KEPT = 200_000  # words remembered with their stems
DOCS_KEPT = 50_000  # docs remembered with their words (a config tree repeats its comments)
# A definition's row id is its file's place in the snapshot's listing, shifted, plus its place in
# the file: ids (and so ties in ranking) do not depend on which rows an earlier index supplied.
DEF_BITS = 12  # MAX_PER_FILE + 1 definitions per file fit
# Plain English that fills comments and docstrings but never tells two definitions apart.
DOC_STOP = frozenset(
    """the a an and or of to in is are be it this that for on as with by at from not if when
    which can will was were has have had its into than then there these those but all any so
    no such only may also should would could do does did been being our we you your they them
    their he she his her i me my us""".split()
)

Row = tuple[object, ...]


class Task(NamedTuple):
    """A file to parse: its path, its id (its place in the snapshot's listing) and its blob id."""

    rel: str
    file_id: int
    blob: str | None


class FileRows:
    """Turns files under one root into `files` and `defs` rows, remembering the words of names,
    scopes and docs seen before, and each word's stem (a tree repeats them)."""

    def __init__(self, root: str) -> None:
        self.root = root
        # a name's, a scope's or a doc's words, and how many: (text, count)
        self._names: dict[str, tuple[str, int]] = {}
        self._scopes: dict[tuple[str, ...], tuple[str, int]] = {}
        self._docs: dict[str, tuple[str, int]] = {}
        self._stems = _Stems()

    def add(self, task: Task, files: list[Row], defs: list[Row]) -> None:
        """Append the file's row and its definitions' rows; nothing for a binary, oversized or
        unreadable file, or one the parser gives up on."""
        rel, file_id, blob = task
        try:
            data = _read_head(f"{self.root}/{rel}", MAX_FILE_BYTES + 1)
        except OSError:
            return
        if b"\x00" in data[:BINARY_SNIFF] or len(data) > MAX_FILE_BYTES:
            return
        lines = data.decode("utf-8", "replace").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        what = file_kind(rel)
        try:
            found = extract(rel, lines, data, what)
        except (RecursionError, ValueError):
            return  # one odd file must not cost the whole index
        base = rel.rsplit("/", 1)[-1]
        bare = rel[: len(rel) - len(base)] + (base.rsplit(".", 1)[0] if "." in base[1:] else base)
        tokens = self._tokens
        path_words, n_path = _words(dict.fromkeys(tokens(bare)))
        files.append((file_id, rel, what, path_words, blob))
        names, scopes, docs = self._names, self._scopes, self._docs
        first = file_id << DEF_BITS
        for k, (line, end, kind, name, scope, doc) in enumerate(found):
            nw = names.get(name)
            if nw is None:
                nw = names[name] = _words(tokens(name))
            sw = scopes.get(scope)
            if sw is None:
                sw = scopes[scope] = _words(tokens(" ".join(scope)))
            dw = docs.get(doc)
            if dw is None:
                if len(docs) >= DOCS_KEPT:
                    docs.clear()
                dw = docs[doc] = _doc_words(tokens(doc))
            defs.append((first | k, file_id, line, end, kind, name, "\x1f".join(scope), nw[0], sw[0],
                         dw[0], nw[1] + sw[1] + dw[1] + n_path))  # fmt: skip

    def _tokens(self, text: str) -> list[str]:
        """`vocabulary.tokens(text)`, each word's stem looked up once per build."""
        return list(map(self._stems.__getitem__, word_parts(text)))


class _Stems(dict[str, str]):
    """A word as it is written -> its stem (`vocabulary.stem` of it in lower case)."""

    def __missing__(self, part: str) -> str:
        if len(self) >= STEMS_KEPT:
            self.clear()
        got = self[part] = stem(part.lower())
        return got


def _read_head(path: str, limit: int) -> bytes:
    """The file's first `limit` bytes (all of it when it is shorter), read as its size says: a
    buffered read of `limit` bytes would first allocate them all, for every small file."""
    fd = os.open(path, os.O_RDONLY)
    try:
        data = os.read(fd, min(os.fstat(fd).st_size + 1, limit))
        while len(data) < limit:  # the file is longer than its size said, or the read was short
            more = os.read(fd, limit - len(data))
            if not more:
                break
            data += more
        return data
    finally:
        os.close(fd)


def _words(words: Iterable[str]) -> tuple[str, int]:
    """Words as the index stores them (space-separated), and how many."""
    listed = list(words)
    return " ".join(listed), len(listed)


def _doc_words(words: list[str]) -> tuple[str, int]:
    """A doc's words without the plain English, the first DOC_TOKENS of them."""
    out = [w for w in words if w not in DOC_STOP][:DOC_TOKENS]
    return " ".join(out), len(out)
