"""Secrets by what holds them: literals assigned to secret-named keys, URL passwords, basic auth."""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from codeask.redact.confusables import fold
from codeask.redact.encoded import decodes_to_credentials
from codeask.redact.kinds import MARKER_PREFIX
from codeask.redact.templates import template_end, typed_literals
from codeask.redact.tokens import ALNUM, Span

# --- Judging names ------------------------------------------------------------------------------

_NAME_CHARS = ALNUM | frozenset("_.-")
CAMEL_PARTS = re.compile(  # a name's words and numbers: `userPwd`, `HTTPServer2`
    r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+"
)
# The words that name a password, alone or in a longer name (db_passwd, userPwd). Every rule that
# reads a password's key by its name reads these: judge_name, the netrc entry's keyword, and the
# search's whole-file signs (search/unmasked.py).
PASSWORD_WORDS = ("password", "passwd", "passphrase", "pwd")
# Words that end in "pass" without being one; "dbpass" and "rootpass" are.
_NOT_PASS = frozenset({"bypass", "compass", "encompass", "surpass", "overpass", "underpass",
                       "trespass", "impass", "impasse", "sidepass", "multipass"})  # fmt: skip
# Names a "key" must follow to be a secret: sort_key, primary_key and key_id are not.
_KEY_QUALIFIERS = (
    "api", "access", "private", "priv", "secret", "app", "application", "client", "master",
    "signing", "sign", "encryption", "encrypt", "crypt", "cipher", "aes", "hmac", "account",
    "service", "shared", "license", "licence", "subscription", "storage", "consumer", "session",
    "cookie", "db", "database", "auth", "webhook", "jwt", "ssh", "deploy", "admin", "root",
)  # fmt: skip
# A name ending in one of these is about a secret, not one: password_min_length, token_url.
_META = frozenset({
    "id", "ids", "name", "names", "type", "types", "file", "files", "path", "paths", "dir", "url",
    "urls", "uri", "endpoint", "header", "headers", "param", "params", "field", "fields", "length",
    "len", "size", "min", "max", "count", "prompt", "label", "policy", "policies", "regex",
    "pattern", "format", "mode", "method", "methods", "env", "var", "variable", "ref", "arn",
    "version", "expiry", "expires", "expiration", "ttl", "timeout", "lifetime", "enabled",
    "required", "provider", "location", "hint", "help", "title", "placeholder", "description",
    "rotation", "strength", "encoder", "hasher", "validator", "reset", "changed", "updated",
    "created", "source", "sources", "store", "manager", "class", "scope", "scopes", "kind",
})  # fmt: skip


@dataclass(frozen=True)
class NameVerdict:
    password: bool  # named for a password (human-chosen, so judged less strictly)
    whole: bool  # the name ends in the password word: db_password, not password_policy


def _segments(name: str) -> list[str]:
    return [s.lower() for part in re.split(r"[_.\-\s]+", name) for s in CAMEL_PARTS.findall(part)]


def _is_pass_segment(seg: str) -> bool:
    if any(w in seg for w in PASSWORD_WORDS):
        return True
    return seg.endswith("pass") and seg not in _NOT_PASS


def _is_key_segment(segs: list[str], i: int) -> bool:
    seg = segs[i]
    if seg in ("key", "keys"):
        return i > 0 and segs[i - 1] in _KEY_QUALIFIERS
    stem = seg.removesuffix("keys").removesuffix("key")
    return stem != seg and stem.endswith(_KEY_QUALIFIERS)


def _is_secret_segment(segs: list[str], i: int) -> bool:
    seg = segs[i]
    if _is_pass_segment(seg) or "secret" in seg or "credential" in seg:
        return True
    if "token" in seg and "tokeniz" not in seg and "tokenis" not in seg:
        return True
    if seg.endswith("creds"):
        return True
    if "auth" in seg and ("author" not in seg or "authoriz" in seg or "authoris" in seg):
        return True
    return "key" in seg and _is_key_segment(segs, i)


@functools.lru_cache(maxsize=8192)
def judge_name(name: str) -> NameVerdict | None:
    """Whether a key's name says it holds a secret, and whether a password."""
    segs = _segments(fold(name))
    if not segs:
        return None
    last = segs[-1].rstrip("0123456789") or segs[-1]
    if last in _META and not (last == "id" and len(segs) > 1 and segs[-2] == "secret"):
        return None  # secret_id (Vault AppRole) is a secret; client_id, key_id are not
    if not any(_is_secret_segment(segs, i) for i in range(len(segs))):
        return None
    password = any(_is_pass_segment(s) for s in segs)
    return NameVerdict(password, password and _is_pass_segment(last))


# --- Judging values ------------------------------------------------------------------------------

