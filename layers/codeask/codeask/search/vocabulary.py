"""The words of code and of questions about it: identifiers split into words, a light stemmer, code synonyms."""

from __future__ import annotations

import re
from collections.abc import Collection

# `getHTTPProxy` -> get HTTP Proxy, `should_strip_auth` -> should strip auth, `sha256` stays whole.
# Only ASCII letters and digits match, so one pass over a whole text splits it at everything else.
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+[0-9]*|[A-Z]+[0-9]*|[0-9]+")
_VOWELS = frozenset("aeiouy")
_UNDOUBLE = frozenset("bdgmnprt")  # skipp -> skip, runn -> run, logg -> log
# Words whose -ing, -ed or -s is part of the word, not an inflection.
_WHOLE = frozenset(
    """string thing ring king during nothing something anything everything bring spring swing
    wing ping sing ceiling embed speed seed need feed shed bed red bus gas has was this
    its yes less unless always perhaps news series species analysis basis axis alias canvas
    atlas bias chaos""".split()
)
# Words whose -er is part of the word, not the one who does it: 'header' is not 'head'.
_NOT_AGENTS = frozenset(
    """number header order filter buffer pointer parameter register member layer user other
    render offer transfer integer character cluster master folder border answer power trigger
    cover error under over after never ever however whether either rather later upper lower
    inner outer super paper water letter matter chapter corner center enter alter""".split()
)
_stems: dict[str, str] = {}
_STEMS_KEPT = 200_000  # words remembered; a warm process reads many repositories


def stem(word: str) -> str:
    """A word's stem, the same for its inflections, its -ate/-ation forms and its doer: 'validation',
    'validates', 'validating' -> 'valid'; 'runner', 'running' -> 'run'; 'parser', 'parsed' -> 'pars';
    'numbered', 'numbers' -> 'number' ('header' is not 'head'); short words stay whole."""
    got = _stems.get(word)
    if got is None:
        if len(_stems) >= _STEMS_KEPT:
            _stems.clear()
        got = _stem(word.lower())
        got = _stems[word] = _AMERICAN.get(got, got)
    return got


def stem_as_written(word: str) -> str:
    """A word's stem in its own spelling: `stem` gives a British spelling's American stem (code
    is mostly written the American way), this the one a search of text written the British way
    needs ('colour' -> colour, where stem gives color)."""
    return _stem(word.lower())


def _stem(w: str) -> str:
    if len(w) <= 3 or w in _WHOLE:
        return w
    # plurals and third persons
    if w.endswith(("ies", "ied")) and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith(("sses", "ches", "shes", "xes", "zes")) or (w.endswith("uses") and len(w) > 5):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    # -ing or -ed, then a doer's -er, putting back an e that came off ('naming' -> name)
    derived = w.endswith(("ate", "ation"))
    for suffix in ("ing", "ed", "er"):
        base = w[: -len(suffix)]
        if (
            w.endswith(suffix)
            and len(base) >= (3 if suffix == "er" else 2)
            and _VOWELS.intersection(base)
            and base[-1] != "e"
            and not (suffix == "er" and w in _NOT_AGENTS)
        ):
            derived = derived or (base.endswith("at") and not base.endswith("att"))
            if len(base) > 3 and base[-1] == base[-2] and base[-1] in _UNDOUBLE:
                base = base[:-1]
            elif len(base) <= 3 and base[-1] not in _VOWELS and base[-1] not in "wxy":
                base += "e"
            w = base
            if not w.endswith("er"):
                break  # else an -er may follow: 'discovered' -> discover -> discov
    if w.endswith("e") and len(w) > 4:
        w = w[:-1]
    if w.endswith("ion") and len(w) > 6 and w[-4] in "st":
        w = w[:-3]  # connection -> connect, validation -> validat
    if derived and w.endswith("at") and len(w) >= 6:
        w = w[:-2]  # validat -> valid, configurat -> configur (as 'configure')
    return w


