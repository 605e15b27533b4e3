"""Secrets stored base64-encoded, found by decoding them, never by guessing from how base64 looks."""

from __future__ import annotations

import binascii
import re

from codeask.redact.pem import gutter
from codeask.redact.tokens import Span

# Five dashes, base64-encoded, contain "LS0t" at every byte alignment, so any base64 blob that
# holds a PEM object (a .pem file, a kubeconfig's client-key-data, a service-account JSON) has it.
# A substring search finds the candidates; decoding decides, so certificates, lockfile hashes and
# other base64 are left alone.
_DASHES = re.compile("LS0t")  # a regex search for a short literal beats str.find on large texts
_B64_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")
_PURE_RUN = re.compile(r"[A-Za-z0-9+/]+={0,2}")
# What may close a line after base64 and still leave the run at its end: quotes, a comma, a
# backslash continuation or an escaped newline.
_RUN_TAIL = re.compile(r"(?:\\n)?[\"',\\ \t\r]*$")
_MAX_BLOB = 256 * 1024  # a blob this long is not a key file; decoding it is not worth the time


def b64decode_loose(run: str) -> bytes:
    """The bytes of a base64 run, tolerating missing padding and a cut-off tail."""
    data = run.rstrip("=")
    data = data[: len(data) // 4 * 4]
    try:
        return binascii.a2b_base64(data)
    except (binascii.Error, ValueError):
        return b""


def decodes_to_credentials(run: str) -> bool:
    """Whether base64 decodes to `user:password` (HTTP basic auth, Docker config auths)."""
    if len(run) < 8 or len(run) > 1024 or not _PURE_RUN.fullmatch(run):
        return False
    raw = b64decode_loose(run + "=" * (-len(run) % 4))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    user, sep, password = text.partition(":")
    return bool(sep and user and password) and text.isprintable() and " " not in user


def _holds_private_key(blob: str) -> bool:
    blob = blob[:_MAX_BLOB].replace("=", "")
    # The blob may start mid-stream (a cut read); one of four offsets realigns it.
    return any(b"PRIVATE KEY" in b64decode_loose(blob[skip:]) for skip in range(4))


def encoded_key_spans(text: str) -> list[Span]:
    """Base64-encoded private keys: on one line (`tls.key: LS0tLS1CRUdJTi…`) or wrapped over
    lines of pure base64, each confirmed by decoding to a PEM private key; one span per line."""
    spans: list[Span] = []
    found = _DASHES.search(text)
    while found is not None:
        blob = _blob(text, found.start())
        resume = found.end()
        if _holds_private_key("".join(text[s:e] for s, e in blob)):
            spans += [(s, e, "private-key") for s, e in blob]
            resume = _line_end(text, blob[-1][1])
        found = _DASHES.search(text, resume)
    return spans


def _line_start(text: str, at: int) -> int:
    return text.rfind("\n", 0, at) + 1


def _line_end(text: str, at: int) -> int:
    end = text.find("\n", at)
    return len(text) if end < 0 else end


def _content(text: str, start: int, end: int) -> tuple[int, int]:
    """Where the line text[start:end] may hold base64: after the gutter, indentation and an
    opening quote; before closing quotes, commas and continuations."""
    first = start + len(gutter(text[start:end]))
    while first < end and text[first] in "\"'":
        first += 1
    tail = _RUN_TAIL.search(text, first, end)
    return first, tail.start() if tail else end


def _run_around(text: str, pos: int, start: int, end: int) -> tuple[int, int]:
    first = pos
    while first > start and text[first - 1] in _B64_CHARS and text[first - 1] != "=":
        first -= 1
    last = pos
    while last < end and text[last] in _B64_CHARS:
        last += 1
    return first, last


def _blob(text: str, at: int) -> list[tuple[int, int]]:
    """The base64 run around `at`, extended over the lines it is wrapped onto: upwards while
    the line above ends in base64 and this one is pure, downwards alike. (start, end) per line."""
    line_start, line_end = _line_start(text, at), _line_end(text, at)
    blob = [_run_around(text, at, line_start, line_end)]
    top = line_start
    while top > 0 and _content(text, top, _line_end(text, top))[0] == blob[0][0]:
        above = _line_start(text, top - 1)
        a_start, a_end = _content(text, above, top - 1)
        if a_end <= a_start or text[a_end - 1] not in _B64_CHARS:
            break
        r_start, r_end = _run_around(text, a_end - 1, a_start, a_end)
        if r_end != a_end or r_end - r_start < 16:
            break
        blob.insert(0, (r_start, r_end))
        top = above
    bottom = line_start
    while blob[-1][1] == _content(text, bottom, _line_end(text, bottom))[1]:
        below = _line_end(text, bottom) + 1
        if below >= len(text):
            break
        b_start, b_end = _content(text, below, _line_end(text, below))
        if b_end <= b_start or not _PURE_RUN.fullmatch(text, b_start, b_end):
            break
        blob.append((b_start, b_end))
        bottom = below
    return blob
