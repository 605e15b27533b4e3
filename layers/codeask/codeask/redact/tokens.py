"""Vendor tokens known by their shape: a fixed prefix or frame, a length and an alphabet."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_B64URL = ALNUM | frozenset("_-")

Span = tuple[int, int, str]  # start, end, kind


def _mixed_case_and_digit(token: str) -> bool:
    # sk- also prefixes ordinary kebab-case names; real keys are random and mix every class.
    return (
        any(c.isdigit() for c in token)
        and any(c.isupper() for c in token)
        and any(c.islower() for c in token)
    )


def _mixed_case(token: str) -> bool:
    return any(c.isupper() for c in token) and any(c.islower() for c in token)


def _has_digit(token: str) -> bool:
    # Real Slack tokens carry numeric team/user ids; "xoxb-your-bot-token" is documentation.
    return any(c.isdigit() for c in token)


def _digit_and_letter(token: str) -> bool:
    # Hex keys mix both; a run of one class is a counter or a word.
    return any(c.isdigit() for c in token) and any(c.isalpha() for c in token)


@dataclass(frozen=True)
class Rule:
    """One token shape. `pattern` starts with a literal (which files it into a family) and has
    no top-level alternation, so that literal can be factored out."""

    kind: str
    pattern: str
    not_after: frozenset[str] = ALNUM  # what may not sit just before the token
    accept: Callable[[str], bool] | None = None
    # A frame the token has before its literal (`<14 chars>.atlasv1.`), checked and taken into
    # the span by hand so that the pattern can still start with the literal.
    before: re.Pattern[str] | None = None
    before_len: int = 0


# Shapes follow the public rule sets of gitleaks (config/gitleaks.toml) and detect-secrets'
# plugins, restricted to tokens with a prefix or frame specific enough to need no keyword. Keys
# with no such shape (Datadog, Twilio auth tokens, Mailchimp, Telegram, Discord bot tokens) and
# vendors whose prefix would cost a pass of its own for little (New Relic, Postman, Linear,
# 1Password, Google OAuth client secrets, Entra ID client secrets, Stripe webhook secrets) are
# caught as secret-named assignments. Within a family, order is priority: sk-ant- before sk-.
RULES: tuple[Rule, ...] = (
    Rule("aws-access-key", r"A(?:KIA|SIA|BIA|CCA|3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])"),
    Rule("google-api-key", r"AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])"),
    Rule("artifactory-key", r"AKCp[A-Za-z0-9]{69}(?![A-Za-z0-9])"),
    Rule("atlassian-token", r"ATATT3[A-Za-z0-9_=-]{150,}"),
    Rule("age-secret-key", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    Rule("github-token", r"g(?:h[pousr]_[A-Za-z0-9]{36,}|ithub_pat_[A-Za-z0-9_]{22,})"),
    Rule(
        "gitlab-token",
        r"gl(?:(?:pat|dt|rt|ptt|soat|ft|oas)-[A-Za-z0-9_-]{20,}|cbt-[0-9a-zA-Z]{1,5}_[\w-]{20,})",
    ),
    Rule("grafana-token", r"gl(?:sa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|c_[A-Za-z0-9+/]{32,400}={0,3})"),
    Rule("anthropic-key", r"sk-ant-[A-Za-z0-9_-]{20,}", accept=_has_digit),
    Rule(
        "openai-key",
        r"sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,}",
        accept=_mixed_case_and_digit,
    ),
    Rule("stripe-key", r"sk_(?:live|test|prod)_[0-9A-Za-z]{20,}", accept=_mixed_case_and_digit),
    Rule("square-token", r"sq0(?:atp|csp)-[0-9A-Za-z_-]{22,60}"),
    Rule("shopify-token", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}(?![a-fA-F0-9])"),
    Rule("sentry-token", r"sntry[su]_[A-Za-z0-9+/=_]{40,}"),
    Rule("twilio-key", r"SK[0-9a-fA-F]{32}(?![0-9A-Za-z])", accept=_digit_and_letter),
    Rule("sendgrid-key", r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"),
    Rule(
        "slack-token", r"x(?:ox[abeoprs](?:\.xox[a-z])?|app)-[A-Za-z0-9-]{10,}", accept=_has_digit
    ),
    Rule("sendinblue-key", r"xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}"),
    Rule(
        "slack-webhook",
        r"https?://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_+-]{8,}",
    ),
    Rule(
        "discord-webhook",
        r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]{40,}",
    ),
    Rule(
        "teams-webhook",
        r"https://[A-Za-z0-9-]+\.webhook\.office\.com/webhookb2/[A-Za-z0-9@/-]{40,}",
    ),
    Rule("vault-token", r"hv[sbr]\.[A-Za-z0-9_-]{90,300}"),
    Rule("huggingface-token", r"hf_[A-Za-z]{34}(?![A-Za-z0-9])", accept=_mixed_case),
    Rule("heroku-key", r"HRKU-AA[0-9a-zA-Z_-]{58}"),
    Rule("digitalocean-token", r"do[opr]_v1_[a-f0-9]{64}"),
    Rule("databricks-token", r"dapi[a-f0-9]{32}(?:-\d)?(?![a-f0-9])", accept=_has_digit),
    Rule("doppler-token", r"dp\.(?:pt|st|sa|ct)\.[A-Za-z0-9]{40,44}"),
    Rule("stripe-key", r"rk_(?:live|test|prod)_[0-9A-Za-z]{20,}", accept=_mixed_case_and_digit),
    Rule("rubygems-token", r"rubygems_[a-f0-9]{48}(?![a-f0-9])"),
    Rule("npm-token", r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"),
    Rule("notion-token", r"ntn_\d{11}[A-Za-z0-9]{35}"),
    Rule("pypi-token", r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}"),
    Rule("pulumi-token", r"pul-[a-f0-9]{40}(?![a-f0-9])"),
    Rule("mailgun-key", r"key-[0-9a-f]{32}(?![0-9A-Za-z])", accept=_digit_and_letter),
    Rule(
        "terraform-token",
        r"\.atlasv1\.[A-Za-z0-9_=-]{60,70}",
        before=re.compile(r"[A-Za-z0-9]{14}"),
        before_len=14,
    ),
    Rule("jwt", r"eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*", not_after=_B64URL),
)


_META = frozenset("[](){}.*+?|^$\\")


def _literal_prefix(pattern: str) -> tuple[str, str]:
    """A pattern split into the literal text it starts with and the regex after it."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch, step = pattern[i], 1
        if ch == "\\" and i + 1 < len(pattern) and pattern[i + 1] in ".-/~":
            ch, step = pattern[i + 1], 2
        elif ch in _META:
            break
        if i + step < len(pattern) and pattern[i + step] in "?*+{":
            break  # quantified: `https?` keeps its `s` in the regex
        out.append(ch)
        i += step
    return "".join(out), pattern[i:]


