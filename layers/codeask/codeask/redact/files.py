"""Whole-file masking: the secrets a slice cannot show, judged with the whole file and its path."""

from __future__ import annotations

import bisect
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from itertools import accumulate

from codeask.redact.assignments import (
    CAMEL_PARTS,
    PLACEHOLDER_HINTS,
    NameVerdict,
    assignment_spans,
    is_secret_value,
    judge_name,
    key_start,
    netrc_spans,
    typed_secrets,
)
from codeask.redact.encoded import encoded_key_spans
from codeask.redact.kinds import MARKER_PREFIX, count_markers, marker
from codeask.redact.pem import redact_pem
from codeask.redact.scanner import find_spans, lowercase, replace, settle
from codeask.redact.strings import Ranges, data_ranges
from codeask.redact.templates import actions, template_end
from codeask.redact.tokens import Span

# --- What language a file's assignments are in --------------------------------------------------

_SYNTAX_BY_EXT = {
    ".yaml": "yaml", ".yml": "yaml",
    ".ini": "ini", ".cfg": "ini", ".conf": "ini", ".cnf": "ini", ".properties": "ini",
    ".toml": "ini", ".env": "shell",
    ".sh": "shell", ".bash": "shell", ".zsh": "shell", ".ksh": "shell",
    ".tf": "hcl", ".hcl": "hcl", ".tfvars": "hcl", ".nomad": "hcl",
    ".mk": "make", ".dockerfile": "dockerfile", ".pgpass": "pgpass",
}  # fmt: skip
_SYNTAX_BY_NAME = {
    "dockerfile": "dockerfile", "containerfile": "dockerfile",
    "makefile": "make", "gnumakefile": "make",
    ".bashrc": "shell", ".zshrc": "shell", ".profile": "shell", ".bash_profile": "shell",
    "env": "shell", "dotenv": "shell", ".flaskenv": "shell", ".envrc": "shell",
    ".editorconfig": "ini", ".gitconfig": "ini", "pip.conf": "ini",
    ".pgpass": "pgpass", "pgpass": "pgpass",
}  # fmt: skip
# Copies kept as templates are the same language: app.properties.example, compose.yml.dist.
_TEMPLATE_SUFFIXES = (".example", ".sample", ".dist", ".template", ".tmpl", ".default", ".orig")


def config_syntax(path: str) -> str | None:
    """The config or build language a file's name says it is in (yaml, ini, shell, dockerfile,
    make, hcl, pgpass), or None for code and everything else."""
    name = path.rsplit("/", 1)[-1].lower()
    for suffix in _TEMPLATE_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
            break
    if name in _SYNTAX_BY_NAME:
        return _SYNTAX_BY_NAME[name]
    if name.startswith(("dockerfile.", "containerfile.")):
        return "dockerfile"
    if name.startswith(".env.") or name.endswith(".env"):
        return "shell"
    dot = name.rfind(".")
    return _SYNTAX_BY_EXT.get(name[dot:]) if dot > 0 else None


# --- Values continued with a backslash -----------------------------------------------------------

_CONTINUATION = re.compile(r"\\\r?\n[ \t]*")


class _Joined:
    """A region of text with its backslash-newline continuations removed (and the indentation
    after them), mapped back so a span found in the joined text lands on the original lines."""

    def __init__(self, text: str, start: int, end: int) -> None:
        pieces: list[str] = []
        self.joined_at = [0]
        self.origin_at = [start]
        pos = start
        length = 0
        for m in _CONTINUATION.finditer(text, start, end):
            escapes = 0
            while m.start() - escapes - 1 >= start and text[m.start() - escapes - 1] == "\\":
                escapes += 1
            if escapes % 2:
                continue  # `\\` at the end of a line is an escaped backslash, not a continuation
            pieces.append(text[pos : m.start()])
            length += m.start() - pos
            pos = m.end()
            self.joined_at.append(length)
            self.origin_at.append(pos)
        pieces.append(text[pos:end])
        self.text = "".join(pieces)

    def original(self, spans: list[Span]) -> list[Span]:
        """The spans as pieces of the original text, split wherever a continuation was removed."""
        out: list[Span] = []
        for start, end, kind in spans:
            i = bisect.bisect_right(self.joined_at, start) - 1
            while i < len(self.joined_at) and self.joined_at[i] < end:
                seg_end = self.joined_at[i + 1] if i + 1 < len(self.joined_at) else end
                lo, hi = max(start, self.joined_at[i]), min(end, seg_end)
                if lo < hi:
                    shift = self.origin_at[i] - self.joined_at[i]
                    out.append((lo + shift, hi + shift, kind))
                i += 1
        return out


def _continued_regions(text: str) -> list[tuple[int, int]]:
    """(start, end) of each run of lines joined by trailing backslashes."""
    regions: list[tuple[int, int]] = []
    for m in _CONTINUATION.finditer(text):
        start = text.rfind("\n", 0, m.start()) + 1
        if regions and start <= regions[-1][1]:
            start = regions.pop()[0]
        end = text.find("\n", m.end())
        regions.append((start, len(text) if end < 0 else end))
    return regions


# --- Structure: YAML, HCL and INI ----------------------------------------------------------------

_KIND_SECRET = re.compile(r"[ \t]*(?:-[ \t]+)?kind[ \t]*:[ \t]*[\"']?Secret[\"']?[ \t]*(?:#.*)?\r?")
_BLOCK_SCALAR = re.compile(r"[|>][-+0-9]*")
_OWNED_KEYS = ("value", "default")
_LOOKAROUND = 12  # lines searched for the key that names a value


class _Entry:
    """One `key: value` (YAML) or `key = value` (HCL) line, parsed by hand: a regex with a
    lazy key is quadratic on long blank runs."""

    __slots__ = ("key", "key_col", "quoted", "value_end", "value_start")

    def __init__(self, key: str, key_col: int, value_start: int, value_end: int, quoted: bool):
        self.key, self.key_col, self.quoted = key, key_col, quoted
        self.value_start, self.value_end = value_start, value_end

    def value(self, line: str) -> str:
        return line[self.value_start : self.value_end]