_IDENT = re.compile(r"[A-Za-z_]\w*")
_DOTTED_IDENT = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_UUID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")
_DATE = re.compile(r"\d{4}-\d\d-\d\d")
_TEMPLATE = re.compile(r"\{[\w.]*\}|\{\{|\{%|%\(\w+\)s|<%|#\{")
PLACEHOLDER_WORDS = frozenset(
    {"none", "null", "nil", "true", "false", "undefined", "password", "changeme", "redacted"}
)
PLACEHOLDER_HINTS = (
    "changeme", "change_me", "change-me", "example", "placeholder", "your", "xxxx", "****",
    "dummy", "redacted", "replace", "insert", "fixme", "todo", "sample", "<", ">", "...",
)  # fmt: skip
# Values a password-named config key takes without being a password.
_NOT_A_PASSWORD = PLACEHOLDER_WORDS | frozenset({
    "yes", "no", "on", "off", "required", "optional", "string", "str", "boolean", "bool",
    "integer", "int", "number", "hidden", "masked", "empty", "unset", "default", "enabled",
    "disabled", "secret", "passwd", "pass", "env", "environment", "vault", "prompt", "random",
    "generated", "auto", "ask", "test", "plain", "plaintext", "sensitive",
})  # fmt: skip
_CODE_CHARS = frozenset("()[]{}")
_PLAIN = _NAME_CHARS | frozenset("/")
# Randomness is judged on a prefix: enough to tell, and bounded work for a huge value.
_SAMPLE = 256
# Keys of these vendors are UUIDs, which are otherwise left alone as request ids.
# UUIDs are keys where the name says so: Heroku, Snyk, npm's legacy `_authToken`, UUID API keys.
_UUID_KEYED = (
    "heroku",
    "snyk",
    "authtoken",
    "auth_token",
    "auth-token",
    "apikey",
    "api_key",
    "api-key",
)


def _entropy(value: str) -> float:
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def _entropy_threshold(n: int) -> float:
    # A string cannot exceed log2(len) bits per char, so short values get a proportional bar.
    return min(3.0, math.log2(n) * 0.8)


def _class_switches(value: str) -> int:
    """How often adjacent letters/digits change class (lower/upper/digit); words rarely do."""
    switches = 0
    prev = ""
    for ch in value:
        cls = "d" if ch.isdigit() else "u" if ch.isupper() else "l" if ch.islower() else ""
        if not cls:
            continue
        if prev and cls != prev:
            switches += 1
        prev = cls
    return switches


def is_literal_value(value: str) -> bool:
    """Not a placeholder, a reference, a template, a path or a URL: a value someone typed."""
    if not value or value.startswith(MARKER_PREFIX):
        return False
    low = value.lower()
    if low in PLACEHOLDER_WORDS or any(h in low for h in PLACEHOLDER_HINTS):
        return False
    if value[0] in "$%!&*@" or "${" in value or _TEMPLATE.search(value) or "://" in value:
        return False  # references, YAML tags and anchors, templates; URLs have their own rule
    return not value.startswith(("/", "./", "../", "~/"))


@functools.lru_cache(maxsize=8192)  # pure, and the same shapes repeat through a file
def is_secret_value(
    value: str, *, quoted: bool, literal: bool, name: NameVerdict, config: bool, vendor: str = ""
) -> bool:
    """Whether a value assigned to a secret-named key looks like a real secret.

    `literal`: the syntax says an unquoted value is data (.env, YAML, a --flag), not code.
    `config`: the file is in a config or build language, where every value is data.
    """
    if not is_literal_value(value):
        return False
    if config and name.whole:
        # A password-named key in a config file: whatever was typed there is a password, however
        # human; only markers of "no password here" are spared.
        return len(value) >= 4 and value.lower().strip(" \t") not in _NOT_A_PASSWORD
    if len(value) < 8 or any(c.isspace() for c in value):
        return False  # short values and prose
    if _DOTTED_IDENT.fullmatch(value):
        return False  # settings.token, django.contrib.auth.backends.ModelBackend
    if _UUID.fullmatch(value):
        return any(v in vendor for v in _UUID_KEYED)  # request ids, idempotency tokens
    if _DATE.match(value):
        return False  # "LastAuthenticated" timestamps
    if (not quoted or not name.password) and not _CODE_CHARS.isdisjoint(value):
        # Bare: os.environ["X"], get_secret(...). Quoted: "Jobs[-1].JobId"; keys and tokens
        # are base64/hex and never hold brackets, only human-chosen passwords might.
        return False
    if not quoted and not literal and _IDENT.fullmatch(value):
        return False  # in code a bare identifier is a variable, whatever it looks like
    sample = value[:_SAMPLE]
    if _entropy(sample) < _entropy_threshold(len(sample)):
        return False
    # Random secrets carry digits or base64/punctuation symbols; labels and option names
    # ("X-Auth-Token", "AccessTokenType") do not.
    if not any(c.isdigit() for c in value) and _PLAIN.issuperset(value):
        return False
    # Class switches separate keys from names with a digit in them ("gpt2-medium",
    # "base64url"). Human-chosen passwords are not random but are still secret, so a
    # password-named value needs less: a symbol or two switches ("hunter22x", not "password_0").
    if name.password and not _PLAIN.issuperset(value):
        return True
    return _class_switches(sample) >= (2 if name.password else 3)


# --- Assignments --------------------------------------------------------------------------------

