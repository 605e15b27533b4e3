"""Turns an answer, a progress step or a failure into Slack messages that fit Slack's limits."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from codeask import diagram
from codeask.botconfig import Refusal
from codeask.errors import public
from codeask.permalinks import commit_link
from codeask.redact import scan

if TYPE_CHECKING:
    from codeask.answer import Answer
    from codeask.verify import Verification

# Slack's limits (docs.slack.dev, Block Kit reference): a `markdown` block holds at most 12,000
# characters and, per its page, so do all markdown blocks of one payload together; a `section`
# text and any text object at most 3,000; a `context` block at most 10 elements; a message at
# most 50 blocks. In practice chat.postMessage answers msg_blocks_too_long somewhat below 12,000
# characters of text once other blocks are present (slackapi/bolt-js#2509, #2867), hence the
# budgets below keep well clear of them rather than sit on them.
MARKDOWN_BLOCK_MAX = 12_000
SECTION_TEXT_MAX = 3_000
CONTEXT_ELEMENTS_MAX = 10
MESSAGE_BLOCKS_MAX = 50
MESSAGE_MARKDOWN_MAX = 12_000

# Small blocks leave room to close and reopen a code fence and make the per-message budget
# granular; Slack splits a long markdown block into several when it renders it anyway.
BODY_BLOCK_CHARS = 3_000
MESSAGE_TEXT_BUDGET = 10_000
FALLBACK_CHARS = 150
PROGRESS_CHARS = 100
HINT_CHARS = 80
DETAIL_CHARS = 200
# Below this much room left in a block, an oversized code block starts in the next one rather
# than leaving a couple of its lines stranded at the bottom of this one.
MIN_SPLIT_ROOM = 400
LABEL_RESERVE = 40  # "(continued 12/12)" plus its markup
# The notes above an answer (may be stale, uncommitted changes left out): one repo's note is a
# line or two, but a workspace of many repos, or a long error, must not push the body out of
# the first message nor the message past its blocks.
HEAD_CHARS = 2_000
HEAD_NOTES_MAX = 5
NOTE_CHARS = 600
PROBLEMS_CHARS = 300  # why a diagram may not draw, beside its link

ZWSP = "\u200b"


@dataclass
class SlackMessage:
    """One chat.postMessage / chat.update payload (the worker adds unfurl_links/unfurl_media=False)."""

    text: str  # the notification fallback: short, plain
    blocks: list[dict[str, Any]]


# --- mentions -------------------------------------------------------------------------------

# `group` and `all` are legacy forms; made inert too in case a client still honours them.
_MASS = "channel|here|everyone|group|all"
# <!channel>, <!here|here>, <!subteam^S123|@devs>: Slack's escaped special mentions.
_SPECIAL = re.compile(
    rf"<\s*!\s*(?:(?P<kw>{_MASS})\b|subteam\^[^|>\s]*)(?:\|(?P<label>[^>]*))?>",
    re.IGNORECASE,
)
# Left-overs that could still become one once joined with other text: `<!channel` unclosed.
_SPECIAL_OPEN = re.compile(rf"<(\s*)!(\s*)(?=(?:{_MASS})\b|subteam\^)", re.IGNORECASE)
# Bare `@group`/`@all` never ping, and are too common in code (annotations) to touch.
_BARE = re.compile(r"(?<![\w@])@(?=(?:channel|here|everyone)\b)", re.IGNORECASE)


def _special(m: re.Match[str]) -> str:
    if m["kw"]:
        return f"@{ZWSP}{m['kw']}"
    label = (m["label"] or "").strip().lstrip("@")
    return f"@{ZWSP}{label or 'group'}"


def neutralise(text: str) -> str:
    """The text with every mass mention made inert; user mentions (<@U123>) are left alone."""
    text = _SPECIAL.sub(_special, text)
    text = _SPECIAL_OPEN.sub(lambda m: f"<{m[1]}!{ZWSP}{m[2]}", text)
    return _BARE.sub(f"@{ZWSP}", text)


def _mrkdwn(text: str) -> str:
    """Text we did not write, made safe for a mrkdwn text object: no mentions, no control chars."""
    text = neutralise(text)
    # Slack's mrkdwn control characters; escaped, nothing in the text can become a link or ping.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _mrkdwn_clip(text: str, limit: int) -> str:
    """`_mrkdwn(text)` in at most `limit` characters, cut in the raw text so that no escape
    (`&amp;`) or link is cut in half the way clipping the escaped text would."""
    raw, out = text, _mrkdwn(text)
    while len(out) > limit:
        # Escapes lengthen the text unevenly: cut in proportion, and always by something.
        raw = _clip(raw, max(1, min(len(raw) - 1, len(raw) * limit // len(out))))
        out = _mrkdwn(raw)
    return out


# --- markup stripping for fallbacks ---------------------------------------------------------

_MD_LINK = re.compile(r"!?\[([^\]\n]*)\]\([^)\s]*\)")
_SLACK_LINK = re.compile(r"<(?:https?|mailto):[^|>\s]*\|([^>]*)>|<((?:https?|mailto):[^|>\s]*)>")
_USER = re.compile(r"<@([A-Z0-9]+)(?:\|([^>]*))?>")
_CHANNEL = re.compile(r"<#([A-Z0-9]+)(?:\|([^>]*))?>")
_EMPHASIS = re.compile(r"(\*\*|\*|~~|~)(?=\S)(.+?)(?<=\S)\1")
# Underscores only at word edges, so `__init__.py` keeps its name.
_UNDERSCORES = re.compile(r"(?<!\w)(__|_)(?=\S)(.+?)(?<=\S)\1(?!\w)")
_LINE_MARK = re.compile(r"^\s*(?:#{1,6}\s+|>\s*|[-*+]\s+(?=\S))")


def _plain(line: str) -> str:
    """One line of markdown or mrkdwn as plain words, for a notification."""
    # Before the angle brackets go, so `<!here>` reads as an inert @here rather than `!here`.
    line = neutralise(line)
    line = _MD_LINK.sub(r"\1", line)
    line = _SLACK_LINK.sub(lambda m: m[1] if m[1] is not None else m[2], line)
    line = _USER.sub(lambda m: "@" + (m[2] or "someone"), line)
    line = _CHANNEL.sub(lambda m: "#" + (m[2] or "channel"), line)
    line = _LINE_MARK.sub("", line)
    for _ in range(3):  # nested emphasis, e.g. ***bold italic***
        line = _UNDERSCORES.sub(r"\2", _EMPHASIS.sub(r"\2", line))
    line = line.replace("`", "").replace("<", "").replace(">", "")
    return neutralise(_one_line(line))


_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<marker>`{3,}|~{3,})(?P<info>.*)$")


def _fallback(text: str) -> str:
    in_fence: str | None = None
    for line in text.splitlines():
        m = _FENCE.match(line)
        if in_fence is None and m and not _inline_fence(m):
            in_fence = m["marker"]
            continue
        if in_fence is not None:
            if _closes(line, in_fence):
                in_fence = None
            continue
        plain = _plain(line)
        if plain:
            return _clip(plain, FALLBACK_CHARS)
    return "codeask answered"


# --- the body: fenced code aware splitting ---------------------------------------------------


def _inline_fence(m: re.Match[str]) -> bool:
    """```code``` on one line: a balanced span, not the opening of a block."""
    return m["marker"][0] == "`" and "`" in m["info"]


def _closes(line: str, marker: str) -> bool:
    s = line.strip()
    return len(s) >= len(marker) and s == marker[0] * len(s)


@dataclass
class _Atom:
    """A paragraph, or a whole fenced code block, never split unless it alone is too large."""

    lines: list[str]
    gap: int  # blank lines before it in the answer
    code: bool = False

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def _atoms(text: str) -> list[_Atom]:
    atoms: list[_Atom] = []
    gap = 0
    cur: _Atom | None = None
    marker: str | None = None
    for line in text.split("\n"):
        if marker is not None:
            assert cur is not None
            cur.lines.append(line)
            if _closes(line, marker):
                atoms.append(cur)
                cur, marker, gap = None, None, 0
            continue
        m = _FENCE.match(line)
        if m and not _inline_fence(m):
            if cur is not None:
                atoms.append(cur)
            cur, marker = _Atom([line], gap, code=True), m["marker"]
            gap = 0
            continue
        if not line.strip():
            if cur is not None:
                atoms.append(cur)
                cur = None
            gap += 1
            continue
        if cur is None:
            cur, gap = _Atom([], gap), 0
        cur.lines.append(line)
    if cur is not None:
        if marker is not None:
            # An unclosed fence would swallow everything after it, in this block and the next.
            cur.lines.append(_indent(cur.lines[0]) + marker)
        atoms.append(cur)
    return atoms


def _indent(opener: str) -> str:
    m = _FENCE.match(opener)
    return m["indent"] if m else ""


def _hard_split(line: str, cap: int, *, at_space: bool) -> list[str]:
    out: list[str] = []
    cap = max(cap, 1)
    while len(line) > cap:
        cut = line.rfind(" ", cap // 2, cap) if at_space else -1
        cut = cut if cut > 0 else cap
        out.append(line[:cut])
        line = line[cut:].lstrip(" ") if at_space else line[cut:]
    out.append(line)
    return out


def _group(lines: list[str], first: int, rest: int, *, at_space: bool) -> list[list[str]]:
    """Lines in consecutive groups of at most `first`, then `rest`, characters each.

    The first group is empty when not even one line fits in `first`.
    """
    groups: list[list[str]] = [[]]
    size, cap = 0, first
    for line in lines:
        for part in _hard_split(line, rest, at_space=at_space):
            need = len(part) + (1 if groups[-1] else 0)
            if size + need > cap:
                groups.append([])
                size, cap, need = 0, rest, len(part)
            groups[-1].append(part)
            size += need
    return groups


def _pieces(atom: _Atom, first: int, rest: int) -> list[str]:
    """An oversized atom cut at line boundaries; code pieces each get their own fences.

    The first piece, sized to `first`, is "" when nothing fits there.
    """
    if not atom.code:
        return ["\n".join(g) for g in _group(atom.lines, first, rest, at_space=True)]
    opener, closer, body = atom.lines[0], atom.lines[-1], atom.lines[1:-1]
    m = _FENCE.match(opener)
    if m and len(opener) > 100:
        # A runaway info string must not eat the room the code needs; keep the language.
        opener = m["indent"] + m["marker"] + (m["info"].split() or [""])[0][:30]
    overhead = len(opener) + len(closer) + 2
    groups = _group(body, first - overhead, rest - overhead, at_space=False)
    return [f"{opener}\n" + "\n".join(g) + f"\n{closer}" if g else "" for g in groups]


def split_body(text: str, limit: int = BODY_BLOCK_CHARS) -> list[str]:
    """Markdown cut into pieces of at most `limit` characters, each with balanced code fences.

    Cuts fall between paragraphs where possible, then between lines; a code block too large for
    one piece is closed at the cut and reopened, with its language, in the next.
    """
    chunks: list[str] = []
    cur = ""
    for atom in _atoms(text):
        sep = "\n\n" if atom.gap else "\n"
        body = atom.text
        joined = f"{cur}{sep}{body}" if cur else body
        if len(joined) <= limit:
            cur = joined
            continue
        if len(body) <= limit:
            chunks.append(cur)
            cur = body
            continue
        room = limit - len(cur) - len(sep) if cur else limit
        if cur and room < MIN_SPLIT_ROOM:
            chunks.append(cur)
            cur, room = "", limit
        pieces = _pieces(atom, room, limit)
        if not pieces[0]:
            chunks.append(cur)
            pieces = pieces[1:]
        elif cur:
            pieces[0] = f"{cur}{sep}{pieces[0]}"
        chunks.extend(pieces[:-1])
        cur = pieces[-1] if pieces else ""
    if cur.strip():
        chunks.append(cur)
    return [c for c in chunks if c.strip()]


# --- citations -------------------------------------------------------------------------------


def _fence_spans(text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    pos = 0
    start: int | None = None
    marker = ""
    for line in text.split("\n"):
        m = _FENCE.match(line)
        if start is None and m and not _inline_fence(m):
            start, marker = pos, m["marker"]
        elif start is not None and _closes(line, marker):
            spans.append((start, pos + len(line)))
            start = None
        pos += len(line) + 1
    if start is not None:
        spans.append((start, len(text)))
    return spans


def body_markdown(text: str, verification: Verification) -> str:
    """An answer's text as its message shows it: neutralised, the first backticked mention of
    each citation linked at the SHA, every unverified reference marked. For a settled part of
    an answer still being written (holdback.Settled) it is the start of the finished body."""
    fences = _fence_spans(text)
    done: set[tuple[str, int | None, int | None]] = set()
    # start, end (backticks included), replacement; a mark replaces nothing (start == end)
    links: list[tuple[int, int, str]] = [(p, p, mark) for p, mark in verification.marks(text)]
    for m in verification.mentions:
        key = (m.path, m.start_line, m.end_line)
        if not m.verified or m.kind != "file" or m.url is None or key in done:
            continue
        s, e = m.span
        label = text[s:e]
        wrapped = (
            s >= 1
            and e < len(text)
            and text[s - 1] == "`"
            and text[e] == "`"
            and (s < 2 or text[s - 2] != "`")
            and text[e + 1 : e + 2] != "`"
            and "`" not in label
            and "\n" not in label
        )
        if not wrapped or any(fs <= s < fe for fs, fe in fences):
            continue
        done.add(key)
        # The markdown block takes standard markdown links; brackets in a label would end it.
        shown = neutralise(label).replace("[", "\\[").replace("]", "\\]")
        links.append((s - 1, e + 1, f"[{shown}]({m.url})"))
    out: list[str] = []
    pos = 0
    for s, e, link in sorted(links):
        out.append(neutralise(text[pos:s]))
        out.append(link)
        pos = e
    out.append(neutralise(text[pos:]))
    return "".join(out)


# --- blocks ----------------------------------------------------------------------------------


def _markdown(text: str) -> dict[str, Any]:
    return {"type": "markdown", "text": text}


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": _clip(text, SECTION_TEXT_MAX)}}


def _context(*texts: str) -> dict[str, Any]:
    return {
        "type": "context",
        "elements": [
            {"type": "mrkdwn", "text": _clip(t, SECTION_TEXT_MAX)}
            for t in texts[:CONTEXT_ELEMENTS_MAX]
        ],
    }


def block_chars(block: dict[str, Any]) -> int:
    """The characters of text a block carries, as Slack counts them against a message."""
    if block.get("type") == "markdown":
        return len(block.get("text", ""))
    n = 0
    text = block.get("text")
    if isinstance(text, dict):
        n += len(text.get("text", ""))
    for el in block.get("elements", []):
        if isinstance(el, dict):
            n += len(el.get("text", ""))
    return n


def _seconds(answer: Answer, elapsed_s: float | None) -> float | None:
    if elapsed_s is not None:
        return elapsed_s
    total = answer.timings_ms.get("total")
    return total / 1000 if total is not None else None


def _cost(usage: dict[str, Any]) -> str | None:
    cost = usage.get("cost_usd")
    if not isinstance(cost, int | float):
        return None
    if 0 < cost < 0.001:
        return "est. <$0.001"
    return f"est. ${cost:.3f}" if cost < 1 else f"est. ${cost:.2f}"


def _footer(answer: Answer, elapsed_s: float | None) -> dict[str, Any]:
    repos: list[tuple[str, str | None]] = []
    for snap in answer.snapshot.parts.values():
        where = f"{_mrkdwn(snap.repo.name)}@{snap.short_sha}"
        repos.append((where, commit_link(snap.repo.url, snap.sha)))
    rest = _footer_rest(answer, elapsed_s)
    linked = [f"<{url}|{where}>" if url else where for where, url in repos]
    text = " · ".join(linked + rest)
    if len(text) > SECTION_TEXT_MAX:
        # An answer over many repos: their commit links would not fit, clipped they would show
        # as markup; the repos' names and SHAs do, or as many as there is room for.
        room = SECTION_TEXT_MAX - len(" · ".join(["", *rest]))
        names = ", ".join(where for where, _ in repos)
        text = " · ".join([_clip(names, room), *rest])
    return _context(text)


def _footer_rest(answer: Answer, elapsed_s: float | None) -> list[str]:
    """The footer after the repos: branch, how the answer was made, calls, time, cost."""
    parts = []
    if answer.branch:
        parts.append(f"branch {_mrkdwn_clip(answer.branch, NOTE_CHARS)}")
    if answer.search_only:
        parts.append("search-only (no model)")
    else:
        model = f" ({_mrkdwn(answer.model)})" if answer.model else ""
        parts.append(f"{_mrkdwn(answer.mode)}{model}")
    calls = answer.tool_calls
    parts.append(f"{calls} tool call{'' if calls == 1 else 's'}")
    seconds = _seconds(answer, elapsed_s)
    if seconds is not None:
        parts.append(f"{seconds:.1f} s")
    if not answer.search_only:
        cost = _cost(answer.usage)
        if cost:
            parts.append(cost)
    if answer.stopped_early:
        parts.append(f"stopped early ({_mrkdwn_clip(answer.stopped_early, DETAIL_CHARS)})")
    return parts


def _continued(i: int, n: int) -> dict[str, Any]:
    return _context(f"_(continued {i}/{n})_")


@dataclass
class _Draft:
    blocks: list[dict[str, Any]]

    @property
    def chars(self) -> int:
        return sum(block_chars(b) for b in self.blocks)


def _fits(draft: _Draft, extra: list[dict[str, Any]], reserve_blocks: int, reserve: int) -> bool:
    blocks = len(draft.blocks) + len(extra) + reserve_blocks
    chars = draft.chars + sum(block_chars(b) for b in extra) + reserve
    markdown = sum(block_chars(b) for b in draft.blocks + extra if b["type"] == "markdown")
    return (
        blocks <= MESSAGE_BLOCKS_MAX
        and chars <= MESSAGE_TEXT_BUDGET
        and markdown <= MESSAGE_MARKDOWN_MAX
    )


def _fits_last(drafts: list[_Draft], extra: list[dict[str, Any]]) -> bool:
    """Whether `extra` fits the last draft, leaving room for its continuation label if any."""
    reserve = LABEL_RESERVE if len(drafts) > 1 else 0
    return _fits(drafts[-1], extra, 1 if reserve else 0, reserve)


def _close(
    drafts: list[_Draft], links: list[dict[str, Any]], closing: list[dict[str, Any]]
) -> None:
    """The diagram links and the closing blocks (warning, footer, buttons) after the body,
    each message within the limits, the closing blocks never in a message alone."""
    tail = links + closing
    if _fits_last(drafts, tail):
        drafts[-1].blocks.extend(tail)
        return
    carried = [drafts[-1].blocks[-1], *tail]
    if _fits(_Draft([]), carried, 1, LABEL_RESERVE):
        # Carry the last chunk over so the warning and footer never sit in a message alone.
        drafts[-1].blocks.pop()
        drafts.append(_Draft(carried))
        return
    # Too many diagrams for one message: the links fill messages in turn, then the closing
    # blocks (together, so the footer stays beside its warning) go where they fit.
    for unit in [[link] for link in links] + [closing]:
        if not _fits_last(drafts, unit):
            drafts.append(_Draft([]))
        drafts[-1].blocks.extend(unit)
    if len(drafts[-1].blocks) == len(closing):
        # Each block is under a third of a message's text, so one more always fits beside them.
        drafts[-1].blocks.insert(0, drafts[-2].blocks.pop())


def _head(answer: Answer) -> list[dict[str, Any]]:
    """The notes above the answer, at most HEAD_NOTES_MAX blocks and HEAD_CHARS characters
    however many repos they concern: past the limit, the repos left are named in one more."""
    notes = []
    if answer.stale is not None:
        # The reason is a sync's error: the mirrors' paths in it are the bot's own business.
        notes.append(f"⏳ This answer {public(answer.stale.message())}")
    uncommitted = list(answer.uncommitted)
    keep = len(uncommitted)
    if len(notes) + keep > HEAD_NOTES_MAX:
        keep = HEAD_NOTES_MAX - len(notes) - 1  # and one more block names the rest
    shown, more = uncommitted[:keep], uncommitted[keep:]
    notes += [f"📝 {public(note.message())}" for note in shown]
    if more:
        names = ", ".join(note.repo for note in more)
        notes.append(
            f"📝 {len(more)} more repositories have uncommitted changes that are not included, "
            f"or could not be checked for them: {names}"
        )
    each = min(NOTE_CHARS, HEAD_CHARS // max(1, len(notes)))
    return [_context(_mrkdwn_clip(note, each)) for note in notes]


def _diagram_link(i: int, source: str) -> dict[str, Any]:
    """A link that opens diagram `i` in Mermaid Live, or, when the diagram is too large for a
    link Slack takes, a note saying so and where to paste its code (the answer shows it whole)."""
    problems = diagram.validate(source)
    note = ""
    if problems:
        note = " — ⚠️ it may not draw: " + _mrkdwn_clip("; ".join(problems[:3]), PROBLEMS_CHARS)
    link = diagram.editor_link(source)
    text = f"<{link}|Open diagram {i} in Mermaid Live>"
    if len(text) + len(note) > SECTION_TEXT_MAX:
        text = (
            f"Diagram {i} is too large to open from a link ({len(link):,} characters; Slack "
            f"takes {SECTION_TEXT_MAX:,}): paste its code from the answer into "
            f"<{diagram.EDITOR_HOME}|Mermaid Live>"
        )
    return _context(text + note)


FEEDBACK_ACTIONS = {"codeask_feedback_up": "up", "codeask_feedback_down": "down"}


def _feedback(key: str) -> dict[str, Any]:
    """👍/👎 buttons; the value names the asking message, so a vote finds its answer."""
    return {
        "type": "actions",
        "block_id": "codeask_feedback",
        "elements": [
            {"type": "button", "action_id": action, "value": key,
             "text": {"type": "plain_text", "emoji": True, "text": label}}
            for action, label in (("codeask_feedback_up", "👍 Helpful"),
                                  ("codeask_feedback_down", "👎 Not helpful"))
        ],
    }  # fmt: skip


def render_answer(
    answer: Answer, *, elapsed_s: float | None = None, feedback_key: str | None = None
) -> list[SlackMessage]:
    """The answer as messages for its thread: the first replaces the placeholder."""
    body = body_markdown(answer.text, answer.verification)
    chunks = split_body(body) or ["_(The answer came back empty.)_"]
    head = _head(answer)
    links = [_diagram_link(i, s) for i, s in enumerate(diagram.blocks(answer.text), start=1)]
    closing: list[dict[str, Any]] = []
    warning = answer.warning
    if warning:
        closing.append(_section(_mrkdwn_clip(warning, SECTION_TEXT_MAX)))
    closing.append(_footer(answer, elapsed_s))
    if feedback_key:
        closing.append(_feedback(feedback_key))

    drafts = [_Draft(list(head))]
    for chunk in chunks:
        block = _markdown(chunk)
        # Every message but the first carries a continuation label, so leave it room.
        reserve = LABEL_RESERVE if len(drafts) > 1 else 0
        if drafts[-1].blocks and not _fits(drafts[-1], [block], 1 if reserve else 0, reserve):
            drafts.append(_Draft([]))
        drafts[-1].blocks.append(block)
    _close(drafts, links, closing)

    n = len(drafts)
    fallback = _fallback(answer.text)
    messages: list[SlackMessage] = []
    for i, draft in enumerate(drafts, start=1):
        if i == 1:
            messages.append(SlackMessage(text=fallback, blocks=draft.blocks))
        else:
            label = f"(continued {i}/{n})"
            messages.append(
                SlackMessage(
                    text=_clip(f"{label} {fallback}", FALLBACK_CHARS),
                    blocks=[_continued(i, n), *draft.blocks],
                )
            )
    return messages


# --- an answer still being written -----------------------------------------------------------

WRITING = "✍️ still writing…"


def render_partial(markdown: str) -> SlackMessage:
    """A chat.update of the placeholder with the answer so far (`body_markdown` of what is
    settled), for workspaces without chat.startStream. Only the first message's worth is shown;
    the finished answer splits into continuations as usual."""
    blocks: list[dict[str, Any]] = []
    size = 0
    for chunk in split_body(markdown):
        if size + len(chunk) > MESSAGE_TEXT_BUDGET - PROGRESS_CHARS:
            break
        blocks.append(_markdown(chunk))
        size += len(chunk)
    blocks.append(_context(WRITING))
    return SlackMessage(text=_fallback(markdown), blocks=blocks)


# --- placeholder, progress, failures ---------------------------------------------------------


def render_placeholder(question: str) -> SlackMessage:
    """The message posted at once, replaced by the answer: says what is being looked into."""
    hint = _clip(_plain(question), HINT_CHARS)
    if hint:
        return SlackMessage(
            text=f"Looking into it… “{hint}”",
            blocks=[_context(f"⏳ Looking into it… “{_mrkdwn(hint)}”")],
        )
    return SlackMessage(text="Looking into it…", blocks=[_context("⏳ Looking into it…")])


def render_progress(step: str) -> str:
    """A one-line status (at most 100 characters) for setStatus or a placeholder edit; a sync's
    step can quote its error, so the machine's paths go as in a failure."""
    line = neutralise(_one_line(public(step)))
    return _clip(line, PROGRESS_CHARS) if line else "Working…"