def _entry(line: str) -> _Entry | None:
    col = len(line) - len(line.lstrip(" \t"))
    if line.startswith("- ", col) or line.startswith("-\t", col):
        col += 1
        col += len(line) - col - len(line[col:].lstrip(" \t"))
    if col >= len(line) or line[col] in "#/":
        return None
    at = col
    if line[col] in "\"'":
        at = line.find(line[col], col + 1)
        if at < 0:
            return None
    ops = [p for p in (line.find(":", at), line.find("=", at)) if p > 0]
    if not ops:
        return None
    op = min(ops)
    if op + 1 < len(line) and line[op + 1] not in " \t\r":
        return None  # a URL or an ARN, not a key
    key = line[col:op].rstrip(" \t").strip("\"'")
    if not key:
        return None
    start = op + 1
    start += len(line) - start - len(line[start:].lstrip(" \t"))
    end = len(line.rstrip(" \t\r"))
    quoted = False
    if start < end and line[start] in "\"'":
        close = line.find(line[start], start + 1)
        if close > start:
            start, end, quoted = start + 1, close, True
    if not quoted:
        hash_at = line.find(" #", start, end)
        if hash_at >= 0:
            end = start + len(line[start:hash_at].rstrip(" \t"))
    return _Entry(key, col, start, max(start, end), quoted)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t-"))