# Everything after a keyword inside a name; each keyword gets its own pattern so the regex
# engine can jump between literal occurrences (one alternation of keywords is ~30x slower on
# ordinary code). Matched against lowercased text; the name's start is recovered by walking back
# and the name judged as a whole by judge_name().
_TAIL = r"""
    (?P<rest>[\w.-]*+)                          # rest of the name
    ["']?[ \t]*                                 # closing quote of a JSON/dict key
    (?::[ \t]*[a-z_][\w.\[\], |]*?(?==))?       # a type annotation before '='
    (?P<op>=>|:=|\?=|=(?!=)|:(?!:)|>)[ \t]*
    (?:(?P<scheme>bearer|basic|token)[ \t]+)?   # HTTP auth scheme stays visible
    (?:[rbu]{1,2}(?=["']))?                     # Python string prefix
    (?:
        # A triple-quoted string, read to its closing or to the line's end: the first line of
        # a string that spans lines is its value's first line (three quotes, then the secret).
        "{3}(?P<tdq>(?:[^"\\\r\n]|\\.|"(?!""))*)(?:"{3}|(?=\r?\n)|\Z)
      | '{3}(?P<tsq>(?:[^'\\\r\n]|\\.|'(?!''))*)(?:'{3}|(?=\r?\n)|\Z)
      | "(?P<dq>(?:[^"\\\n]|\\.)*)"             # double-quoted, escapes allowed
      | '(?P<sq>[^'\n]*)'
      | `(?P<bq>[^`\n]*)`
      | (?P<uv>VALUE)                           # bare value
    )
"""
# Bare values: in code and mixed text, up to a delimiter; in shell, Dockerfile and HCL, up to
# whitespace; in YAML, INI, .properties, TOML and Makefiles, the rest of the line before a comment.
_CODE_VALUE = r"[^\s\"'`,;&)\]}<>]+"
_WORD_VALUE = r"[^\s\"'`]+"
# Cut at a comment by hand: a lazy match or a `[ \t]+#` search is quadratic on long blank runs.
_LINE_VALUE = r"[^\s\"'`][^\n]*"
# A lone "key" is never a secret's name (a qualifier must come first: api_key, apiKey), so the
# engine drops it before Python sees it: YAML is full of `key:` lines.
# Keywords sharing a first letter share a pattern: each pattern costs a pass over the text.
_KEYWORDS = ("p(?:ass|wd)", "secret", "token", r"key(?<=[a-z0-9_.\-]key)", "auth", "cred")


def _compile(value: str) -> tuple[re.Pattern[str], ...]:
    tail = _TAIL.replace("VALUE", value)
    return tuple(re.compile(k + tail, re.VERBOSE) for k in _KEYWORDS)


_CODE_ASSIGNMENTS = _compile(_CODE_VALUE)
_WORD_ASSIGNMENTS = _compile(_WORD_VALUE)
_LINE_ASSIGNMENTS = _compile(_LINE_VALUE)
LINE_SYNTAXES = frozenset({"yaml", "ini", "make"})
_QUOTED = ("tdq", "tsq", "dq", "sq", "bq")

# No two adjacent quantifiers share characters, so a long indent cannot cause backtracking.
_LINE_LEAD = re.compile(
    r"[ \t]*(?:(?:(?:[^\s:|]*[:-])?\d+[ \t]*[|:-]|>[ \t]+\d+[ \t]{2}|\d+[ \t]{2})[ \t]*)?"
    r"(?:-[ \t]+)?"  # a YAML list item: docker-compose's `- DB_PASSWORD=...`
    r"(?:(?:export|env|arg|set|setx|readonly|local|declare[ \t]+-\w+|typeset[ \t]+-\w+)[ \t]+)?",
    re.IGNORECASE,
)


_ENV_WORD = re.compile(r"[A-Z][A-Z0-9_]*=")


