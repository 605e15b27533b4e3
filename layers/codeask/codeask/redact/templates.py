"""Go/Helm and Jinja template actions (`{{ … }}`) in a value: where a secret typed into one is.

A templated value is worked out when the file is rendered (`{{ .Values.password | b64enc }}`),
so it names no secret; but an action whose only value is a string literal (`{{ "hunter2" |
b64enc }}`) renders that literal, which is then as typed as `password: hunter2`. Shared by the
assignment rule (any secret-named key) and the Kubernetes Secret rule (every data value)."""

from __future__ import annotations

import re

# What an action may hold besides a value: string literals and the functions that only encode,
# quote or indent what they are given.
STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"|`[^`]*`')
_PASS_THROUGH = re.compile(
    r"\b(?:print|quote|squote|b64enc|b64dec|toString|trim|upper|lower|nindent|indent|toYaml)\b|"
    r"[|()\s\d]"
)


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


# `default "x" .Values.y`, `.Values.y | default "x"`, Jinja's `y | default("x")`: x is typed.
_DEFAULT = re.compile(r"\bdefault\b[ \t]*\(?[ \t]*(?=[\"`])")


def typed_literals(value: str) -> list[tuple[int, int]]:
    """The string literals (spans of their text, quotes excluded) that actions of `value` render
    as they were typed: each of an action whose words are literals and pass-through functions
    only, and the fallback of a `default`, which renders whenever no value is given. An action
    that works its value out of anything else (`.Values.x`, `include`, a variable) has none."""
    out: list[tuple[int, int]] = []
    for start, _, body in actions(value):
        at = _inner(value, start)
        strings = list(STRING.finditer(body))
        if not strings:
            continue
        if _PASS_THROUGH.sub("", STRING.sub("", body)):
            # the word `default` outside literals (`(dict "default" "x")` is no fallback)
            bare = STRING.sub(lambda m: m[0][0] + "\0" * (len(m[0]) - 2) + m[0][-1], body)
            strings = [m for d in _DEFAULT.finditer(bare)
                       if (m := STRING.match(body, d.end())) is not None]  # fmt: skip
        out += [(at + m.start() + 1, at + m.end() - 1) for m in strings if m.end() - m.start() > 2]
    return out