def _blank(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#") or stripped.startswith("//")


Piece = tuple[int, int, int]  # line, start column, end column

# Where the structures below can be: found by a regex over the whole (lowercased) file, so the
# lines of a large YAML file are only walked near them.
_KIND_SECRET_AT = re.compile(r"kind[ \t]*:[ \t]*[\"']?secret[\"']?[ \t]*(?:#[^\n]*)?(?:\r?\n|$)")
_NAME_THEN_VALUE = re.compile(
    r"name[\"']?[ \t]*[:=][ \t]*[\"']?(?P<n>[\w.-]*(?:pass|pwd|secret|token|key|auth|cred)[\w.-]*)"
    r"[\"']?[ \t]*,?[ \t]*\r?\n[ \t]*(?:-[ \t]+)?[\"']?value[\"']?[ \t]*[:=]"
)
_DEFAULT_KEY = re.compile(r"default[\"']?[ \t]*[:=]")


def _secret_data_value(value: str, key: str = "") -> bool:
    """Any value of a Secret's data is secret, except the markers of no value at all and a
    template that computes it (`{{ .Values.password | b64enc }}`, `{{ include "x" . }}`)."""
    low = value.lower()
    return bool(value) and not (
        "${" in value
        or _VARIABLE.fullmatch(value) is not None  # `$encoded_token` in a script's heredoc
        or value.startswith(MARKER_PREFIX)
        or low in ("null", "~")
        or any(h in low for h in PLACEHOLDER_HINTS)
        or ("{{" in value and not _template_literal(value, key))
    )


_VARIABLE = re.compile(r"\$[A-Za-z_]\w*")  # (a bcrypt hash, `$2b$12$…`, is no variable)
_TEMPLATED_KEY = re.compile(r"[\w.\-\[\]\"']+\s*[:=]\s*[\"']*")  # `password = {{ … }}` in a block
_ANY_NAME = NameVerdict(password=False, whole=False)


def _template_literal(value: str, key: str) -> bool:
    """A value with template actions that still holds a secret typed in: text outside the
    actions (`pw-{{ .Values.suffix }}`, beyond a key whose value is templated), or an action
    whose only value is a string literal (`{{ "hunter2" | b64enc }}`) that is a secret by the
    key's name or by its looks (`{{ print "bitnami" | b64enc }}` for `provider` is not). An
    action left open (going on to the next line) is read as a template."""
    pieces, at = [], 0
    for start, end, _ in actions(value):
        pieces += [value[at:start], " "]
        at = end
    outside = "".join([*pieces, value[at:]]).split("{{", 1)[0].strip(" \t\"'")
    if outside and not _TEMPLATED_KEY.fullmatch(outside) and any(c.isalnum() for c in outside):
        return True
    verdict = (judge_name(key) if key else None) or _ANY_NAME
    return any(
        _secret_data_value(value[a:b]) for a, b in typed_secrets(value, verdict, config=True)
    )


# YAML's explicit key: `? password` on one line, `: value` on the next at the same indent.
_EXPLICIT_KEY_AT = re.compile(r"^[ \t]*\?[ \t]", re.MULTILINE)
# Greedy up to a comment and stripped after: a lazy match before optional blanks is quadratic on
# a long run of them.
_EXPLICIT_KEY = re.compile(r"(?P<indent>[ \t]*)\?[ \t]+(?P<key>[^#\s][^#]*)(?:#.*)?")
_EXPLICIT_VALUE = re.compile(
    r"[ \t]*:[ \t]+(?:\"(?P<dq>(?:[^\"\\]|\\.)*)\"[ \t]*(?:#.*)?|'(?P<sq>[^']*)'[ \t]*(?:#.*)?"
    r"|(?P<uv>[^\s#][^#]*)(?:#.*)?)"
)


def _explicit_key_pieces(lines: list[str], low: str, starts: list[int]) -> list[Piece]:
    """The value of a secret-named explicit key (`? password` then `: value`), which YAML reads as
    `password: value`."""
    pieces: list[Piece] = []
    for m in _EXPLICIT_KEY_AT.finditer(low):
        i = bisect.bisect_right(starts, m.start()) - 1
        key = _EXPLICIT_KEY.fullmatch(lines[i])
        if key is None or i + 1 >= len(lines):
            continue
        value = _EXPLICIT_VALUE.fullmatch(lines[i + 1])
        verdict = judge_name(key["key"].strip(" \t\"'"))
        if value is None or verdict is None or not lines[i + 1].startswith(key["indent"] + ":"):
            continue
        group = next(g for g in ("dq", "sq", "uv") if value[g] is not None)
        start, typed = value.start(group), value[group].rstrip(" \t")
        if is_secret_value(typed, quoted=group != "uv", literal=True, name=verdict, config=True):
            pieces.append((i + 1, start, start + len(typed)))
    return pieces


def _document(lines: list[str], i: int) -> tuple[int, int]:
    """The YAML document (between `---` lines) that holds line i."""
    first = i
    while first > 0 and not lines[first - 1].startswith("---"):
        first -= 1
    last = i + 1
    while last < len(lines) and not lines[last].startswith("---"):
        last += 1
    return first, last


def _kubernetes_secret_pieces(lines: list[str], low: str, starts: list[int]) -> list[Piece]:
    """The values under data: and stringData: of every `kind: Secret` document, however many
    lines below the kind: line they sit, block scalars included."""
    pieces: list[Piece] = []
    seen: set[int] = set()
    for m in _KIND_SECRET_AT.finditer(low):
        i = bisect.bisect_right(starts, m.start()) - 1
        if not _KIND_SECRET.fullmatch(lines[i]):
            continue  # `kind: secret` in lowercase, or not a key of its own
        first, last = _document(lines, i)
        if first in seen:
            continue
        seen.add(first)
        kind_cols = {
            _indent(lines[k])
            for k in range(first, last)
            if "kind" in lines[k] and _KIND_SECRET.fullmatch(lines[k])
        }
        for k in range(first, last):
            entry = _entry(lines[k]) if "ata" in lines[k] else None
            if (
                entry is not None
                and entry.key in ("data", "stringData")
                and entry.key_col in kind_cols
            ):
                if entry.value_end == entry.value_start:
                    pieces += _mapping_values(lines, k, last, entry.key_col)
                elif lines[k].startswith("{", entry.value_start):
                    pieces += _flow_mapping(lines, k, entry.value_start, last)
    return pieces


def _flow_mapping(lines: list[str], line: int, col: int, last: int) -> list[Piece]:
    """A Secret's `data: {name: value, …}` in YAML's flow style, which Kubernetes reads as well:
    everything inside the braces, over as many lines as they span (names included: the values
    are read whole, a quoted one may hold commas and colons, and a name here says nothing a
    search needs)."""
    pieces: list[Piece] = []
    depth, quote = 0, ""
    for j in range(line, last):
        text = lines[j]
        start = col + 1 if j == line else len(text) - len(text.lstrip(" \t"))
        end = len(text.rstrip(" \t\r"))
        for i in range(col if j == line else 0, len(text)):
            c = text[i]
            if quote:
                quote = "" if c == quote else quote
            elif c in "\"'":
                quote = c
            elif c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    end = i
                    break
        if end > start:
            pieces.append((j, start, end))
        if depth == 0:
            break
    return pieces


def _mapping_values(lines: list[str], key_line: int, last: int, key_col: int) -> list[Piece]:
    """Every value of the mapping under the key on `key_line`, block scalars included."""
    pieces: list[Piece] = []
    child_col = -1
    block_col = -1
    for j in range(key_line + 1, last):
        line = lines[j]
        if _blank(line):
            continue
        col = _indent(line)
        if col <= key_col:
            break
        if block_col >= 0 and col > block_col:
            content = len(line) - len(line.lstrip(" \t"))
            if _secret_data_value(line[content:].rstrip(" \t\r")):
                pieces.append((j, content, len(line.rstrip(" \t\r"))))
            continue
        block_col = -1
        if line.lstrip(" \t-").startswith("{{"):
            continue  # a template's own line (`{{- $pw = … }}`, `{{- if … }}`) holds no value
        child_col = col if child_col < 0 else child_col
        child = _entry(line) if col == child_col else None
        if child is None:
            continue
        value = child.value(line)
        if not child.quoted and _BLOCK_SCALAR.fullmatch(value):
            block_col = col
        elif _secret_data_value(value, child.key):
            pieces.append((j, child.value_start, child.value_end))
    return pieces


def _block_name(line: str) -> str | None:
    """The name a block or mapping opens with: `variable "db_password" {`, `DbPassword:`."""
    brace = line.rfind("{")
    if brace > 0:
        close = line.rfind('"', 0, brace)
        opening = line.rfind('"', 0, close) if close > 0 else -1
        return line[opening + 1 : close] if opening >= 0 else None
    entry = _entry(line)
    return entry.key if entry is not None and entry.value_end == entry.value_start else None


def _owner(lines: list[str], i: int, col: int) -> str | None:
    """The name a value: / default: line belongs to: a sibling `name:` in the same mapping
    (Kubernetes env, ECS task definitions), else the enclosing key (CloudFormation parameters,
    Terraform variables)."""
    for step in (-1, 1):
        j = i + step
        while 0 <= j < len(lines) and abs(j - i) <= _LOOKAROUND:
            line = lines[j]
            j += step
            if _blank(line):
                continue
            entry = _entry(line)
            line_col = entry.key_col if entry else _indent(line)
            if line_col < col or (step > 0 and line_col == col and line.lstrip().startswith("-")):
                break  # left the mapping, or the next list item begins
            if entry is not None and line_col == col and entry.key.lower() == "name":
                return entry.value(line) or None
    for j in range(i - 1, max(-1, i - _LOOKAROUND - 1), -1):
        line = lines[j]
        if _blank(line):
            continue
        if _indent(line) < col:
            return _block_name(line)
    return None


def _secret_keys_at(
    pattern: re.Pattern[str], lines: list[str], text: str, starts: list[int]
) -> Iterator[tuple[re.Match[str], int, _Entry]]:
    """Each match of `pattern` on a line whose key names a secret: the match, its line, the entry."""
    for m in pattern.finditer(text):
        i = bisect.bisect_right(starts, m.start()) - 1
        entry = _entry(lines[i])
        if entry is not None and judge_name(entry.key) is not None:
            yield m, i, entry


# A secret-named key whose value continues on the more-indented lines below it: a YAML block
# scalar (`password: |`) or an INI multi-line value (`password =` then indented lines). Found
# from the rarer end of the line, then the key before it is judged.
_BLOCK_START = {
    "yaml": re.compile(r":[ \t]+[|>][-+0-9]*[ \t]*\r?$", re.MULTILINE),
    "ini": re.compile(r"[=:][ \t]*\r?$", re.MULTILINE),
}


def _block_value_pieces(lines: list[str], text: str, starts: list[int], syntax: str) -> list[Piece]:
    """The indented lines that continue a secret-named key's value."""
    pieces: list[Piece] = []
    for _, i, entry in _secret_keys_at(_BLOCK_START[syntax], lines, text, starts):
        for j in range(i + 1, len(lines)):
            line = lines[j]
            if not line.strip(" \t\r"):
                continue
            content = len(line) - len(line.lstrip(" \t"))
            if _indent(line) <= entry.key_col:
                break
            if line[content] not in "#;" and _secret_data_value(line[content:].rstrip(" \t\r")):
                pieces.append((j, content, len(line.rstrip(" \t\r"))))
    return pieces


# A secret-named key whose value is a string over several lines: TOML's '''…''' and """…""",
# HCL's heredocs (`password = <<EOT` … `EOT`, `<<-EOT` indented). Every line of the string is
# the value, up to its closing delimiter.
_MULTILINE_OPEN = {
    "ini": re.compile(r"""[=:][ \t]*(?P<d>'''|"{3})""", re.MULTILINE),
    "hcl": re.compile(r'=[ \t]*<<-?[ \t]*"?(?P<d>[A-Za-z_]\w*)"?[ \t]*\r?$', re.MULTILINE),
}


def _multiline_string_pieces(
    lines: list[str], text: str, starts: list[int], syntax: str
) -> list[Piece]:
    """The lines of a multi-line string assigned to a secret-named key."""
    pieces: list[Piece] = []
    for m, i, _ in _secret_keys_at(_MULTILINE_OPEN[syntax], lines, text, starts):
        delim = m.group("d")
        heredoc = syntax == "hcl"
        col = m.end() - starts[i]
        for j in range(i, len(lines)):
            line = lines[j].rstrip("\r")
            if heredoc and j > i and line.strip(" \t") == delim:
                break
            end = len(line) if heredoc else line.find(delim, col)
            stop = end >= 0
            end = len(line) if end < 0 else end
            content = line[col:end]
            lead = len(content) - len(content.lstrip(" \t"))
            if content.strip(" \t") and _secret_data_value(content.strip(" \t")):
                pieces.append((j, col + lead, col + len(content.rstrip(" \t"))))
            if stop and not heredoc:
                break
            col = 0
    return pieces


def _owned_value_pieces(lines: list[str], text: str, low: str, starts: list[int]) -> list[Piece]:
    """Values whose secret name sits on another line: `- name: DB_PASSWORD` / `value: …`,
    `DbPassword:` / `Default: …`, `variable "db_password" {` / `default = "…"`."""
    owned: dict[int, str | None] = {}
    for m in _NAME_THEN_VALUE.finditer(low):
        value_line = bisect.bisect_right(starts, m.end()) - 1
        owned[value_line] = text[m.start("n") : m.end("n")]
    for m in _DEFAULT_KEY.finditer(low):
        i = bisect.bisect_right(starts, m.start()) - 1
        owned.setdefault(i, None)
    pieces: list[Piece] = []
    for i, owner in sorted(owned.items()):
        line = lines[i]
        entry = _entry(line)
        if entry is None or entry.key.lower() not in _OWNED_KEYS:
            continue
        value = entry.value(line)
        if owner is None and value:
            owner = _owner(lines, i, entry.key_col)
        verdict = judge_name(owner) if owner else None
        if verdict is None:
            continue
        if "{{" in line[entry.value_start :]:  # templated: the literals typed into it
            pieces += _typed_pieces(i, line, entry.value_start, verdict)
        elif is_secret_value(value, quoted=entry.quoted, literal=True, name=verdict, config=True):
            pieces.append((i, entry.value_start, entry.value_end))
    return pieces


def _typed_pieces(i: int, line: str, start: int, verdict: NameVerdict) -> list[Piece]:
    """The literals typed into the template a value of line i starts at `start` (to the
    template's end, past any quote of its own) that are secrets by the name that owns it."""
    value = line[start:]
    close = template_end(value)
    value = value if close is None else value[:close]
    return [(i, start + a, start + b) for a, b in typed_secrets(value, verdict, config=True)]


# --- The whole file --------------------------------------------------------------------------------


def mask_file(
    lines: list[str], path: str, *, cut: bool = False
) -> tuple[list[str], dict[str, int]]:
    """A file's lines with its secrets masked, judged on the whole file so that any slice of it
    shows none: private keys (also base64-encoded, also seen from mid-block), values continued
    over lines, Kubernetes Secret data, values named on another line, in config and build
    languages (by the path) every secret-named assignment, and elsewhere the assignments on
    lines that are data (inside a multi-line string or block comment of code, and every line of
    prose and of any file in no language redact.strings scans). `cut`: the lines begin in the
    middle of the file, so whether the first is inside a string is unknown and every line is
    judged as data. Never adds or removes a line; returns the masked lines and the markers
    added, by kind. Fails closed: if masking breaks, every line is withheld."""
    try:
        return _mask(lines, path, cut)
    except Exception:  # noqa: BLE001 - a bug here must hide the file, never show it unscanned
        return [marker("unscanned")] * len(lines), ({"unscanned": 1} if lines else {})


def _mask(lines: list[str], path: str, cut: bool) -> tuple[list[str], dict[str, int]]:
    text = "\n".join(lines)
    masked = redact_pem(text, Counter()) if "PRIVATE KEY" in text else text
    syntax = config_syntax(path)
    # Listed in priority order: where spans overlap, the first names the secret.
    spans = encoded_key_spans(masked)
    owned: list[Span] = []
    if syntax in ("yaml", "hcl", "ini"):
        split = masked.split("\n") if masked is not text else lines
        low = lowercase(masked)
        starts = list(accumulate(map((1).__add__, map(len, split)), initial=0))
        pieces = []
        if syntax == "yaml":
            secrets = _kubernetes_secret_pieces(split, low, starts)
            spans += _to_spans(starts, secrets, "kubernetes-secret")
            pieces += _explicit_key_pieces(split, low, starts)
        pieces += _owned_value_pieces(split, masked, low, starts) if syntax != "ini" else []
        if syntax != "hcl":
            pieces += _block_value_pieces(split, masked, starts, syntax)
        if syntax != "yaml":
            pieces += _multiline_string_pieces(split, masked, starts, syntax)
        owned = _to_spans(starts, pieces, "secret-assignment")
    if syntax is not None:
        region = _Joined(masked, 0, len(masked))
        spans += region.original(find_spans(region.text, syntax))
        spans += _config_data_spans(masked, syntax, path)
        spans += _config_sentence_spans(masked, syntax)
    else:
        for start, end in _continued_regions(masked):
            region = _Joined(masked, start, end)
            spans += region.original(find_spans(region.text))
        low = lowercase(masked)
        spans += netrc_spans(masked, low)  # an entry over several lines
        ranges = _lazy_ranges(masked, "" if cut else path)
        spans += _data_spans(masked, low, ranges)
        spans += _sentence_spans(masked, low, "" if cut else path)
        spans += _value_below_spans(masked, low, ranges)
    spans += owned
    if spans:
        masked = replace(masked, settle(spans))
    if masked == text:
        return list(lines), {}
    out = masked.split("\n")
    if len(out) != len(lines):
        raise AssertionError("masking must keep every line")
    return out, dict(count_markers(masked) - count_markers(text))


# A line that ends with a secret's name and an assignment, its value left for the line below: a
# wrapped assignment (`api_key = (` then `"…"`, as black writes a long one), a string spanning
# lines opened after the name (three quotes, a JS template, a Go raw string), a JSON or YAML key
# with its value below. Not a list or a map opened after the name: their items are not one value,
# as on one line (`"tokens": [` then `"…",` is judged as `"tokens": ["…"]` is). Found from the
# name's keyword (on the lowercased text), possessively, so that a long name or a blank run
# costs one pass. search/unmasked.py reads the same pattern as a sign that a file does not stand
# alone.
VALUE_BELOW = re.compile(
    r"(?:pass|pwd|secret|token|key|auth|cred)[\w.-]*+[\"'\]]?[ \t]*+(?P<op>:=|=>|=|:)[ \t]*+"
    r"(?P<open>\(|[rbuf]{0,2}(?:\"\"\"|'''|`)|[|>][-+0-9]*)?[ \t]*+\r?$",
    re.MULTILINE,
)
_STRING_OPENERS = ('"""', "'''", "`")
_QUOTED_BELOW = re.compile(r"""[rbuf]{0,2}(?:"((?:[^"\\\n]|\\.)*)"|'([^'\n]*)'|`([^`\n]*)`)""")
_BARE_BELOW = re.compile(r"[^\s\"'`,;&)\]}<>]+")
_ENTRY_AFTER = re.compile(r".?[ \t]*(?::|=|=>)(?:[ \t]|$)")
_BELOW_LINES = 3  # blank lines may stand between the name and its value


def _value_below_spans(text: str, low: str, ranges: Callable[[], Ranges]) -> list[Span]:
    """Values on the line below a secret-named key (VALUE_BELOW): a quoted literal, the first
    line of a string opened after the name, or a bare word (a literal only on a data line:
    `ranges` gives them, scanned only when asked)."""
    spans: list[Span] = []
    for m in VALUE_BELOW.finditer(low):
        verdict = _below_name(text, low, m)
        line_end = text.find("\n", m.end())
        if verdict is None or line_end < 0:
            continue
        found = _value_line(text, line_end + 1, m.group("open") or "")
        if found is None:
            continue
        start, end, quoted = found
        value = text[start:end]
        if not is_secret_value(value, quoted=quoted, literal=True, name=verdict, config=False):
            continue
        # A bare word that is a secret only as a literal (an identifier's shape) must be on a
        # data line; the file's strings are scanned for that alone, seldom.
        if quoted or _secret_in_code(value, verdict) or _inside(ranges(), start):
            spans.append((start, end, "secret-assignment"))
    return spans


def _secret_in_code(value: str, verdict: NameVerdict) -> bool:
    return is_secret_value(value, quoted=False, literal=False, name=verdict, config=False)


def _below_name(text: str, low: str, m: re.Match[str]) -> NameVerdict | None:
    """The verdict on the name a VALUE_BELOW match ends with (judged as written: `passThrough`
    is two words, `passthrough` one)."""
    return judge_name(text[key_start(low, m.start()) : m.start("op")].rstrip(" \t\"']"))


def has_value_below(text: str, low: str) -> bool:
    """Whether a line of the file names a secret whose value is left for the line below: a
    search cannot judge that value's line alone."""
    return any(_below_name(text, low, m) is not None for m in VALUE_BELOW.finditer(low))


def _value_line(text: str, at: int, opener: str) -> tuple[int, int, bool] | None:
    """The value on the first non-blank line from offset `at`, as (start, end, quoted): inside
    a string opened above, the line up to the string's end; else a quoted literal or a word."""
    for _ in range(_BELOW_LINES):
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        line = text[at:end].rstrip(" \t\r")
        content = len(line) - len(line.lstrip(" \t"))
        if content < len(line):
            delim = next((d for d in _STRING_OPENERS if opener.endswith(d)), "")
            if delim or opener[:1] in ("|", ">"):
                close = line.find(delim, content) if delim else -1
                return at + content, at + (len(line) if close < 0 else close), True
            if (q := _QUOTED_BELOW.match(line, content)) is not None:
                group = next(g for g in (1, 2, 3) if q.group(g) is not None)
                return at + q.start(group), at + q.end(group), True
            b = _BARE_BELOW.match(line, content)
            if b is None or _ENTRY_AFTER.match(line, b.end() - 1) is not None:
                return None  # an entry of its own (`token: x`, `a = b`): a mapping below
            return at + b.start(), at + b.end(), False
        if end >= len(text):
            return None
        at = end + 1
    return None


def _config_data_spans(text: str, syntax: str, path: str) -> list[Span]:
    """What a config language's own rules leave to data: an HCL heredoc's lines (HCL reads an
    unquoted value as an expression, but a heredoc's body is text: `api_key = Xy7…` in a
    user_data script), and a YAML key's plain value on the line below it."""
    if syntax == "hcl":
        low = lowercase(text)
        return _data_spans(text, low, _lazy_ranges(text, path))
    if syntax == "yaml":
        low = lowercase(text)
        return _value_below_spans(text, low, lambda: [(0, len(text))])
    return []


def _lazy_ranges(text: str, path: str) -> Callable[[], Ranges]:
    """The file's data ranges (redact.strings), scanned on first need: most files need none."""
    found: list[Ranges] = []

    def ranges() -> Ranges:
        if not found:
            found.append(data_ranges(text, path))
        return found[0]

    return ranges


def _data_spans(text: str, low: str, ranges: Callable[[], Ranges]) -> list[Span]:
    """The assignments that are secrets only when read as data, on the lines that are data (the
    rest the gate finds line by line, as it always did). A value continued with a backslash
    (`api_key = \\` then the value on the next line, in a docstring or a README) is judged
    joined, as the code rule judges it. The strings are only scanned in a file with such an
    assignment: most files have none."""
    found = _only_as_data(text, low)
    for start, end in _continued_regions(text):
        region = _Joined(text, start, end)
        found += region.original(_only_as_data(region.text, lowercase(region.text)))
    if not found:
        return []
    return [span for span in found if _inside(ranges(), span[0])]


def _sentence_spans(text: str, low: str, path: str) -> list[Span]:
    """Secrets given in sentences (prose_spans) where a file has sentences: its data and its
    comments, every line comment included. The strings are only scanned when a sentence gives
    one."""
    found = prose_spans(text, low)
    if not found:
        return []
    ranges = data_ranges(text, path, comments=True)
    return [span for span in found if _inside(ranges, span[0])]


def _config_sentence_spans(text: str, syntax: str) -> list[Span]:
    """Secrets given in sentences in a config file's comments (`# the token is X`, after a value
    too: `image: app  # the token is X`), each comment read alone: most of a file is none."""
    spans: list[Span] = []
    for start, end in _comments(text, syntax):
        line = text[start:end]
        low = lowercase(line)
        if any(name in low for name in _PROSE_SIGNS):  # most comments name no secret
            spans += [(start + a, start + b, kind) for a, b, kind in prose_spans(line, low)]
    return spans


_COMMENT_MARKS = {"ini": ("#", ";", "!"), "hcl": ("#", "//")}  # the rest: `#`


def _comments(text: str, syntax: str) -> list[tuple[int, int]]:
    """The comments of a config file, in order: from a mark that opens its line (after blanks)
    or follows a blank (a comment after a value) to the line's end. Each mark is found by
    str.find and judged by its line's first mark, found once per line."""
    found: set[tuple[int, int]] = set()
    first: dict[int, int] = {}  # a line's start -> its first character but blanks
    for mark in _COMMENT_MARKS.get(syntax, ("#",)):
        at = text.find(mark)
        while at >= 0:
            start = text.rfind("\n", 0, at) + 1
            if start not in first:
                lead = start
                while lead < len(text) and text[lead] in " \t":
                    lead += 1
                first[start] = lead
            if at == first[start] or (mark != "!" and text[at - 1] in " \t"):
                end = text.find("\n", at)
                found.add((at, len(text) if end < 0 else end))
                at = text.find(mark, len(text) if end < 0 else end)
            else:
                at = text.find(mark, at + 1)
    return sorted(found)


def _only_as_data(text: str, low: str) -> list[Span]:
    """The secrets in `text` read as data but not read as code: assignments with a bare value,
    table rows (table_spans), config directives (directive_spans) and labels in words naming a
    key (label_spans)."""
    found = list(assignment_spans(text, low, data=True))
    if found:
        as_code = {span[:2] for span in assignment_spans(text, low)}
        found = [span for span in found if span[:2] not in as_code]
    return found + table_spans(text, low) + directive_spans(text, low) + label_spans(text, low)


# A config directive on a line of its own, a name and one word (`requirepass Xy7…` of a
# redis.conf, Dockerfile's `ENV API_KEY Xy7…`), as data lines quote them: judged as code judges
# a literal (a prose line of two words, `password reset`, is no secret).
_DIRECTIVE = re.compile(
    r"^[ \t]*+(?:env[ \t]++)?(?P<n>[a-z_][\w.-]*+)[ \t]++(?P<v>[^\s=:#;]\S*+)[ \t]*+\r?$",
    re.MULTILINE,
)


def directive_spans(text: str, low: str) -> list[Span]:
    """Values of secret-named directives (data lines only: in code two words are a statement)."""
    return _named_values(_DIRECTIVE, text, low)


def _named_values(pattern: re.Pattern[str], text: str, low: str) -> list[Span]:
    """The values (group `v`) of `pattern`'s matches in `low` whose name (group `n`) is a
    secret's, judged as code judges a literal."""
    spans: list[Span] = []
    for m in pattern.finditer(low):
        verdict = judge_name(text[m.start("n") : m.end("n")])
        start, end = m.span("v")
        if verdict is not None and is_secret_value(
            text[start:end], quoted=True, literal=True, name=verdict, config=False
        ):
            spans.append((start, end, "secret-assignment"))
    return spans


# A label in words naming a key, on a line of its own with its value (`API Key: Xy7…`, `Storage
# account key = Xy7…`, a list item, in bold): a name with spaces, which the assignment rules
# (names of one word) read as a lone `key`, never a secret's name.
_KEY_LABEL = re.compile(
    r"^[ \t]*+(?:[-*+][ \t]++)?[*_]{0,2}(?P<n>(?:[a-z][\w-]*+[ \t]++){1,3}keys?)[*_]{0,2}"
    r"[ \t]*+[:=][*_]{0,2}[ \t]*+`?(?P<v>[^\s`]++)`?[ \t]*+\r?$",
    re.MULTILINE,
)


def label_spans(text: str, low: str) -> list[Span]:
    """Values after a label in words naming a key (`API Key: …`) on a line of their own."""
    return _named_values(_KEY_LABEL, text, low)


# A secret given in a sentence, the way docs, READMEs and comments give one: "use the token X",
# "the password is X", "the shared secret for the webhook is X", "**Token** X", "set
# `GITHUB_TOKEN` to X". The secret's name as a word or at the end of an identifier (judge_name
# reads the whole identifier; a lone key only after its qualifier, "API key"), then every value
# among the next words of its clause: a run of base64's and base64url's letters inside a word (so
# `<code>X</code>`, `[X](url)` and “X” are read) that is random by its looks, judged as a key's
# value is, never with a password's leniency. A sentence names no field, so the value must show
# it: digits in groups and no word in its letters (`ChaCha20Poly1305`, `AutoscalingV2beta2Api`,
# `claude-3-5-sonnet-20241022` are names), and no id's prefix (`cus_…`, `sg-…`); hex and `0x…`
# (commits, digests, addresses), `AAAA…` (an OpenSSH public key's blob), data URIs and URL paths
# are left. Data lines only: in code, the words after `token` are code.
_PROSE_AT = tuple(
    re.compile(f"(?P<w>{word})" + r"(?:s|['’]s|\(s\))?(?:</[a-z]+>|[*`'\"”’»:,])*(?=[ \t—–\ufffd])")
    for word in ("pass(?:word|wd|phrase|wort|code)", "pwd", "token", "secret",
                 "cred(?:ential|s(?!s))", "apikey", "key", "contrase(?:ñ|n)a")
)  # fmt: skip
# Names that are a secret's in any identifier, which judge_name does not read (other languages)
_OWN_NAMES = frozenset({"passwort", "passcode", "contraseña", "contrasena"})
_PROSE_SIGNS = ("pass", "pwd", "token", "secret", "cred", "apikey", "key", "contrase")
_IDENT_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.-")
_IDENT_MAX = 64  # an identifier longer than this is no name
_PROSE_WORDS = 12  # words read after a name: "the password for the admin account on the … is X"
_PROSE_WORD = re.compile(r"[^\s—–\ufffd]+")
_PROSE_RUN = re.compile(r"[A-Za-z0-9+/_-]+=*")
_CLAUSE_END = ".;!?"
_ABBREVIATIONS = frozenset({"e.g.", "i.e.", "etc.", "cf.", "vs.", "a.m.", "p.m.", "approx.", "no."})
_PROSE_TRAILING = "\"'`*)]}>”’»"
_DIGIT_GROUP = re.compile(r"\d+")
_QUOTED_KEY = re.compile(r"[\"'][*`]*:")  # `"NextToken":`, `'server':`: a mapping's key
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_HEX_RUN = re.compile(r"(?:0[xX])?[0-9a-fA-F]+=*")
_ID_PREFIX = re.compile(r"[a-z]{1,6}[_-]")  # `cus_…`, `sg-…`, `gpt-4o-…`: a typed id or a name
_WORDISH = re.compile(r"[A-Z][a-z]{2,}|[a-z]{4,}")
_LETTERS = re.compile(r"[A-Za-z]+")
_WORD_BEFORE = re.compile(r"([A-Za-z]+)(?:</[a-z]+>|[*`'\"])*[ \t]+$")
_QUALIFIER_CHARS = 40  # the qualifier is the word just before: read no further back than this
_PROSE_VERDICT = NameVerdict(password=False, whole=False)


def prose_spans(text: str, low: str) -> list[Span]:
    """Secrets given in a sentence (data lines only): a secret's name, then, among the next few
    words of its clause, the values that are random by their looks alone. A name met while
    reading gives the reading its words anew, so each word is read once however dense the names."""
    starts = prose_starts(low)
    names = {at: (word, after) for at, word, after in starts}
    spans: list[Span] = []
    read = 0  # where the words read so far end
    for at, word, after in starts:
        if at < read or _QUOTED_KEY.search(low, at, after) is not None:
            continue  # read already, or a quoted key (`"NextToken": …`): the assignment rules'
        if not _is_name(text, low, at, word):
            continue
        found, read = _prose_values(text, low, after, names)
        spans += [(start, end, "secret-assignment") for start, end in found]
    return spans


def _is_name(text: str, low: str, at: int, word: str) -> bool:
    """Whether the name found at `at` is a secret's: the identifier it ends (`GITHUB_TOKEN`,
    `spring.datasource.password`) as judge_name reads it, a lone key after its qualifier."""
    start = at
    while start > 0 and low[start - 1] in _IDENT_CHARS and at - start < _IDENT_MAX:
        start -= 1
    if start > 0 and low[start - 1] in _IDENT_CHARS:
        return False  # too long for a name
    name = text[start : at + len(word)]
    if word in _OWN_NAMES:
        return True
    if word == "key" and start == at:  # a key is a secret's only after its qualifier: "API key"
        qualifier = _qualifier(text, at)
        if qualifier is None:
            return False
        name = qualifier + " " + name
    return judge_name(name) is not None


def _qualifier(text: str, at: int) -> str | None:
    """The word just before a lone `key` at `at` ("API key", "**API** key"), or None."""
    j = at
    while j > 0 and text[j - 1] in " \t":
        j -= 1
    if j == at or j == 0 or text[j - 1] == "\n":
        return None  # no word just before (`  key: x`)
    if at - j > 1 and text[j - 1] not in ">*`'\"":
        return None  # blanks between words: no qualifier, only closing markup may stand there
    k = j
    while k > 0 and text[k - 1].isascii() and text[k - 1].isalpha():
        k -= 1
    if k < j:
        return text[k:j]
    # closing markup between them: read by the pattern, no further back than _QUALIFIER_CHARS
    before = _WORD_BEFORE.search(text, max(0, at - _QUALIFIER_CHARS), at)
    return None if before is None else before.group(1)


def prose_starts(low: str) -> list[tuple[int, str, int]]:
    """Where a secret's name ends a word or an identifier in lowercased text, before a space (a
    plural, a possessive, closing markup or quotes, a colon or a comma between), in order: its
    start, the name, and where what follows it begins."""
    return sorted(
        {(m.start(), m.group("w"), m.end()) for rx in _PROSE_AT for m in rx.finditer(low)}
    )  # fmt: skip


def _prose_values(
    text: str, low: str, pos: int, names: dict[int, tuple[str, int]]
) -> tuple[list[tuple[int, int]], int]:
    """The spans of the values random by their looks among the words after `pos` on its line, up
    to the clause's end ("tokens are X and Y"), and where the words read end. Each word is one
    of the _PROSE_WORDS a name gives; a name among them (in `names`, judged or not: reading on
    only judges more words) gives them anew. A clause ends at `.`, `;`, `!` or `?` after a word,
    outside parentheses and not in an ellipsis or an abbreviation."""
    found: list[tuple[int, int]] = []
    left, depth, read = _PROSE_WORDS, 0, pos
    for w in _PROSE_WORD.finditer(text, pos):
        if left == 0 or text.find("\n", read, w.start()) >= 0:
            break  # the words ran out, or the line did
        read = w.end()
        left -= 1
        shown = w.group()
        if w.start() in names:  # another name: its words are read as well
            left = _PROSE_WORDS
        if ("=" in shown and "=" in _PROSE_RUN.sub("", shown)) or (
            ":" in shown and _QUOTED_KEY.search(shown)
        ):
            break  # an assignment, an option or a key (`= "…"`, `k=v`, `'server':`): data
        if _DIGIT_GROUP.search(shown) and "base64," not in shown:  # a value has digits
            # A URL in the word (`[X](https://…)`) is read up to its scheme: its password is the
            # URL rule's, and its path no secret.
            scheme = _SCHEME.search(text, w.start(), w.end())
            for run in _PROSE_RUN.finditer(text, w.start(), scheme.start() if scheme else w.end()):
                value = run.group().strip("_-")  # `_X_`, `-X-`: markup around it
                at = run.start() + run.group().index(value) if value else run.start()
                found += [(at + a, at + b) for a, b in _pieces(value)
                          if _random_in_prose(value[a:b])]  # fmt: skip
        depth = max(0, depth + shown.count("(") - shown.count(")"))
        stripped = shown.rstrip(_PROSE_TRAILING)
        aside = ")" in shown[len(stripped) :]  # `(don't share!)`: the mark is the aside's
        shown = stripped
        if (
            shown[-1:] in _CLAUSE_END
            and depth == 0
            and not aside
            and not shown.endswith("..")
            and shown.lower() not in _ABBREVIATIONS
        ):
            break
    return found, read


def _pieces(run: str) -> list[tuple[int, int]]:
    """A run as the values it holds: none when it starts with an id's prefix (`cus_…`); a path's
    pieces when it is one (`charts/commit/05bd…`: a piece that is a lowercase word), each judged
    alone; else itself."""
    if _ID_PREFIX.match(run):
        return []
    parts = run.split("/")
    if len(parts) == 1 or not any(len(p) >= 3 and p.isalpha() and p.islower() for p in parts):
        return [(0, len(run))]
    out, at = [], 0
    for part in parts:
        out.append((at, at + len(part)))
        at += len(part) + 1
    return out


def _random_in_prose(value: str) -> bool:
    """Whether a word of a sentence is a random value: digits in several groups (the more, the
    shorter it may be), no word in its letters, not hex nor a public key's blob, and random by
    is_secret_value's measures."""
    core = value.rstrip("=").lstrip("/+")
    groups = len(_DIGIT_GROUP.findall(core))
    size = len(core) - core.count("-") - core.count("_")
    longest = max((len(s) for s in CAMEL_PARTS.findall(core) if s.isalpha()), default=0)
    if not (
        (groups >= 3 and size >= 12)
        or (groups >= 2 and size >= 16 and longest < 6)
        or (groups >= 1 and size >= 20 and longest < 5)
    ):
        return False
    letters = sum(map(len, _LETTERS.findall(core)))
    if longest >= 8 or sum(map(len, _WORDISH.findall(core))) >= 0.7 * letters:
        return False  # words: `ChaCha20Poly1305`, `IoK8sApiAdmissionregistrationV1beta1Api`
    if _HEX_RUN.fullmatch(core) or core.startswith("AAAA"):
        return False
    return is_secret_value(core, quoted=False, literal=True, name=_PROSE_VERDICT, config=False)


# A table row of prose (Markdown, reStructuredText's grid): `| DB_PASSWORD | Xy7… |`. A cell
# that names a secret is followed by its value's cell. Only rows with a secret's word are split.
_TABLE_ROW = re.compile(r"^[ \t]*\|[^\n]*\|[ \t]*\r?$", re.MULTILINE)
_SECRET_WORD = re.compile(r"pass|pwd|secret|token|key|auth|cred")
_CELL = re.compile(r"(?:[^|\\\n]|\\.)+")


def table_spans(text: str, low: str) -> list[Span]:
    """Values in the cell after a secret-named cell of a table row (data lines only: in code a
    `|` is an operator)."""
    spans: list[Span] = []
    for row in _TABLE_ROW.finditer(low):
        if _SECRET_WORD.search(low, row.start(), row.end()) is None:
            continue
        cells = list(_CELL.finditer(text, row.start(), row.end()))
        for name, value in zip(cells, cells[1:], strict=False):
            verdict = judge_name(name.group().strip(" \t`*"))
            lead = len(value.group()) - len(value.group().lstrip(" \t`"))
            shown = value.group().strip(" \t`\r")
            if verdict is not None and is_secret_value(
                shown, quoted=True, literal=True, name=verdict, config=False
            ):
                start = value.start() + lead
                spans.append((start, start + len(shown), "secret-assignment"))
    return spans


def _inside(ranges: Ranges, at: int) -> bool:
    i = bisect.bisect_right(ranges, (at, sys.maxsize)) - 1
    return i >= 0 and ranges[i][0] <= at <= ranges[i][1]


def masks_more_as_data(line: str) -> bool:
    """Whether a line of code would show a secret if it were data: a search that judges its hit
    on the line alone must then judge it on the whole file (mask_file), which knows if it is."""
    low = lowercase(line)
    return bool(_only_as_data(line, low) or prose_spans(line, low))


def _to_spans(starts: list[int], pieces: list[Piece], kind: str) -> list[Span]:
    """Line pieces as spans of the text the lines were split from (`starts`: line offsets)."""
    return [(starts[line] + start, starts[line] + end, kind) for line, start, end in pieces]