class Failure(StrEnum):
    """Why a thread gets no answer, other than a refusal (those are `Refusal`s)."""

    TIMEOUT = "timeout"
    ERROR = "error"
    NOT_CONFIGURED = "not_configured"
    EMPTY = "empty"  # a mention with no question in it
    DISK_FULL = "disk_full"  # no room on the bot's own disk for the code


_FAILURES: dict[Failure | Refusal, str] = {
    Failure.TIMEOUT: (
        "Sorry, I ran out of time before I could finish an answer. "
        "A narrower question (a file, a function, a feature) usually goes faster."
    ),
    Failure.ERROR: (
        "Sorry, something went wrong while I was answering, so there is no answer this time."
    ),
    Failure.DISK_FULL: (
        "Sorry, my disk is full, so I could not get the code ready and there is no answer this "
        "time. An admin can find the details in the logs; asking again later may work."
    ),
    Refusal.CHANNEL: (
        "I'm not set up to answer in this channel. An admin can add it to codeask's configuration."
    ),
    Refusal.DM: "I don't answer in direct messages. Please ask in a channel where I'm set up.",
    Refusal.SHARED: (
        "I don't answer in channels shared with other organisations, "
        "so code stays inside this workspace."
    ),
    Refusal.TEAM: "This workspace isn't allowed to use this codeask installation.",
    Refusal.REPOS: (
        "This channel may no longer read the repositories this question was about, so I can't "
        "answer it. An admin can check codeask's configuration."
    ),
    Failure.NOT_CONFIGURED: (
        "codeask isn't configured yet: no repositories are set up. An admin needs to finish setup."
    ),
    Failure.EMPTY: "Ask me a question about the code after mentioning me, and I'll look it up.",
}
_ICONS: dict[Failure | Refusal, str] = {Failure.TIMEOUT: "⏱️", Failure.EMPTY: "👋"}
_GENERIC_FAILURE = "Sorry, I couldn't answer this one."
_TRACE = re.compile(r"Traceback \(most recent call last\)|^\s*File \"", re.MULTILINE)


