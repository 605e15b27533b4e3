"""The one redaction gate every tool result passes before it can reach a language model."""

# Marker kinds (each replacement is REDACTED.format(kind=...)):
#   private-key        PEM private-key block, every line of it (one count per block)
#   aws-access-key     AKIA/ASIA/ABIA/ACCA/A3T* access key IDs
#   aws-secret-key     40-char secret assigned to aws_secret_access_key / SecretAccessKey
#   github-token       ghp_/gho_/ghu_/ghs_/ghr_ tokens and github_pat_ fine-grained tokens
#   gitlab-token       glpat- personal access tokens
#   slack-token        xoxb-/xoxp-/xoxa-/xoxr-/xoxs-/xoxe-/xoxo- tokens and xapp- app tokens
#   slack-webhook      https://hooks.slack.com/{services,workflows,triggers}/...
#   anthropic-key      sk-ant-...
#   openai-key         sk-..., sk-proj-..., sk-svcacct-..., sk-admin-...
#   google-api-key     AIza + 35 chars
#   stripe-key         sk_live_ / rk_live_
#   npm-token          npm_ + 36 chars
#   pypi-token         pypi-AgEIcHlwaS5vcmc...
#   jwt                three base64url segments, the first two starting eyJ
#   url-password       the password in scheme://user:password@host
#   secret-assignment  a random-looking literal assigned to a secret-named key (value only)

from __future__ import annotations

import bisect
import math
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass

REDACTED = "[REDACTED:{kind}]"

_MARKER_PREFIX = REDACTED.split("{", 1)[0]

Scanner = Callable[[str], tuple[str, dict[str, int]]]


def _marker(kind: str) -> str:
    return REDACTED.format(kind=kind)


# --- PEM private keys -------------------------------------------------------------------------