def _trie_regex(rules: list[tuple[int, str, str]]) -> str:
    """One regex for rules given as (index, literal prefix, rest), their prefixes merged into a
    trie so each character of text is tried against as few branches as possible; rule i's part
    after its prefix is the group r<i>. Branches keep the rules' order (priority)."""
    common = rules[0][1]
    for _, literal, _ in rules[1:]:
        while not literal.startswith(common):
            common = common[:-1]
    branches: list[tuple[int, str]] = []
    by_next: dict[str, list[tuple[int, str, str]]] = {}
    for index, literal, rest in rules:
        literal = literal[len(common) :]
        if not literal:
            branches.append((index, f"(?P<r{index}>{rest})"))
        else:
            by_next.setdefault(literal[0], []).append((index, literal, rest))
    for group in by_next.values():
        branches.append((group[0][0], _trie_regex(group)))
    branches.sort()
    body = "|".join(b for _, b in branches)
    return re.escape(common) + (body if len(branches) == 1 else f"(?:{body})")


class _Family:
    """The rules whose tokens start with one character, as one regex led by that character: the
    engine then skips between its occurrences, so a family costs about one pass over the text
    (an alternation of many first characters, or a substring test per rule, costs many)."""

    def __init__(self, rules: list[Rule]) -> None:
        self.rules = rules
        parts = [(i, *_literal_prefix(rule.pattern)) for i, rule in enumerate(rules)]
        self.pattern = re.compile(_trie_regex(parts))

    def spans(self, text: str) -> Iterator[Span]:
        pos = 0
        while (m := self.pattern.search(text, pos)) is not None:
            found = _accepted(self.rules[int(str(m.lastgroup)[1:])], text, m)
            if found is None:
                pos = m.start() + 1  # a rejected match may hide a shorter one inside it
                continue
            yield found
            pos = m.end()


def _accepted(rule: Rule, text: str, m: re.Match[str]) -> Span | None:
    start, end = m.span()
    first = start
    if rule.before is not None:
        first -= rule.before_len
        if first < 0 or not rule.before.fullmatch(text, first, m.start()):
            return None
        start = first
    if first > 0 and text[first - 1] in rule.not_after:
        return None
    if rule.accept is not None and not rule.accept(text[start:end]):
        return None
    return start, end, rule.kind


def _families(rules: tuple[Rule, ...]) -> tuple[_Family, ...]:
    by_first: dict[str, list[Rule]] = {}
    for rule in rules:
        literal = _literal_prefix(rule.pattern)[0]
        assert literal, f"{rule.kind}: a token pattern must start with a literal"
        by_first.setdefault(literal[0], []).append(rule)
    return tuple(_Family(group) for group in by_first.values())


_FAMILIES = _families(RULES)


def token_spans(text: str) -> Iterator[Span]:
    for family in _FAMILIES:
        yield from family.spans(text)