class _Lines:
    """Where the line holding an offset starts and ends, and its first comment mark, each found
    once per line (matches come in offset order, so the last line asked for is remembered): a
    long line is not searched once per match."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._line = (0, -1)  # the last line's start and end
        self._marks: dict[tuple[int, str], int] = {}

    def bounds(self, at: int) -> tuple[int, int]:
        """The start and end of the line holding offset `at` (its newline, or the text's end)."""
        start, end = self._line
        if not start <= at <= end:
            start = self.text.rfind("\n", 0, at) + 1
            end = self.text.find("\n", at)
            self._line = start, end = start, len(self.text) if end < 0 else end
        return start, end

    def first(self, at: int, mark: str) -> int:
        """Where `mark` is first on the line holding `at`, or -1."""
        start, end = self.bounds(at)
        key = (start, mark)
        if key not in self._marks:
            self._marks[key] = self.text.find(mark, start, end)
        return self._marks[key]


def _blank_or_comment(text: str, pos: int, end: int) -> bool:
    """Whether text[pos:end] is blanks, then a `#`/`;` comment or a line continuation, then an
    optional carriage return (`[ \t]*(?:[#;].*|\\)?\r?`, decided by its head, not read to its end)."""
    while pos < end and text[pos] in " \t":
        pos += 1
    if pos < end and text[pos] in "#;":
        return True
    if pos < end and text[pos] == "\\":
        pos += 1
    if pos < end and text[pos] == "\r":
        pos += 1
    return pos == end


def _bare_literal_context(text: str, name_start: int, m: re.Match[str], lines: _Lines) -> bool:
    """Whether an unquoted value is a literal by its syntax: `.env`/properties/YAML lines,
    Dockerfile ENV/ARG, shell export, query and connection strings and `--flag=value`, as
    opposed to code where a bare word is an expression."""
    if name_start > 0 and text[name_start - 1] in "?&;":
        return True  # ?token=…&, Server=…;Password=…;
    line_start, _ = lines.bounds(name_start)
    if name_start - line_start >= 2 and text.startswith("--", name_start - 2):
        return True
    if _ENV_WORD.fullmatch(text, name_start, m.start("op") + 1) and (
        name_start == 0 or text[name_start - 1] in " \t\"'="
    ):
        # An environment variable set as a word, `PGPASSWORD=x psql`, systemd's
        # `Environment="DB_PASSWORD=x"`: code never names a variable in capitals with no spaces.
        return m.start("uv") == m.end("op")
    if not _blank_or_comment(text, m.end(), lines.bounds(m.end())[1]):
        return False
    if _LINE_LEAD.fullmatch(text, line_start, name_start) is None:
        return False
    if m.group("op") == ":":
        return True  # YAML
    # `NAME=value` with no spaces is shell/.env/properties; `name = value` is code.
    op_start, value_start = m.start("op"), m.start("uv")
    return m.group("op") == "=" and text[op_start - 1] not in " \t" and value_start == op_start + 1


# What may precede a key on its line in a config file: a list dash, `export`/`override`, or (in
# YAML flow maps) an opening brace or a comma. Anything else, a comment's `#` above all, makes
# the text prose, judged as strictly as code: "# the password: must be rotated yearly".
_CONFIG_LEAD = re.compile(r"(?:-|export|override|[^#;]*[{,])?", re.IGNORECASE)
_LEAD_STRIP = " \t\"'"


def _leads_its_line(text: str, name_start: int, syntax: str, lines: _Lines) -> bool:
    """Whether only what _CONFIG_LEAD allows precedes a key on its line (the lead, stripped of
    blanks and quotes): judged from the line's first `#` and `;`, not by reading the lead."""
    hash_at = lines.first(name_start, "#")
    if syntax not in LINE_SYNTAXES:
        # shell, Dockerfile, HCL: `A=1 PASSWORD=x cmd` is still data
        return hash_at < 0 or hash_at >= name_start
    lo, hi = lines.bounds(name_start)[0], name_start
    while lo < hi and text[lo] in _LEAD_STRIP:
        lo += 1
    while hi > lo and text[hi - 1] in _LEAD_STRIP:
        hi -= 1
    if hi - lo <= len("override") and _CONFIG_LEAD.fullmatch(text, lo, hi) is not None:
        return True  # nothing, `-`, `export`, `override`, or a short `{`/`,` lead
    if hi == lo or text[hi - 1] not in "{,":
        return False
    semi_at = lines.first(name_start, ";")
    return all(at < 0 or at >= hi - 1 for at in (hash_at, semi_at))  # `[^#;]*[{,]`


def _before_comment(text: str, start: int, end: int) -> int:
    """Where a rest-of-line value ends: before a ` #` or ` ;` comment and trailing blanks."""
    for mark in "#;":
        at = text.find(mark, start, end)
        while at > start and text[at - 1] not in " \t":
            at = text.find(mark, at + 1, end)
        if at > start:
            end = at
    return start + len(text[start:end].rstrip(" \t\r"))


def key_start(text: str, at: int) -> int:
    """Where the name running up to offset `at` begins (a CLI flag's dashes left out)."""
    while at > 0 and text[at - 1] in _NAME_CHARS:
        at -= 1
    while at < len(text) and text[at] == "-":
        at += 1  # a CLI flag's dashes are not part of the name
    return at


def assignment_spans(
    text: str, low: str, syntax: str | None = None, *, data: bool = False
) -> Iterator[Span]:
    """Values assigned to secret-named keys. `syntax` names the config language of a whole file
    (mask_file knows it from the path); None is mixed text, judged line by line. `data`: the
    text is data, not code (a multi-line string's lines, a README), so a bare value is what was
    typed (`password = Xy7pQ2mnA9kL` in a docstring), never a variable."""
    if syntax is None:
        patterns = _CODE_ASSIGNMENTS
    else:
        patterns = _LINE_ASSIGNMENTS if syntax in LINE_SYNTAXES else _WORD_ASSIGNMENTS
    seen: set[int] = set()
    lines: _Lines | None = None  # made on first need: most texts have no match that needs it
    # Shorter values are never judged secret (a typed password in config needs 4, else 8): most
    # matches in code (`token: str`, `password = any(`) end here, before any work on the name.
    shortest = 8 if syntax is None else 4
    for pattern in patterns:
        for m in pattern.finditer(low):
            group = next((g for g in _QUOTED if m.group(g) is not None), None)
            quoted = group is not None
            start, end = m.span(group or "uv")
            op = m.group("op")
            if (end - start < shortest and not low.startswith("{{", start)) or start in seen:
                continue  # too short for any secret; or auth_token, found by "auth" and "token"
            seen.add(start)
            if (
                not quoted
                and op == ":"
                and start == m.end("op")
                and syntax != "ini"
                and not m.group("scheme")
            ):
                continue  # `secretsmanager:GetSecretValue`, ARNs: a colon with no space is not YAML
            name_start = key_start(low, m.start())  # folded: `αpi_key`
            if op == ">" and (
                name_start == 0 or text[name_start - 1] != "<" or not low.startswith("</", end)
            ):
                continue  # `>` only closes an XML start tag: <password>…</password>
            verdict = judge_name(text[name_start : m.end("rest")])
            if verdict is None:
                continue
            if syntax is not None and not quoted:
                end = _bare_value_end(text, start, end, syntax)
            # a YAML node's standard tag and its anchor come before its data (`!!binary <base64>`,
            # `&pw <value>`, in either order): judge the data. A local tag is not skipped: what
            # follows `!Ref`, `!secret` or `!vault` names or encrypts the value, and is judged so.
            while syntax == "yaml" and not quoted and text.startswith(("!!", "&"), start, end):
                start = text.find(" ", start, end) + 1 or end
            end, value = _template_value(text, start, end)
            name = low[name_start : m.end("rest")]
            kind = _vendor_kind(name, value, m.group("scheme"))
            if kind is not None:
                yield start, end, kind
                continue
            if syntax == "hcl" and not quoted:
                continue  # unquoted HCL is an expression: var.db_password, random_password.x
            if lines is None:
                lines = _Lines(text)
            config = syntax is not None and _leads_its_line(text, name_start, syntax, lines)
            # An XML element's text (<password>…</password>) is data, never a variable.
            literal = (
                quoted
                or op == ">"
                or syntax is not None
                or data
                or _bare_literal_context(text, name_start, m, lines)
            )
            if "{{" in value:  # templated: only a literal typed into it can be a secret
                escaped = group == "dq" and '\\"' in value  # `"{{ \"…\" }}"` in JSON
                found = typed_secrets(value, verdict, config=config, vendor=name, escaped=escaped)
                yield from ((start + a, start + b, "secret-assignment") for a, b in found)
            elif is_secret_value(
                value, quoted=quoted, literal=literal, name=verdict, config=config, vendor=name
            ):
                yield start, end, "secret-assignment"


def typed_secrets(
    value: str, verdict: NameVerdict, *, config: bool, vendor: str = "", escaped: bool = False
) -> list[tuple[int, int]]:
    """Where in a templated `value` the string literals typed into it are secrets by the key's
    name: one rendered as typed (`{{ "hunter2" | b64enc }}`, a `default "hunter2"`) as any value
    of the file is (`config`), another (`coalesce .Values.pw "…"`) only if it looks random, as in
    code. They are masked, the template around them shown."""
    return [(a, b) for a, b, typed in typed_literals(value, escaped)
            if is_secret_value(value[a:b], quoted=True, literal=True, name=verdict,
                               config=config and typed, vendor=vendor)]  # fmt: skip


def _template_value(text: str, start: int, end: int) -> tuple[int, str]:
    """The value from `start` to `end`, unless its template goes on past where the pattern
    stopped (at a quote of the template's own, `"{{ "…" | b64enc }}"`, or a blank, `{{ … }}` in
    code): then to the template's end on its line, if it closes there."""
    value = text[start:end]
    if "{{" not in value or "}}" in value[value.find("{{") :]:
        return end, value
    line_end = text.find("\n", start)
    line_end = len(text) if line_end < 0 else line_end
    close = template_end(text[start:line_end])
    if close is None or start + close <= end:
        return end, value
    return start + close, text[start : start + close]


def _bare_value_end(text: str, start: int, end: int, syntax: str) -> int:
    """Where an unquoted config value ends: before a line language's comment, and before the
    closing `,)]};` of a YAML flow mapping or a shell command; a template's actions are read
    whole first (a `#` or `}}` inside them is theirs), and a `,` after one ends the value."""
    cut = _before_comment(text, start, end) if syntax in LINE_SYNTAXES else end
    close = template_end(text[start:end]) if "{{" in text[start:cut] else None
    if close is not None:
        rest = start + close
        end = _before_comment(text, rest, end) if syntax in LINE_SYNTAXES else end
        tail = text[rest:end]
        if tail.lstrip(" \t").startswith(",") or "{{" in tail:
            return rest  # what follows is another key's, or another value's template
        return rest + len(tail.rstrip(",)]};"))
    return start + len(text[start:cut].rstrip(",)]};"))


_AWS_SECRET_NAME = re.compile(r"(?:aws_?)?secret_?(?:access_?)?key")
_AWS_SECRET = re.compile(r"[A-Za-z0-9/+]{40}")
_AZURE_KEY = re.compile(r"[A-Za-z0-9+/]{86}==|[A-Za-z0-9+/]{43}=")


def _vendor_kind(name: str, value: str, scheme: str | None) -> str | None:
    """Secrets whose name, value shape or encoding tells whose they are; judged before (and
    instead of) the generic test, since e.g. AWS's own example keys look like placeholders."""
    if scheme == "basic" or name == "auth":
        # Authorization: Basic …, Docker config "auth": both base64 of user:password.
        return "basic-auth" if decodes_to_credentials(value) else None
    if "secret" in name and _AWS_SECRET.fullmatch(value):
        bare = name.replace("-", "_").replace(".", "_")
        if _AWS_SECRET_NAME.search(bare) and ("aws" in bare or "access" in bare):
            return "aws-secret-key"
    if name.endswith(("accountkey", "sharedaccesskey")) and _AZURE_KEY.fullmatch(value):
        return "azure-storage-key"
    return None


# A value named by a sibling on the same line: {"name": "DB_PASSWORD", "value": "…"} in JSON,
# HCL and YAML flow maps, <add key="DbPassword" value="…"/> in .NET and NuGet configs.
# Only a `value` right after a quote, comma or brace can have a name before it on its line.
_PAIR_VALUE = re.compile(
    r"""value(?:(?<=[,{"']value)|(?<=[,"'] value))["']?[ \t]*[:=][ \t]*"""
    r"""(?:"(?P<dq>(?:[^"\\\n]|\\.)*)"|'(?P<sq>[^'\n]*)'|(?P<uv>[^\s,}\]"'/>]+))"""
)
_PAIR_NAME = re.compile(
    r"""(?:name|key)["']?[ \t]*[:=][ \t]*["']?([^\s"',]+)["']?[ \t]*,?[ \t]*["']?\Z"""
)


def pair_spans(text: str, low: str, syntax: str | None = None) -> Iterator[Span]:
    for m in _PAIR_VALUE.finditer(low):
        line_start = low.rfind("\n", 0, m.start()) + 1
        named = _PAIR_NAME.search(low, line_start, m.start())
        if named is None:
            continue
        verdict = judge_name(text[named.start(1) : named.end(1)])
        group = next((g for g in ("dq", "sq") if m.group(g) is not None), "uv")
        start, end = m.span(group)
        value = text[start:end]
        if verdict is not None and is_secret_value(
            value, quoted=group != "uv", literal=True, name=verdict, config=syntax is not None
        ):
            yield start, end, "secret-assignment"


# Dockerfile's legacy `ENV NAME value` form, with no '='.
_ENV_LEGACY = re.compile(
    r"^[ \t]*ENV[ \t]+(?P<n>[A-Za-z_][\w.-]*)[ \t]+(?P<v>[^\s=][^\n]*)",
    re.MULTILINE | re.IGNORECASE,
)


# Space-separated `name value` lines of .conf-style files (redis.conf's `requirepass x`, a
# `password x` directive): exactly one name and one word on the line, a comment allowed after.
_CONF_DIRECTIVE = re.compile(
    r"^[ \t]*(?P<n>[A-Za-z_][\w.-]*)[ \t]+(?P<v>[^\s=:#;][^\s]*)[ \t]*(?:[#;][^\n]*)?\r?$",
    re.MULTILINE,
)


def env_instruction_spans(text: str, syntax: str | None) -> Iterator[Span]:
    """Values set without '=' or ':': Dockerfile's `ENV NAME value`, and a config file's
    `name value` directive. Only mask_file runs it, knowing the file's language by its name:
    every such line a tool shows comes from those masked lines."""
    if syntax == "ini":
        for m in _CONF_DIRECTIVE.finditer(text):
            verdict = judge_name(m.group("n"))
            value = m.group("v")
            if verdict is not None and is_secret_value(
                value, quoted=False, literal=True, name=verdict, config=True
            ):
                yield m.start("v"), m.end("v"), "secret-assignment"
        return
    if syntax != "dockerfile":
        return
    for m in _ENV_LEGACY.finditer(text):
        verdict = judge_name(m.group("n"))
        start, end = m.span("v")
        value = m.group("v").rstrip(" \t\r")
        end = start + len(value)
        quoted = len(value) > 1 and value[0] in "\"'" and value[-1] == value[0]
        if quoted:
            start, end, value = start + 1, end - 1, value[1:-1]
        elif " " in value or "\t" in value or value[0] in "\"'":
            continue  # several words: `ENV A b c` sets A to "b c" only in old Docker, skip prose
        if verdict is not None and is_secret_value(
            value, quoted=quoted, literal=True, name=verdict, config=True
        ):
            yield start, end, "secret-assignment"


# --- Passwords in URLs and basic auth ------------------------------------------------------------

# A URL from its "://" on; inside it, a password in the user info (up to the last '@' before
# the path, so p@ss@host keeps nothing) and an Azure shared-access signature.
_URL = re.compile(r"://[^\s'\"<>`]+")
_USERINFO = re.compile(r"://[^/:@?#]*:(?P<v>[^/?#]+)@")
_SAS = re.compile(r"[?&]sig=(?P<v>[A-Za-z0-9%+/]{30,}(?:%3D|%3d|=){0,2})")


def _is_typed_password(value: str) -> bool:
    low = value.lower()
    # user:pass@ examples in docs are placeholders; real passwords are not plain words.
    return not (
        len(value) < 6
        or value[0] in "$%<{"
        or low in PLACEHOLDER_WORDS
        or any(h in low for h in PLACEHOLDER_HINTS)
        or value.startswith(MARKER_PREFIX)
        or (value.isalpha() and value.islower() and len(value) <= 10)  # user:secret@, :postgres@
    )


def url_spans(text: str) -> Iterator[Span]:
    """Passwords in scheme://user:password@host and the sig= of Azure SAS URLs."""
    for url in _URL.finditer(text):
        at = url.start()
        if (m := _USERINFO.match(text, at, url.end())) and _is_typed_password(m.group("v")):
            yield m.start("v"), m.end("v"), "url-password"
        if "sig=" in url.group():
            for sas in _SAS.finditer(text, at, url.end()):
                yield sas.start("v"), sas.end("v"), "azure-sas-token"


_CURL = re.compile("curl")  # a regex search for a short literal beats `in` on large texts
_CURL_USER = re.compile(r"-(?:u|-user)(?:=|[ \t]+)[\"']?(?P<u>[^\s:\"'$]+):(?P<v>[^\s\"']+)")


def curl_user_spans(text: str, low: str) -> Iterator[Span]:
    """`curl -u user:password` and `--user`: HTTP basic credentials on a command line. (The
    header form, Authorization: Basic, is an assignment; see _vendor_kind.)"""
    if _CURL.search(low) is None:
        return
    for m in _CURL_USER.finditer(text):
        if m.start() > 0 and text[m.start() - 1] not in " \t\n":
            continue
        if _is_typed_password(m.group("v")):
            yield m.start("v"), m.end("v"), "basic-auth"


def anchored(
    pattern: re.Pattern[str], words: tuple[str, ...], text: str
) -> Iterator[re.Match[str]]:
    """pattern.finditer(text), for a pattern whose every match starts at one of `words` (a
    command's name, `--`): the pattern is tried only there, found by str.find, not at every
    offset, which for a pattern opening with alternatives and lookbehinds is most of a scan's
    time."""
    starts: set[int] = set()
    for word in words:
        at = text.find(word)
        while at >= 0:
            starts.add(at)
            at = text.find(word, at + 1)
    end = 0
    for at in sorted(starts):
        if at < end:
            continue
        m = pattern.match(text, at)
        if m is not None:
            yield m
            end = max(m.end(), m.start() + 1)


# A password or token given as a command-line option with a space: `--password X`, `--token X`,
# and the short forms of commands known to take one: `mysql -pX` (attached), `sshpass -p X`,
# `docker login -p X` (and podman, helm registry, oras, buildah, skopeo).
_OPTION = re.compile(
    r"(?:^|(?<=[\s\"'(\[]))(?:--(?P<long>[^\W\d_][\w.-]*)[ \t]+"
    r"|(?P<cmd>\b(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n|;&]*?[ \t])-p(?=[^\s-])"
    r"|(?P<cmd2>\b(?:sshpass|login)\b[^\n|;&]*?[ \t])-p[ \t]+)"
    r"[\"']?(?P<v>[^\s\"'`;|&)-][^\s\"'`;|&)]*)",
    re.MULTILINE,
)
# Where an _OPTION match can start: its `--`, or the command word a short option follows.
_OPTION_AT = ("--", "mysql", "mariadb", "sshpass", "login")


def option_spans(text: str, low: str) -> Iterator[Span]:
    """Secrets passed as command-line options (`--flag=value` is an assignment already)."""
    if "-p" not in low and "--" not in low:
        return
    for m in anchored(_OPTION, _OPTION_AT, text):
        long = m.group("long")
        value = m.group("v")
        if long is not None:
            # A flag may take no value (`--ask-vault-pass playbook.yml`): what follows must look
            # like a secret by itself, as in code.
            verdict = judge_name(long)
            if verdict is None or not is_secret_value(
                value, quoted=True, literal=True, name=verdict, config=False
            ):
                continue
        elif not is_literal_value(value) or value.lower() in _NOT_A_PASSWORD or len(value) < 4:
            continue
        yield m.start("v"), m.end("v"), "secret-assignment"


# .netrc entries, also written by scripts and Dockerfiles (`echo "machine h login u password p"`):
# `machine HOST` (or `default`), any login/account words, then `password VALUE`, on one line or
# several, as netrc's grammar has it. The keyword is any password's name judge_name reads
# (`passwd`, `pwd`, `db_password`) holding one of PASSWORD_WORDS, not a bare `…pass`: with no `=`
# or `:` to mark a key, "pass" between two words is English ("the machine learning pass rate").
# Without a login or account word the words read as prose as well ("the default password is"):
# then only a value that looks typed counts.
_NETRC = re.compile(
    r"\b(?:machine[ \t\r\n]+[^\s\"'`]+|default)"
    r"(?P<who>(?:[ \t\r\n]+(?:login|account)[ \t\r\n]+[^\s\"'`]+)*)"
    r"[ \t\r\n]+(?P<k>[\w.-]*(?:" + "|".join(PASSWORD_WORDS) + r")[\w.-]*)"
    r"[ \t]+(?P<v>[^\s\"'`]+)"
)
_NETRC_AT = ("machine", "default")


def netrc_spans(text: str, low: str) -> Iterator[Span]:
    if not any(word in low for word in PASSWORD_WORDS):
        return
    for m in anchored(_NETRC, _NETRC_AT, low):
        name = judge_name(text[m.start("k") : m.end("k")])
        start, end = m.span("v")
        value = text[start:end]
        if (
            name is not None
            and name.whole
            and is_literal_value(value)
            and value.lower() not in _NOT_A_PASSWORD
            and (m.group("who") or _is_typed_password(value))
        ):
            yield start, end, "secret-assignment"


# A config-setting command given a key and its value as arguments: `npm config set
# //registry.npmjs.org/:_authToken X` (or `key=X`), `yarn config set npmAuthToken X`, `git config
# --global KEY X`, `aws configure set aws_secret_access_key X`, `poetry config pypi-token.pypi X`,
# `composer config github-oauth.github.com X`, `dotnet user-secrets set KEY X`. Options before the
# key are skipped, with the argument of those that take one (`--file F`, `--profile P`).
_SETTING = re.compile(
    r"\b(?:(?:npm|pnpm|yarn|pip3?|gcloud)[ \t]+config[ \t]+set|npm[ \t]+set"
    r"|(?:git|poetry|composer|bundle|conda)[ \t]+config|aws[ \t]+configure[ \t]+set"
    r"|dotnet[ \t]+user-secrets[ \t]+set)"
    r"(?:[ \t]+(?:set\b|(?:--file|-f|--blob|--profile|--location)[ \t]+[^\s-]\S*|-[\w-]*(?:=\S*)?))*"
    r"[ \t]+[\"']?(?P<key>[^\s=\"'`;|&<>-][^\s=\"'`;|&<>]*)[\"']?(?:=|[ \t]+)"
    r"(?:\"(?P<dq>[^\"\n]*)\"|'(?P<sq>[^'\n]*)'|(?P<uv>[^\s\"'`;|&)]+))"
)
_SETTING_AT = (
    "npm",
    "pnpm",
    "yarn",
    "pip",
    "gcloud",
    "git",
    "poetry",
    "composer",
    "bundle",
    "conda",
    "aws",
    "dotnet",
)
# A setting whose value is an HTTP header (git's `http.extraheader "Authorization: Bearer X"`).
_HEADER = re.compile(
    r"(?P<n>[A-Za-z][\w-]*)[ \t]*:[ \t]*(?:(?:bearer|basic|token)[ \t]+)?(?P<v>\S+)", re.I
)


def setting_spans(text: str, low: str) -> Iterator[Span]:
    """The value a config-setting command gives a secret-named key (or a header naming one)."""
    if "config" not in low and "user-secrets" not in low and "npm" not in low:
        return
    for m in anchored(_SETTING, _SETTING_AT, low):
        group = next(g for g in ("dq", "sq", "uv") if m.group(g) is not None)
        start, end = m.span(group)
        value = text[start:end]
        verdict = judge_name(text[m.start("key") : m.end("key")])
        if verdict is None and (header := _HEADER.fullmatch(value)) is not None:
            verdict = judge_name(header.group("n"))
            start, value = start + header.start("v"), header.group("v")
        if verdict is not None and is_secret_value(
            value, quoted=True, literal=True, name=verdict, config=True
        ):
            yield start, end, "secret-assignment"


# .pgpass entries, `hostname:port:database:username:password` with `\:` and `\\` escaped: the
# password is all after the fourth unescaped colon. In a pgpass file every line is one (a comment
# starts with #); elsewhere, an entry on a line that writes one (`echo "h:5432:db:u:pw" > ~/.pgpass`).
_PGPASS_LINE = re.compile(r"^(?!#)(?:(?:[^:\\\n]|\\.)*:){4}(?P<v>[^\n]*)", re.MULTILINE)
_PGPASS_WORD = re.compile(
    r"(?<![^\s\"'=(])(?:(?:[^:\\\s\"'`]|\\.)*:){4}(?P<v>(?:[^\\\s\"'`;|&)]|\\.)+)"
)


def pgpass_spans(text: str, low: str, syntax: str | None) -> Iterator[Span]:
    if syntax == "pgpass":
        for m in _PGPASS_LINE.finditer(text):
            start = m.start("v")
            value = m.group("v").rstrip(" \t\r")
            low_value = value.lower()
            if value and not (
                value.startswith(MARKER_PREFIX)
                or low_value in PLACEHOLDER_WORDS
                or any(h in low_value for h in PLACEHOLDER_HINTS)
            ):
                yield start, start + len(value), "secret-assignment"
        return
    at = low.find("pgpass")
    while at >= 0:
        line_start = low.rfind("\n", 0, at) + 1
        line_end = low.find("\n", at)
        line_end = len(low) if line_end < 0 else line_end
        for m in _PGPASS_WORD.finditer(text, line_start, line_end):
            value = m.group("v")
            if is_literal_value(value) and value.lower() not in _NOT_A_PASSWORD:
                yield m.start("v"), m.end("v"), "secret-assignment"
        at = low.find("pgpass", line_end)
