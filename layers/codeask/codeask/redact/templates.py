"""Go/Helm and Jinja template actions (`{{ … }}`) in a value: where a secret typed into one is.

A templated value is worked out when the file is rendered (`{{ .Values.password | b64enc }}`),
so it names no secret; but an action whose only value is a string literal (`{{ "hunter2" |
b64enc }}`) renders that literal, which is then as typed as `password: hunter2`, and so does a
`default` fallback. Any other literal in an action (`include "x.name"`, `coalesce .Values.pw
"…"`, `ternary "…" "…" .x`) may be a name or a secret: it is judged as a literal in code is, by
its looks. Shared by the assignment rule (any secret-named key) and the Kubernetes Secret rule
(every data value). Every scan here is one pass: a value of a million quotes or openers costs
time in proportion to its length."""

from __future__ import annotations

import re

# The functions that only encode, quote, trim or indent what they are given: an action of these
# and literals renders the literals as typed (Helm/sprig, Jinja).
_PASS_THROUGH = re.compile(
    r"\b(?:print|printf|cat|quote|squote|b64enc|b64encode|b64dec|toString|string|trim|trimAll|"
    r"trimSuffix|trimPrefix|upper|lower|nindent|indent|toYaml|sha256sum|sha1sum)\b|[|()~,\s\d]"
)
# `default "x" .Values.y`, `.Values.y | default "x"`, Jinja's `y | default("x")`: x is typed; a
# field named default (`.Values.default "x"`) is no fallback.
_DEFAULT = re.compile(r"(?<![.\w$])default\b[ \t]*\(?[ \t]*(?=[\"'`])")
# Functions whose literal arguments name things (a template, a key, a map field, a message):
# in an action that calls one, only a literal rendered as typed (a fallback) may be a secret.
_NAMING = re.compile(
    r"\b(?:include|template|tpl|dict|list|index|dig|get|hasKey|pluck|lookup|required|fail|set|"
    r"unset|merge|omit|pick)\b"
)
_DIG = re.compile(r"(?<![.\w$])dig\b")
_QUOTE = re.compile(r"[\"'`]")
_BODIES = {'"': re.compile(r'(?:[^"\\\n]|\\.)*'), "'": re.compile(r"(?:[^'\\\n]|\\.)*"),
           "`": re.compile(r"[^`]*")}  # fmt: skip
_ESCAPED_BODY = re.compile(r'(?:[^\\\n]|\\[^"\n])*')


def actions(value: str) -> list[tuple[int, int, str]]:
    """The template actions `{{ … }}` that open and close on one line of `value`: (start, end,
    the words inside without the trim markers). One pass: a `{{` whose line has no `}}` after it
    is passed over with its line (a backtracking regex read to the line's end from each of them:
    a 40 KB Secret value of `{{` took 23 s to mask)."""
    out: list[tuple[int, int, str]] = []
    pos, end, newline = 0, -1, -1
    while (start := value.find("{{", pos)) >= 0:
        inner = _inner(value, start)
        # the next `}}` and the next line end, each looked for again only once passed
        if end < inner:
            end = value.find("}}", inner)
            if end < 0:
                break
        if newline < start:
            newline = value.find("\n", start)
            if newline < 0:
                newline = len(value)
        if newline < end:  # this line's actions do not close on it
            pos = newline + 1
            continue
        words = value[inner:end]
        out.append((start, end + 2, words[:-1] if words.endswith("-") else words))
        pos = end + 2
    return out


def _inner(value: str, start: int) -> int:
    """Where the words of the action opening at `start` begin: past `{{` and a trim marker."""
    return start + 3 if value.startswith("-", start + 2) else start + 2


def strings(body: str, escaped: bool = False) -> list[tuple[int, int]]:
    """The string literals of an action's words, quotes included: "…", '…' (Jinja) and `…`; or,
    `escaped`, literals written \\"…\\" (a template inside a JSON or double-quoted string). A
    literal left open ends the scan: what follows is inside it."""
    out: list[tuple[int, int]] = []
    pos = 0
    while True:
        if escaped:
            start = body.find('\\"', pos)
            if start < 0:
                return out
            stop = _ESCAPED_BODY.match(body, start + 2).end()  # type: ignore[union-attr]
            if not body.startswith('\\"', stop):
                return out
            out.append((start, stop + 2))
            pos = stop + 2
            continue
        m = _QUOTE.search(body, pos)
        if m is None:
            return out
        quote = m[0]
        stop = _BODIES[quote].match(body, m.end()).end()  # type: ignore[union-attr]
        if not body.startswith(quote, stop):
            return out
        out.append((m.start(), stop + 1))
        pos = stop + 1


def typed_literals(value: str, escaped: bool = False) -> list[tuple[int, int, bool]]:
    """The string literals in the actions of `value`: (start, end of their text, quotes
    excluded; whether it renders as typed). As typed: each literal of an action of literals and
    pass-through functions only, and a `default`'s fallback. Any other literal is judged by its
    looks, unless the action calls a function whose arguments name things (`include
    "x.fullname"`, a `dict` key), where it is left."""
    out: list[tuple[int, int, bool]] = []
    quote = 2 if escaped else 1
    for start, _, body in actions(value):
        at = _inner(value, start)
        found = strings(body, escaped)
        if not found:
            continue
        # the words with each literal's text blanked, its quotes kept; and without the literals
        pieces, outside, last = [], [], 0
        for a, b in found:
            outside.append(body[last:a])
            pieces += [body[last:a], body[a : a + quote], "\0" * (b - a - 2 * quote),
                       body[b - quote : b]]  # fmt: skip
            last = b
        bare = "".join([*pieces, body[last:]])
        plain = not _PASS_THROUGH.sub("", "".join([*outside, body[last:]]))
        fallbacks = {d.end() for d in _DEFAULT.finditer(bare)}
        names = _NAMING.search(bare) is not None
        if _DIG.search(bare):  # `dig "a" "b" "fallback" .Values`: the keys, then the fallback
            fallbacks.add(found[-1][0])
        for a, b in found:
            typed = plain or a in fallbacks
            if b - a > 2 * quote and (typed or not names):
                out.append((at + a + quote, at + b - quote, typed))
    return out


def template_end(value: str) -> int | None:
    """Where the template in `value` ends: past the last action of the run that begins at its
    first action, a run being actions with no `,` or `:` between them (`{a: {{ x }}, b: {{ y }}}`
    is two values, `{{ x }}{{ if .tls }} mode: {{ y }}` too); None when no action closes."""
    found = actions(value)
    if not found:
        return None
    end = found[0][1]
    for start, stop, _ in found[1:]:
        if any(c in value[end:start] for c in ",:\n"):
            break
        end = stop
    return end
