"""The words of code and of questions about it: identifiers split into words, a light stemmer, code synonyms."""

from __future__ import annotations

import re
from functools import lru_cache

# `getHTTPProxy` -> get HTTP Proxy, `should_strip_auth` -> should strip auth, `sha256` stays whole.
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+[0-9]*|[A-Z]+[0-9]*|[0-9]+")
_RUN = re.compile(r"[A-Za-z0-9]+")
_SUFFIXES = ("ations", "ation", "ings", "ing", "ions", "ion", "ers", "ies", "es", "ed", "er", "s")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light stem: 'signatures' -> 'signatur', 'skipped' -> 'skip', 'retried' -> 'retry'.

    Also a regex prefix: the stem of a word starts every spelling of it that ripgrep should find."""
    w = word.lower()
    if len(w) > 4 and w.endswith(("ied", "ies")):
        return w[:-3] + "y"
    for suf in _SUFFIXES:
        if suf == "s" and w[-2:-1] in ("s", "i", "u"):
            continue  # redis, status, class: not plurals
        if w.endswith(suf) and len(w) - len(suf) >= (3 if suf == "s" else 4):
            w = w[: -len(suf)]
            break
    if w.endswith("e") and len(w) > 4:
        w = w[:-1]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] in "bdgmnprt":
        w = w[:-1]  # skipp -> skip, runn -> run
    return w


# Programmers name one idea with several words. Each group is general programming vocabulary,
# written as stems; a question's word also finds the others in its group, at a lower weight.
# Every group was kept only if it did not lower the tuning sets' scores (see bench/search_quality.py).
_WORD_GROUPS = (
    "delete remove cleanup unlink prune purge rm",
    "create make build new init",
    "check verify validate ensure",
    "config setting option ini cfg conf",
    "retry backoff attempt",
    "temp tmp",
    "folder dir directory",
    "error exception raise fail err",
    "message msg",
    "authenticate auth login credential authorization",
    "permission acl access",
    "database db sql",
    "connect conn client session",
    "stop abort exit halt shutdown",
    "start begin launch",
    "cut truncate trim shorten",
    "parameter param arg argument",
    "environment env",
    "print write report echo",
    "slow duration elapsed timing",
    "debugger pdb breakpoint",
    "ignore skip exclude",
    "download fetch",
    "cache memo",
    "expire expiry rotate refresh ttl",
    "terminal tty isatty console",
    "password passwd secret",
    "count number num many",
)
SYNONYMS: tuple[tuple[str, ...], ...] = tuple(
    tuple(dict.fromkeys(stem(w) for w in g.split())) for g in _WORD_GROUPS
)
_GROUP_OF: dict[str, tuple[str, ...]] = {}
for _group in SYNONYMS:
    for _word in _group:
        _GROUP_OF.setdefault(_word, _group)


def split_identifier(text: str) -> list[str]:
    """The words of an identifier or a phrase, lower-case: `_IO_switch_to_get_mode` -> io, switch,
    to, get, mode; `getHTTPProxy` -> get, http, proxy."""
    out: list[str] = []
    for run in _RUN.findall(text):
        parts = _PART.findall(run)
        out.extend(p.lower() for p in (parts or [run]))
    return out


def tokens(text: str) -> list[str]:
    """Stemmed words of a name, a path or a comment, in order."""
    return [stem(w) for w in split_identifier(text)]


def synonyms(stemmed: str) -> tuple[str, ...]:
    """The other words of a stem's synonym group (none for most words)."""
    group = _GROUP_OF.get(stemmed, ())
    return tuple(w for w in group if w != stemmed)
