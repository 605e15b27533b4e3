"""The short forms code writes for the words of a question: `buf` for buffer, `fd` for file descriptor.

A question is written in words ("the file descriptors", "the line number"); the code it asks about
names the same things by their common abbreviations (`fd`, `lineno`). `abbreviations` gives, for
the words of a question in order, each word's or each pair of neighbouring words' short forms, and
the one word code writes for a phrasal verb ("put the files back": restore, rollback), as index
stems; the caller searches them beside the question's own words, at their weight.
"""

from __future__ import annotations

from collections.abc import Sequence

from codeask.search.vocabulary import stem

# Long form -> the abbreviations code writes for it. General programming vocabulary only: each
# short form is written as a whole identifier part (`buf`, `cur_buf`, `bufSize`) across C, Python
# and YAML code alike, hundreds to thousands of times over the tuning corpora (glibc, pylint,
# bitnami charts), and stands for that long form there. Forms that mean several things (`desc`:
# descriptor or description; `ret`; `res`) are left out, and so is `req`: measured, it lifted code
# full of unrelated request records over the answer. A row's long forms are separated by
# commas; a two-word one matches two neighbouring words of the question, in either order ("maps
# memory" is a memory map).
_TABLE = """
buffer: buf
context: ctx
length: len
response: resp
package: pkg
dependency: dep
exception: exc
attribute: attr
option: opt
column: col
pointer: ptr
address: addr
value: val
variable: var
initialize, initialization: init
destination: dst dest
source: src
object: obj
process: proc
information: info
specification: spec
separator: sep
previous: prev
current: cur curr
minimum: min
position: pos
character: char chr
signal: sig
reference: ref
library: lib
command: cmd
sequence: seq
expression: expr
temporary: tmp temp
memory: mem
index: idx
count: cnt
number: nr
certificate: cert
identifier: id
execute: exec
application: app
synchronize: sync
utility: util
document, documentation: doc
administrator: admin
file descriptor: fd
line number: lineno
memory map: mmap
"""


def _parse(table: str) -> tuple[dict[str, tuple[str, ...]], dict[frozenset[str], tuple[str, ...]]]:
    words: dict[str, tuple[str, ...]] = {}
    pairs: dict[frozenset[str], tuple[str, ...]] = {}
    for row in table.strip().splitlines():
        long, short = row.split(":")
        forms = tuple(dict.fromkeys(stem(s) for s in short.split()))
        for phrase in long.split(","):
            parts = phrase.split()
            if len(parts) == 2:
                pairs[frozenset(stem(p) for p in parts)] = forms
            else:
                words[stem(parts[0])] = forms
    return words, pairs


_WORDS, _PAIRS = _parse(_TABLE)
# What a short form counts of the question's words. One word's (`val`, `req`) is also a piece of
# many names that mean something else, so it counts as a synonym does; a two-word phrase's (`fd`,
# `mmap`) stands for both words at once and nothing else, so it counts as the words themselves.
# Measured: the word's weight at 1.0 lost pytest-24 (`val`), glibc-hops-03 (`req`) and
# pylint-hops-01; the phrase's at 1.0 gained pytest-07 (`fd`).
WORD_WEIGHT = 0.5
PHRASE_WEIGHT = 1.0


# Phrasal verbs: a verb and its particle, which English splits around the object ("put the old
# files back", "clean the temp dir up"), name what code writes as one word. Verb: particle: the
# code's words (stems). The particle may come up to PARTICLE_GAP words after the verb.
_PHRASAL = """
put back: restore rollback revert
roll back: rollback
clean up: cleanup
tear down: teardown
set up: setup
look up: lookup
shut down: shutdown
start up: startup
back up: backup
write out: flush
log in: login
sign in: login
"""
PARTICLE_GAP = 5


def _parse_phrasal(table: str) -> dict[tuple[str, str], tuple[str, ...]]:
    out: dict[tuple[str, str], tuple[str, ...]] = {}
    for row in table.strip().splitlines():
        verb, particle, forms = row.replace(":", " ").split(maxsplit=2)
        out[(stem(verb), particle)] = tuple(stem(f) for f in forms.split())
    return out


_VERBS = _parse_phrasal(_PHRASAL)
_IRREGULAR = {"written": "write", "wrote": "write"}  # forms whose stem is not their verb's


def abbreviations(words: Sequence[str]) -> list[tuple[str, tuple[str, ...], float]]:
    """For a question's words in order (as written, stop words included): (label, short forms as
    stems, weight) for each word and each pair of neighbours the table knows, in order."""
    out: list[tuple[str, tuple[str, ...], float]] = []
    stems = [stem(w) for w in words]
    for i, st in enumerate(stems):
        if st in _WORDS:
            out.append((words[i].lower(), _WORDS[st], WORD_WEIGHT))
        if i + 1 < len(stems):
            forms = _PAIRS.get(frozenset((st, stems[i + 1])))
            if forms:
                out.append((f"{words[i]} {words[i + 1]}".lower(), forms, PHRASE_WEIGHT))
    low = [w.lower() for w in words]
    for i, w in enumerate(low):
        verb = stem(_IRREGULAR.get(w, w))
        for j in range(i + 1, min(len(low), i + 1 + PARTICLE_GAP)):
            forms = _VERBS.get((verb, low[j]))
            if forms:
                out.append((f"{w} {low[j]}", forms, PHRASE_WEIGHT))
                break
    return out