# "PRIVATE KEY" anywhere covers RSA/EC/DSA/OPENSSH/ENCRYPTED/PGP variants; certificates and
# public keys never contain it, so they are left alone.
_PEM_BEGIN = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = re.compile(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
# A whole key on one line happens in JSON (service-account files) with escaped newlines.
# The body class excludes quotes so code that merely mentions both markers is not matched.
_PEM_INLINE_BODY = re.compile(r"[A-Za-z0-9+/=\\ \t:,-]{32,}")
_PEM_INLINE = re.compile(_PEM_BEGIN.pattern + r"[A-Za-z0-9+/=\\ \t:,-]{32,}?" + _PEM_END.pattern)
# Gutters ("  42 | ", rg's "path:42:" and context "42-") are kept so numbered output stays
# readable; base64 has no '|', ':' or '-', so a gutter can never swallow key material.
_GUTTER = re.compile(r"[ \t]*(?:(?:[^\s:|]*[:-])?\d+[ \t]*[|:-][ \t]?)?[ \t]*")
_PEM_BODY = re.compile(r"[A-Za-z0-9+/=]+")
_PEM_HEADER = re.compile(r"(?:Proc-Type|DEK-Info|Comment|Version|Hash|Charset): ")
# Full-width body lines are 64-76 chars; demanding a long run keeps words like `return` out.
_PEM_MIN_BODY = 32
_PEM_LOOSE_BODY = re.compile(r"[A-Za-z0-9+/=]{16,}")
_PEM_QUOTES = re.compile(r"[\"']*")
# What may follow key material on its line and still be kept: escaped newlines, a closing
# quote with a comma or concatenation '+', and the line end. A bare '+' could be base64.
_PEM_SUFFIX = re.compile(r"(?:\\[nr])*(?:[\"'][ \t]*[,+]?)?[ \t]*\r?$")


def _gutter(line: str) -> str:
    m = _GUTTER.match(line)
    return m.group(0) if m else ""


def _body_content(line: str) -> str:
    content = line[len(_gutter(line)) :]
    # Keys pasted as string literals look like "MIIE...\n", so quotes and escapes are peeled off.
    content = content.strip(" \t\r\"',+")
    for escape in ("\\n", "\\r"):
        content = content.removesuffix(escape)
    return content.strip("\"'")


def _is_body_line(line: str, *, last: bool) -> bool:
    content = _body_content(line)
    if _PEM_HEADER.match(content):
        return True
    if not _PEM_BODY.fullmatch(content):
        return False
    # The final body line (or a PGP "=xxxx" checksum) is short; every other one is full width.
    return last or len(content) >= _PEM_MIN_BODY


def _orphan_start(lines: list[str], end_idx: int, floor: int) -> int:
    """First line of the body run just above an END whose BEGIN is not in `lines`."""
    start = end_idx
    i = end_idx - 1
    while i >= floor:
        line = lines[i]
        if not line.strip():
            # Legacy encrypted keys put one blank line between headers and body.
            above = lines[i - 1] if i - 1 >= floor else ""
            if _PEM_HEADER.match(_body_content(above)):
                i -= 1
                continue
            break
        if not _is_body_line(line, last=i == end_idx - 1):
            break
        start = i
        i -= 1
    return start


def _opens_block(lines: list[str], begin_idx: int) -> bool:
    """A BEGIN line starts a key only if key material follows; code that names the marker
    (`if line.startswith("-----BEGIN RSA PRIVATE KEY-----")`) does not."""
    nxt = begin_idx + 1
    if nxt < len(lines) and not lines[nxt].strip():
        nxt += 1  # PGP armor puts a blank line between the BEGIN line and the body
    if nxt >= len(lines):
        return True  # truncated right after BEGIN: nothing to judge by, so fail closed
    return _is_body_line(lines[nxt], last=False)


def _pem_blocks(lines: list[str]) -> list[tuple[int, int]]:
    """Inclusive (first, last) line ranges of private-key blocks, including truncated ones."""
    blocks: list[tuple[int, int]] = []
    open_at: int | None = None
    floor = 0
    for idx, line in enumerate(lines):
        if "PRIVATE KEY" not in line:
            continue
        if open_at is None:
            begin = _PEM_BEGIN.search(line)
            if begin is not None:
                if _PEM_INLINE.search(line):
                    blocks.append((idx, idx))
                    floor = idx + 1
                elif _opens_block(lines, idx):
                    open_at = idx
                elif _PEM_INLINE_BODY.match(line, begin.end()):
                    # An escaped one-line key cut off before its END: the rest of the line is key.
                    blocks.append((idx, idx))
                    floor = idx + 1
            elif (end := _PEM_END.search(line)) is not None:
                start = _orphan_start(lines, idx, floor)
                # An END with neither body lines above nor key material before it on its own
                # line is code naming the marker, not a key.
                if start < idx or _PEM_LOOSE_BODY.search(line, 0, end.start()):
                    blocks.append((start, idx))
                    floor = idx + 1
        elif _PEM_END.search(line):
            blocks.append((open_at, idx))
            open_at = None
            floor = idx + 1
    if open_at is not None:
        blocks.append((open_at, len(lines) - 1))
    return blocks


def private_key_lines(lines: list[str]) -> set[int]:
    """0-based indices of lines that are inside a PEM private-key block (BEGIN line, body lines,
    END line).

    A block with a BEGIN but no END runs to the end of the list. Used by callers that show a
    slice of a file (read_file starting mid-block, search hits on a body line): they compute spans
    over the WHOLE file and redact those lines even when the BEGIN line is outside the slice.
    """
    stripped = [line.rstrip("\r\n") for line in lines]
    return {i for first, last in _pem_blocks(stripped) for i in range(first, last + 1)}


def _redact_pem(text: str, counts: Counter[str]) -> str:
    marker = _marker("private-key")
    text, inline = _PEM_INLINE.subn(marker, text)
    if inline:
        counts["private-key"] += inline
    if "PRIVATE KEY" not in text:
        return text
    lines = text.split("\n")
    for first, last in _pem_blocks(lines):
        counts["private-key"] += 1
        for i in range(first, last + 1):
            lines[i] = _redact_pem_line(lines[i], marker, first=i == first, last=i == last)
    return "\n".join(lines)


def _redact_pem_line(line: str, marker: str, *, first: bool, last: bool) -> str:
    """The line with its key material replaced; gutter, quotes and escapes around it stay so
    numbered output and string literals keep their shape."""
    begin = _PEM_BEGIN.search(line) if first else None
    if begin is not None:
        head = line[: begin.start()]
        rest = line[begin.end() :]
    else:
        head = _gutter(line)
        quotes = _PEM_QUOTES.match(line, len(head))
        head += quotes.group(0) if quotes else ""
        rest = line[len(head) :]
    end = _PEM_END.search(rest) if last else None
    if end is not None:
        return head + marker + rest[end.end() :]
    suffix = _PEM_SUFFIX.search(rest)
    return head + marker + (suffix.group(0) if suffix else "")


# --- Vendor tokens ----------------------------------------------------------------------------

_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_B64URL = _ALNUM | frozenset("_-")

Span = tuple[int, int, str]  # start, end, kind


def _mixed_case_and_digit(token: str) -> bool:
    # sk- also prefixes ordinary kebab-case names; real keys are random and mix every class.
    return (
        any(c.isdigit() for c in token)
        and any(c.isupper() for c in token)
        and any(c.islower() for c in token)
    )


def _has_digit(token: str) -> bool:
    # Real Slack tokens carry numeric team/user ids; "xoxb-your-bot-token" is documentation.
    return any(c.isdigit() for c in token)


@dataclass(frozen=True)
class _Rule:
    kind: str
    # Patterns start with a literal so the regex engine can skip ahead; a leading lookbehind
    # would defeat that (10x slower), so the left boundary is checked on each match instead.
    pattern: re.Pattern[str]
    not_after: frozenset[str] = _ALNUM
    accept: Callable[[str], bool] | None = None
    group: str | int = 0  # the part of the match that is secret
    lowered: bool = False  # match against the lowercased text (case-insensitive names)

    def spans(self, text: str, low: str) -> Iterator[Span]:
        for m in self.pattern.finditer(low if self.lowered else text):
            start, end = m.span(self.group)
            if m.start() > 0 and text[m.start() - 1] in self.not_after:
                continue
            if self.accept is not None and not self.accept(text[start:end]):
                continue
            yield start, end, self.kind


# Order is priority where matches overlap: anthropic before openai so sk-ant- is named
# correctly, and every vendor rule before the generic ones so a known token is named by vendor.
_TOKEN_RULES: tuple[_Rule, ...] = (
    *(
        _Rule(
            "aws-secret-key",
            re.compile(
                name + r"[\"']?[ \t]*(?:=>|:=|=|:)[ \t]*[\"']?(?P<v>[a-z0-9/+]{40})(?![a-z0-9/+=])"
            ),
            not_after=frozenset(),
            group="v",
            lowered=True,
        )
        # Two patterns, each starting with a literal, are far cheaper than one alternation.
        for name in (r"aws_?secret_?(?:access_?)?key", r"secret_?access_?key")
    ),
    _Rule(
        "aws-access-key", re.compile(r"A(?:KIA|SIA|BIA|CCA|3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])")
    ),
    _Rule(
        "github-token", re.compile(r"g(?:h[pousr]_[A-Za-z0-9]{36,}|ithub_pat_[A-Za-z0-9_]{22,})")
    ),
    _Rule("gitlab-token", re.compile(r"glpat-[A-Za-z0-9_-]{20,}")),
    _Rule(
        "slack-webhook",
        re.compile(
            r"https?://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_+-]{8,}"
        ),
    ),
    _Rule(
        "slack-token",
        re.compile(r"x(?:ox[abeoprs](?:\.xox[a-z])?|app)-[A-Za-z0-9-]{10,}"),
        accept=_has_digit,
    ),
    _Rule("anthropic-key", re.compile(r"sk-ant-[A-Za-z0-9_-]{20,}"), accept=_has_digit),
    _Rule(
        "openai-key",
        re.compile(r"sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,}"),
        accept=_mixed_case_and_digit,
    ),
    _Rule("google-api-key", re.compile(r"AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])")),
    _Rule("stripe-key", re.compile(r"sk_live_[0-9A-Za-z]{20,}")),
    _Rule("stripe-key", re.compile(r"rk_live_[0-9A-Za-z]{20,}")),
    _Rule("npm-token", re.compile(r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])")),
    _Rule("pypi-token", re.compile(r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}")),
    _Rule(
        "jwt",
        re.compile(r"eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*"),
        not_after=_B64URL,
    ),
)


# --- Passwords in URLs ---------------------------------------------------------------------------

_URL_PASSWORD = re.compile(r"://[^\s/:@'\"]*:(?P<v>[^\s/@'\"]+)@")


def _url_password_spans(text: str) -> Iterator[Span]:
    for m in _URL_PASSWORD.finditer(text):
        value = m.group("v")
        low = value.lower()
        # user:pass@ examples in docs are placeholders; real passwords are not plain words.
        if (
            len(value) < 6
            or value[0] in "$%<{"
            or low in _PLACEHOLDER_WORDS
            or any(h in low for h in _PLACEHOLDER_HINTS)
            or value.startswith(_MARKER_PREFIX)
            or (value.isalpha() and value.islower())
        ):
            continue
        yield m.start("v"), m.end("v"), "url-password"


# --- Generic secret-named assignments ----------------------------------------------------------

# Everything after the keyword; each keyword gets its own pattern so the regex engine can jump
# between literal occurrences (one alternation of keywords is ~30x slower on ordinary code).
# Matched against lowercased text; the name's start is recovered by walking back.
_ASSIGNMENT_TAIL = r"""
    [\w.-]*+                                    # rest of the name
    ["']?[ \t]*                                 # closing quote of a JSON/dict key
    (?::[ \t]*[a-z_][\w.\[\], |]*?(?==))?       # a type annotation before '='
    (?P<op>=>|:=|=(?!=)|:(?!:))[ \t]*
    (?:(?:bearer|basic|token)[ \t]+)?           # HTTP auth scheme stays visible
    (?:[rbu]{1,2}(?=["']))?                     # Python string prefix
    (?:
        (?P<q>["'`])(?P<qv>[^"'`\n]*)(?P=q)      # quoted literal
      | (?P<uv>[^\s"'`,;&)\]}>]+)                # bare value (.env, YAML, properties, CLI)
    )
"""
_SECRET_NAME_WORDS = (
    r"pass(?:w(?:or)?d|phrase)",
    r"pwd",
    r"secret",
    r"token(?!iz)",  # not tokenizer / tokenize
    r"api[_-]?key",
    r"access[_-]?key",
    r"private[_-]?key",
    r"auth(?!or(?!i[sz]))",  # authorization, not author / authority
    r"credential",
)
_ASSIGNMENTS = tuple(re.compile(w + _ASSIGNMENT_TAIL, re.VERBOSE) for w in _SECRET_NAME_WORDS)
_PASSWORDISH = re.compile(r"pass(?:w(?:or)?d|phrase)|pwd")
_NAME_CHARS = _ALNUM | frozenset("_.-")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_DOTTED_IDENT = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_UUID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")
_DATE = re.compile(r"\d{4}-\d\d-\d\d")
_TEMPLATE = re.compile(r"\{[\w.]*\}|\{\{|%\(\w+\)s")
_PLACEHOLDER_WORDS = frozenset(
    {"none", "null", "nil", "true", "false", "undefined", "password", "changeme", "redacted"}
)
_PLACEHOLDER_HINTS = (
    "changeme", "change_me", "change-me", "example", "placeholder", "your", "xxxx", "****",
    "dummy", "redacted", "replace", "insert", "fixme", "todo", "sample", "<", ">", "...",
)  # fmt: skip
_CODE_CHARS = frozenset("()[]{}")
_PLAIN = _NAME_CHARS | frozenset("/")
# No two adjacent quantifiers share characters, so a long indent cannot cause backtracking.
_LINE_LEAD = re.compile(r"[ \t]*(?:\d+[ \t]*[|:-][ \t]*)?(?:export[ \t]+)?")
_LINE_TAIL = re.compile(r"[ \t]*(?:#.*)?\r?")


# Randomness is judged on a prefix: enough to tell, and bounded work for a huge value.
_SAMPLE = 256


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


def _is_secret_literal(value: str, *, quoted: bool, bare_literal: bool, password: bool) -> bool:
    """Whether a value assigned to a secret-named key looks like a real secret."""
    if len(value) < 8 or value.startswith(_MARKER_PREFIX):
        return False
    low = value.lower()
    if low in _PLACEHOLDER_WORDS or any(h in low for h in _PLACEHOLDER_HINTS):
        return False
    if value[0] in "$%" or "${" in value or _TEMPLATE.search(value) or "://" in value:
        return False  # references and templates, not values; URL passwords have their own rule
    if value.startswith(("/", "./", "../", "~/")) or any(c.isspace() for c in value):
        return False  # paths and prose
    if _DOTTED_IDENT.fullmatch(value):
        return False  # settings.token, django.contrib.auth.backends.ModelBackend
    if _UUID.fullmatch(value) or _DATE.match(value):
        return False  # request ids, idempotency tokens, "LastAuthenticated" timestamps
    if (not quoted or not password) and not _CODE_CHARS.isdisjoint(value):
        # Bare: os.environ["X"], get_secret(...). Quoted: "Jobs[-1].JobId"; keys and tokens
        # are base64/hex and never hold brackets, only human-chosen passwords might.
        return False
    if not quoted:
        if not bare_literal and _IDENT.fullmatch(value):
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
    if password and not _PLAIN.issuperset(value):
        return True
    return _class_switches(sample) >= (2 if password else 3)


def _bare_literal_context(text: str, name_start: int, m: re.Match[str]) -> bool:
    """Whether an unquoted value is a literal by its syntax: `.env`/properties/YAML lines and
    `--flag=value`, as opposed to code where a bare word is an expression."""
    lead = text[text.rfind("\n", 0, name_start) + 1 : name_start]
    if lead.endswith("--"):
        return True
    line_end = text.find("\n", m.end())
    if _LINE_TAIL.fullmatch(text, m.end(), len(text) if line_end < 0 else line_end) is None:
        return False
    if _LINE_LEAD.fullmatch(lead) is None:
        return False
    if m.group("op") == ":":
        return True  # YAML
    # `NAME=value` with no spaces is shell/.env/properties; `name = value` is code.
    op_start, value_start = m.start("op"), m.start("uv")
    return m.group("op") == "=" and text[op_start - 1] not in " \t" and value_start == op_start + 1


def _assignment_spans(text: str, low: str) -> Iterator[Span]:
    seen: set[int] = set()
    for pattern in _ASSIGNMENTS:
        for m in pattern.finditer(low):
            quoted = m.group("q") is not None
            group = "qv" if quoted else "uv"
            start, end = m.span(group)
            if not quoted and m.group("op") == ":" and start == m.end("op"):
                continue  # `secretsmanager:GetSecretValue`, ARNs: a colon with no space is not YAML
            if start in seen:
                continue  # auth_token is found by both "auth" and "token"
            seen.add(start)
            name_start = m.start()
            while name_start > 0 and text[name_start - 1] in _NAME_CHARS:
                name_start -= 1
            while text[name_start] == "-":
                name_start += 1  # a CLI flag's dashes are not part of the name
            bare_literal = not quoted and _bare_literal_context(text, name_start, m)
            password = _PASSWORDISH.search(low, name_start, m.start("op")) is not None
            value = text[start:end]
            if _is_secret_literal(
                value, quoted=quoted, bare_literal=bare_literal, password=password
            ):
                yield start, end, "secret-assignment"


def _lowercase(text: str) -> str:
    """Lowercased text with positions matching the original, so spans found in one apply to
    the other."""
    low = text.lower()
    if len(low) == len(text):
        return low
    # A few non-ASCII letters lowercase to two code points; lowering only ASCII keeps positions.
    return "".join(c.lower() if c.isascii() else c for c in text)


def scan(text: str) -> tuple[str, dict[str, int]]:
    """Pure scanner: returns text with every secret replaced by a marker naming its kind, and
    counts per kind."""
    counts: Counter[str] = Counter()
    if "PRIVATE KEY" in text:
        text = _redact_pem(text, counts)
    low = _lowercase(text)
    found: list[Span] = []
    for rule in _TOKEN_RULES:
        found.extend(rule.spans(text, low))
    found.extend(_url_password_spans(text))
    found.extend(_assignment_spans(text, low))
    if not found:
        return text, dict(counts)
    # Earlier rules win overlaps; what is kept is disjoint and sorted, so one pass rebuilds.
    kept: list[Span] = []
    for span in found:
        at = bisect.bisect_left(kept, span)
        if (at == 0 or kept[at - 1][1] <= span[0]) and (at == len(kept) or span[1] <= kept[at][0]):
            kept.insert(at, span)
    pieces: list[str] = []
    last = 0
    for start, end, kind in kept:
        pieces += (text[last:start], _marker(kind))
        last = end
        counts[kind] += 1
    pieces.append(text[last:])
    return "".join(pieces), dict(counts)


# --- The gate ----------------------------------------------------------------------------------


@dataclass
class Redaction:
    text: str  # safe text to hand to the model
    counts: dict[str, int]  # redactions by kind in this result
    withheld: bool = False  # True when the scanner failed/timed out and the result was withheld


class _ScannerAborted(Exception):
    """A scanner raised a BaseException; carried as an ordinary one so apply() can catch it
    without also swallowing a KeyboardInterrupt aimed at the calling thread."""

    def __init__(self, exc: BaseException) -> None:
        super().__init__(type(exc).__name__)
        self.type_name = type(exc).__name__


def _run(scanner: Scanner, text: str, future: Future[tuple[str, dict[str, int]]]) -> None:
    if not future.set_running_or_notify_cancel():
        return
    try:
        future.set_result(scanner(text))
    except Exception as exc:  # noqa: BLE001 - handed to the caller, which withholds the text
        future.set_exception(exc)
    except BaseException as exc:  # noqa: BLE001 - the future is settled however the scan ended
        future.set_exception(_ScannerAborted(exc))


class RedactionGate:
    """The one gate. Fails closed: any exception or timeout in scanning => result withheld."""

    def __init__(self, timeout_s: float = 2.0, scanner: Scanner = scan) -> None:
        self.timeout_s = timeout_s
        self.scanner = scanner
        self.totals: Counter[str] = Counter()
        self.withheld = 0
        # Tool calls may run concurrently; the counters are the only shared state.
        self._lock = threading.Lock()

    def apply(self, text: str) -> Redaction:
        try:
            safe, counts = self._scan(text)
        except FutureTimeout:
            return self._withhold(f"the secret scanner timed out after {self.timeout_s:g}s")
        except _ScannerAborted as exc:
            return self._withhold(f"the secret scanner failed ({exc.type_name})")
        except Exception as exc:  # noqa: BLE001 - a scanner that fails withholds, never leaks
            return self._withhold(f"the secret scanner failed ({type(exc).__name__})")
        with self._lock:
            self.totals.update(counts)
        return Redaction(safe, counts)

    def _scan(self, text: str) -> tuple[str, dict[str, int]]:
        future: Future[tuple[str, dict[str, int]]] = Future()
        # A fresh daemon thread per call: a scanner stuck in a runaway regex is abandoned without
        # blocking later calls or interpreter exit, which a shared pool worker would do.
        worker = threading.Thread(
            target=_run, args=(self.scanner, text, future), name="codeask-redact", daemon=True
        )
        started = time.monotonic()
        worker.start()
        safe, counts = future.result(timeout=self.timeout_s)
        # A scanner stuck in C code (a regex) holds the GIL, so the wait above can only notice
        # the overrun afterwards; the deadline is enforced here so slow always means withheld.
        if time.monotonic() - started > self.timeout_s:
            raise FutureTimeout
        # A scanner returning anything but (str, {str: int}) is treated as failed, never trusted.
        if not isinstance(safe, str) or not isinstance(counts, dict):
            raise TypeError("scanner returned a malformed result")
        return safe, {str(k): int(v) for k, v in counts.items()}

    def _withhold(self, reason: str) -> Redaction:
        with self._lock:
            self.withheld += 1
        return Redaction(f"[result withheld: {reason}; try a narrower request]", {}, withheld=True)