def _detail(detail: str | None) -> str | None:
    """One short line of the reason, with anything secret-shaped removed; None if unfit to show."""
    if not detail or _TRACE.search(detail):
        return None
    first = next((ln for ln in detail.splitlines() if ln.strip()), "")
    # Scanned before clipping, so a secret cut in half at the clip is still recognised whole;
    # the machine's own paths (mirrors, snapshots) are for the logs.
    cleaned, _ = scan(public(first[:2000]))
    line = _one_line(cleaned)
    return _clip(line, DETAIL_CHARS) if line else None


def render_failure(kind: Failure | Refusal, detail: str | None = None) -> SlackMessage:
    """An honest, short failure message: what happened in plain words, never a stack trace."""
    message = _FAILURES.get(kind, _GENERIC_FAILURE)
    reason = _detail(detail)
    text = f"{message} ({reason})" if reason else message
    icon = _ICONS.get(kind, "🚫" if isinstance(kind, Refusal) else "⚠️")
    return SlackMessage(
        text=_clip(_plain(text), FALLBACK_CHARS * 2),
        blocks=[
            _section(f"{icon} {_mrkdwn(message)}" + (f" ({_mrkdwn(reason)})" if reason else ""))
        ],
    )


__all__: list[str] = [
    "Failure",
    "SlackMessage",
    "block_chars",
    "body_markdown",
    "neutralise",
    "render_answer",
    "render_failure",
    "render_partial",
    "render_placeholder",
    "render_progress",
    "split_body",
]
