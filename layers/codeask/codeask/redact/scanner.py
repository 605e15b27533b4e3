"""The scanner: every rule run over one text, overlaps settled, each secret replaced by a marker."""

from __future__ import annotations

import bisect
from collections import Counter

from codeask.redact.assignments import (
    assignment_spans,
    curl_user_spans,
    env_instruction_spans,
    netrc_spans,
    option_spans,
    pair_spans,
    pgpass_spans,
    setting_spans,
    url_spans,
)
from codeask.redact.confusables import fold
from codeask.redact.encoded import encoded_key_spans
from codeask.redact.kinds import count_markers, marker
from codeask.redact.pem import redact_pem
from codeask.redact.tokens import Span, token_spans


def lowercase(text: str) -> str:
    """Lowercased text with positions matching the original, so spans found in one apply to
    the other."""
    # Only U+0130 (capital I with a dot) lowercases to two code points; as a plain i, positions
    # hold. Folded, `pаssword` with a Cyrillic а is found as a password's name.
    return fold(text.replace("\u0130", "i").lower())


def find_spans(text: str, syntax: str | None = None) -> list[Span]:
    """Every secret in `text`, in priority order (vendor shapes before generic rules), possibly
    overlapping. `syntax` is the config language of a whole file, None for mixed text."""
    low = lowercase(text)
    found = list(token_spans(text))
    found.extend(curl_user_spans(text, low))
    found.extend(url_spans(text))
    found.extend(assignment_spans(text, low, syntax))
    found.extend(pair_spans(text, low, syntax))
    found.extend(env_instruction_spans(text, syntax))
    found.extend(netrc_spans(text, low))
    found.extend(option_spans(text, low))
    found.extend(setting_spans(text, low))
    found.extend(pgpass_spans(text, low, syntax))
    return found


def settle(spans: list[Span]) -> list[Span]:
    """Disjoint spans, sorted; where two overlap the one listed first wins."""
    kept: list[Span] = []
    for span in spans:
        if span[0] >= span[1]:
            continue
        at = bisect.bisect_left(kept, span)
        if (at == 0 or kept[at - 1][1] <= span[0]) and (at == len(kept) or span[1] <= kept[at][0]):
            kept.insert(at, span)
    return kept


def replace(text: str, spans: list[Span]) -> str:
    """`text` with each span replaced by its marker; spans must be settled. A span that holds a
    line break is replaced line by line, so the text keeps its line count."""
    pieces: list[str] = []
    last = 0
    for start, end, kind in spans:
        lines = text.count("\n", start, end) + 1
        pieces += (text[last:start], "\n".join([marker(kind)] * lines))
        last = end
    pieces.append(text[last:])
    return "".join(pieces)


def scan(text: str) -> tuple[str, dict[str, int]]:
    """Pure scanner: returns text with every secret replaced by a marker naming its kind, and
    counts per kind (the markers it added: a key masked line by line counts once)."""
    masked = text
    if "PRIVATE KEY" in masked:
        masked = redact_pem(masked, Counter())
    spans = settle(encoded_key_spans(masked) + find_spans(masked))
    if spans:
        masked = replace(masked, spans)
    if masked is text:
        return text, {}
    return masked, dict(count_markers(masked) - count_markers(text))