# British spellings, and the American ones code is mostly written in: a question that says
# "licence" or "initialise" asks about `LICENSE` and `initialize`. Whole words, not suffix rules:
# -our, -ise and -ence end many words that have no other spelling (four, promise, silence).
_SPELLINGS = """
licence license, defence defense, offence offense, pretence pretense,
colour color, behaviour behavior, favour favor, honour honor, flavour flavor,
neighbour neighbor, labour labor, rumour rumor, humour humor, armour armor, endeavour endeavor,
centre center, metre meter, litre liter, fibre fiber,
catalogue catalog, dialogue dialog, analogue analog, programme program,
analyse analyze, paralyse paralyze, catalyse catalyze,
initialise initialize, serialise serialize, deserialise deserialize, normalise normalize,
customise customize, optimise optimize, authorise authorize, recognise recognize,
organise organize, synchronise synchronize, sanitise sanitize, tokenise tokenize,
finalise finalize, materialise materialize, visualise visualize, prioritise prioritize,
categorise categorize, summarise summarize, minimise minimize, maximise maximize,
utilise utilize, localise localize, capitalise capitalize, specialise specialize,
standardise standardize, parametrise parametrize, parameterise parameterize, memoise memoize,
randomise randomize, realise realize, emphasise emphasize, centralise centralize,
generalise generalize, virtualise virtualize, containerise containerize, stabilise stabilize,
modelling modeling, modelled modeled, labelled labeled, labelling labeling,
cancelled canceled, cancelling canceling, travelled traveled, signalled signaled,
signalling signaling, marshalled marshaled, marshalling marshaling, tunnelling tunneling,
levelled leveled, channelled channeled, judgement judgment,
acknowledgement acknowledgment, artefact artifact, grey gray, enrol enroll, fulfil fulfill
"""
_AMERICAN: dict[str, str] = {}
for _pair in _SPELLINGS.replace("\n", " ").split(","):
    _brit, _amer = _pair.split()
    if _stem(_brit) != _stem(_amer):
        _AMERICAN[_stem(_brit)] = _stem(_amer)


# Programmers name one idea with several words. Each group is general programming vocabulary,
# written as stems; a question's word also finds the others in its group, at a lower weight.
# Every group was kept only if it did not lower the tuning sets' scores (see bench/search_quality.py).
_WORD_GROUPS = (
    "delete remove cleanup unlink prune purge rm",
    "create make build new init",
    "check verify validate ensure",
    "config configure setting option ini cfg conf",
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
    "password passwd secret auth",
    "count number num many",
    "limit max maximum",
    "mask redact obfuscate scrub",
    "rank sort prefer preference priority choose",
    "restore rollback revert undo",
    "extra extended additional",
    "enclose wrap surround",
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
    return [p.lower() for p in _PART.findall(text)]


def tokens(text: str) -> list[str]:
    """Stemmed words of a name, a path or a comment, in order."""
    return [stem(p.lower()) for p in _PART.findall(text)]


# The words of a text as written, in order, before `tokens` lowers and stems them.
word_parts = _PART.findall


COMPOUND_PIECE = 3  # the shortest piece of a compound worth reading as a word of its own
COMPOUND_MAX = 40  # the longest part read as a compound of two words


def compound(part: str, wanted: Collection[str]) -> tuple[str, ...]:
    """The stems of a lower-case compound that two wanted words make when written together
    (`testsfailed` -> test, fail; `maxfail` -> max, fail), or () when no split into two pieces of
    COMPOUND_PIECE letters or more gives two of them. Code runs words together where a question
    writes them apart; a split is trusted only when both halves are words the question says.
    A part longer than COMPOUND_MAX letters (a minified or generated token) is not tried: each
    split stems two slices of it."""
    if len(part) > COMPOUND_MAX:
        return ()
    for i in range(COMPOUND_PIECE, len(part) - COMPOUND_PIECE + 1):
        left, right = stem(part[:i]), stem(part[i:])
        if left in wanted and right in wanted:
            return left, right
    return ()


def synonyms(stemmed: str) -> tuple[str, ...]:
    """The other words of a stem's synonym group (none for most words)."""
    group = _GROUP_OF.get(stemmed, ())
    return tuple(w for w in group if w != stemmed)
