"""Behaviour of the Slack rendering: safe mentions, limits kept, fences balanced, honest footers."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from slack_sdk import WebClient

from codeask import diagram
from codeask.answer import Answer
from codeask.botconfig import Refusal
from codeask.mirror import StaleNote, UncommittedNote
from codeask.render import (
    BODY_BLOCK_CHARS,
    HEAD_CHARS,
    HEAD_NOTES_MAX,
    MESSAGE_TEXT_BUDGET,
    Failure,
    SlackMessage,
    block_chars,
    neutralise,
    render_answer,
    render_failure,
    render_placeholder,
    render_progress,
    split_body,
)
from codeask.snapshot import RepoRef, Snapshot
from codeask.verify import verify_answer
from conftest import examples
from fakes.slack_api import Channel, FakeSlack

SHA = "a3f9c21" + "0" * 33
REPO_URL = "https://github.com/acme/billing.git"
COMMIT_URL = f"https://github.com/acme/billing/commit/{SHA}"
BLOB = f"https://github.com/acme/billing/blob/{SHA}"

TREE = {"billing/worker.py": 200, "billing/retry.py": 20, "README.md": 10}

# Slack's documented limits (docs.slack.dev Block Kit reference).
MAX_BLOCKS = 50
MARKDOWN_BLOCK_MAX = 12_000
MARKDOWN_PER_MESSAGE_MAX = 12_000
TEXT_OBJECT_MAX = 3_000
CONTEXT_ELEMENTS_MAX = 10

MASS_MENTIONS = [
    "<!channel>",
    "<!here>",
    "<!everyone>",
    "<!here|here>",
    "<!channel|@channel>",
    "<!subteam^S0123ABC>",
    "<!subteam^S0123ABC|@backend>",
    "@channel",
    "@here",
    "@everyone",
    "@Channel",
]
_PINGS = (
    re.compile(r"<\s*!\s*(?:channel|here|everyone|group|all|subteam)", re.IGNORECASE),
    re.compile(r"(?<![\w@])@(?:channel|here|everyone)\b", re.IGNORECASE),
)


def pings(text: str) -> bool:
    return any(p.search(text) for p in _PINGS)


@pytest.fixture
def snap(tmp_path: Path) -> Snapshot:
    root = tmp_path / "repo"
    for rel, n in TREE.items():
        f = root / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("".join(f"line {i}\n" for i in range(1, n + 1)))
    return Snapshot(root=root, sha=SHA, repo=RepoRef(name="billing", url=REPO_URL))


MakeAnswer = Callable[..., Answer]


@pytest.fixture
def make_answer(snap: Snapshot) -> MakeAnswer:
    def make(text: str, **overrides: Any) -> Answer:
        fields: dict[str, Any] = {
            "question": "where are retries scheduled?",
            "text": text,
            "mode": "claude",
            "snapshot": overrides.pop("snapshot", snap),
            "branch": "main",
            "searches": ["retry schedule"],
            "tool_calls": 4,
            "timings_ms": {"total": 8300.0},
            "usage": {"cost_usd": 0.0123},
            "model": "claude-sonnet-4-5",
        }
        fields.update(overrides)
        fields["verification"] = verify_answer(text, fields["snapshot"])
        return Answer(**fields)

    return make


# --- helpers that read messages the way Slack would ------------------------------------------


def texts(block: dict[str, Any]) -> list[str]:
    """Every text string a block carries."""
    if block["type"] == "markdown":
        return [block["text"]]
    out = []
    if isinstance(block.get("text"), dict):
        out.append(block["text"]["text"])
    out += [el["text"] for el in block.get("elements", []) if "text" in el]
    return out


def all_text(msg: SlackMessage) -> str:
    return "\n".join([msg.text, *(t for b in msg.blocks for t in texts(b))])


def markdown_texts(msgs: list[SlackMessage]) -> list[str]:
    return [b["text"] for m in msgs for b in m.blocks if b["type"] == "markdown"]


def diagram_links(msgs: list[SlackMessage]) -> list[str]:
    """Every Mermaid Live link the messages carry, in the order they appear."""
    return re.findall(r"<(https://mermaid\.live/edit#pako:[^|>]*)\|", all_texts(msgs))


def all_texts(msgs: list[SlackMessage]) -> str:
    return "\n".join(t for m in msgs for b in m.blocks if b["type"] != "actions" for t in texts(b))


def footer(msg: SlackMessage) -> str:
    last = msg.blocks[-1]
    assert last["type"] == "context"
    return " ".join(texts(last))


def assert_within_limits(msgs: list[SlackMessage]) -> None:
    for m in msgs:
        assert len(m.blocks) <= MAX_BLOCKS
        markdown = 0
        for b in m.blocks:
            if b["type"] == "markdown":
                assert 0 < len(b["text"]) <= MARKDOWN_BLOCK_MAX
                markdown += len(b["text"])
            elif b["type"] == "section":
                assert len(b["text"]["text"]) <= TEXT_OBJECT_MAX
            elif b["type"] == "context":
                assert 1 <= len(b["elements"]) <= CONTEXT_ELEMENTS_MAX
                assert all(len(el["text"]) <= TEXT_OBJECT_MAX for el in b["elements"])
            elif b["type"] == "actions":
                assert 1 <= len(b["elements"]) <= 25
            else:
                pytest.fail(f"unexpected block type {b['type']}")
        assert markdown <= MARKDOWN_PER_MESSAGE_MAX
        # Well under the ~40,000 characters at which Slack truncates `text`.
        assert 0 < len(m.text) <= 300


def code_lines(block_texts: list[str]) -> list[str]:
    """The lines inside fences, fences themselves left out, in the order they appear."""
    out: list[str] = []
    for t in block_texts:
        inside = False
        for line in t.split("\n"):
            if line.lstrip().startswith("```"):
                inside = not inside
            elif inside:
                out.append(line)
    return out


def big_answer() -> tuple[str, list[str]]:
    """About 30,000 characters: prose and four large code blocks; returns (text, code lines)."""
    parts: list[str] = ["Retries are scheduled in `billing/worker.py:141`, see below."]
    code: list[str] = []
    for k in range(4):
        parts.append(
            f"Paragraph {k}: " + " ".join(f"word{k}_{i}" for i in range(120))
        )  # ~1,100 chars
        lines = [f"    value_{k}_{i:04d} = compute({k}, {i})  # step {i}" for i in range(150)]
        code += lines
        parts.append("```python\n" + "\n".join(lines) + "\n```")
    text = "\n\n".join(parts)
    return text, code


# --- mentions ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mention", MASS_MENTIONS)
def test_every_form_of_mass_mention_is_made_inert(mention: str) -> None:
    # Given a text carrying a mass mention
    text = f"Heads up {mention} the worker retries"
    # When it is neutralised
    out = neutralise(text)
    # Then it can no longer ping, and the rest of the text survives
    assert not pings(out), out
    assert out.startswith("Heads up ") and out.endswith(" the worker retries")


def test_user_mentions_and_ordinary_at_signs_are_left_alone() -> None:
    text = "Ask <@U123ABC> or <@U456|dana>; mail ops@here.example; see @channelize and @Group"
    assert neutralise(text) == text


def test_mass_mentions_cannot_ping_from_the_body_or_the_fallback(make_answer: MakeAnswer) -> None:
    # Given an answer whose text tries every form of mass mention, in prose and in code
    text = (
        " ".join(MASS_MENTIONS)
        + " — ping <@U123ABC> about `billing/worker.py:141`.\n\n```\n<!channel> @here\n```"
    )
    answer = make_answer(text)
    # When it is rendered
    msgs = render_answer(answer)
    # Then nothing in any message can ping, and the user mention is still a mention
    for m in msgs:
        assert not pings(all_text(m)), all_text(m)
    assert "<@U123ABC>" in "".join(markdown_texts(msgs))


def test_the_placeholder_neutralises_the_question_and_hints_at_it() -> None:
    # Given a question with mass mentions and a long tail
    question = "<!channel> @here where do we schedule retries? " + "and more " * 40
    # When the placeholder is rendered
    msg = render_placeholder(question)
    # Then it says it is looking, hints at the question, is short and cannot ping
    assert msg.text.startswith("Looking into it")
    assert "where do we schedule retries" in all_text(msg)
    assert not pings(all_text(msg))
    assert len(msg.text) <= 150
    assert_within_limits([msg])


def test_progress_is_one_short_safe_line() -> None:
    line = render_progress("searching <!here> for `retry`\n in " + "billing/" * 40)
    assert len(line) <= 100
    assert "\n" not in line
    assert not pings(line)
    assert render_progress("syncing billing") == "syncing billing"
    # a stale mirror's note, shown while the answer is written, names no path of the machine
    step = "may be stale (a fetch failed: cannot lock /mnt/efs/mirrors/billing.git/HEAD)"
    assert render_progress(step) == "may be stale (a fetch failed: cannot lock …/HEAD)"


# --- splitting ----------------------------------------------------------------------------------


def test_a_long_answer_with_large_code_blocks_splits_within_limits_keeping_code_whole(
    make_answer: MakeAnswer,
) -> None:
    # Given a ~30,000-character answer with several large code blocks
    text, code = big_answer()
    assert 28_000 <= len(text) <= 34_000
    answer = make_answer(text)
    # When it is rendered
    msgs = render_answer(answer)
    # Then it takes several messages, each within Slack's limits
    assert len(msgs) >= 3
    assert_within_limits(msgs)
    # And no block leaves a code fence open
    bodies = markdown_texts(msgs)
    for body in bodies:
        assert body.count("```") % 2 == 0, body[:200]
    # And every code line is there, once, in order
    assert code_lines(bodies) == code
    # And the prose is all there too
    joined = "\n".join(bodies)
    for k in range(4):
        assert f"Paragraph {k}: word{k}_0" in joined and f"word{k}_119" in joined


def test_a_single_huge_code_block_is_closed_and_reopened_with_its_language(
    make_answer: MakeAnswer,
) -> None:
    # Given one 10,000-character Go code block
    lines = [f"\tx{i:04d} := step({i}) // comment {i}" for i in range(300)]
    text = "Here is the loop:\n\n```go\n" + "\n".join(lines) + "\n```\n\nThat is all."
    assert len(text) >= 10_000
    answer = make_answer(text)
    # When it is rendered
    msgs = render_answer(answer)
    bodies = markdown_texts(msgs)
    with_code = [b for b in bodies if "```" in b]
    # Then the block is split, every piece opening with the same language and closing its fence
    assert len(with_code) >= 2
    for b in with_code:
        assert b.count("```") == 2
        fences = [ln for ln in b.split("\n") if ln.startswith("```")]
        assert fences == ["```go", "```"]
    assert code_lines(bodies) == lines
    assert bodies[0].startswith("Here is the loop:")
    assert bodies[-1].rstrip().endswith("That is all.")
    assert_within_limits(msgs)


def test_splits_fall_between_paragraphs_rather_than_inside_them(make_answer: MakeAnswer) -> None:
    # Given prose paragraphs that together need several blocks
    paragraphs = [f"Paragraph {k}. " + "The retry logic is careful. " * 40 for k in range(12)]
    answer = make_answer("\n\n".join(paragraphs))
    # When it is rendered
    bodies = markdown_texts(render_answer(answer))
    # Then each paragraph sits whole in one block
    assert len(bodies) > 1
    for p in paragraphs:
        assert sum(p.strip() in b for b in bodies) == 1


@pytest.mark.parametrize("seed", range(12))
def test_any_mix_of_prose_and_code_stays_within_limits_and_loses_no_code(
    seed: int, make_answer: MakeAnswer
) -> None:
    # Given an answer of random paragraphs, unbroken runs and code blocks of random sizes
    rnd = random.Random(seed)
    parts: list[str] = []
    code: list[str] = []
    for _ in range(rnd.randint(1, 25)):
        roll = rnd.random()
        if roll < 0.4:
            parts.append(" ".join("w" * rnd.randint(1, 12) for _ in range(rnd.randint(1, 600))))
        elif roll < 0.5:
            parts.append("x" * rnd.randint(1, 7000))  # no space to cut at
        else:
            lines = [
                f"{'y' * rnd.randint(0, 110)}#{len(code) + i}" for i in range(rnd.randint(0, 300))
            ]
            code += lines
            parts.append(f"```{rnd.choice(['', 'python', 'ts'])}\n" + "\n".join(lines) + "\n```")
    answer = make_answer("\n\n".join(parts))
    # When it is rendered
    msgs = render_answer(answer)
    # Then every message is within limits, every block balanced, and the code all there in order
    assert_within_limits(msgs)
    bodies = markdown_texts(msgs)
    assert all(b.count("```") % 2 == 0 for b in bodies)
    assert code_lines(bodies) == code


def test_an_unclosed_fence_is_closed(make_answer: MakeAnswer) -> None:
    answer = make_answer("Look:\n\n```python\nprint('hi')")
    bodies = markdown_texts(render_answer(answer))
    assert all(b.count("```") % 2 == 0 for b in bodies)
    assert code_lines(bodies) == ["print('hi')"]


def test_continuations_are_labelled_and_only_they_are(make_answer: MakeAnswer) -> None:
    text, _ = big_answer()
    msgs = render_answer(make_answer(text))
    n = len(msgs)
    assert n >= 2
    assert "continued" not in all_text(msgs[0])
    for i, m in enumerate(msgs[1:], start=2):
        assert f"(continued {i}/{n})" in " ".join(texts(m.blocks[0]))
        assert f"(continued {i}/{n})" in m.text


# --- fallback text ----------------------------------------------------------------------------


def test_the_fallback_is_the_first_line_short_and_without_markup(make_answer: MakeAnswer) -> None:
    # Given an answer whose first line is heavy with markup
    text = (
        "## **Retries** are _scheduled_ in `billing/worker.py:141` via "
        "[the scheduler](https://example.com/x) for <@U123|dana> " + "and so on " * 30 + "\n\n"
        "Second paragraph."
    )
    msgs = render_answer(make_answer(text))
    fallback = msgs[0].text
    # Then the notification text is that line, plain and short
    assert fallback.startswith("Retries are scheduled in billing/worker.py:141 via the scheduler")
    assert len(fallback) <= 150
    assert not re.search(r"[`*<>\[\]#]|\]\(", fallback)
    assert "Second paragraph" not in fallback


def test_the_fallback_skips_a_leading_code_block(make_answer: MakeAnswer) -> None:
    msgs = render_answer(make_answer("```\n@here code first\n```\nThen the words."))
    assert msgs[0].text == "Then the words."


# --- citations ----------------------------------------------------------------------------------


def test_the_first_backticked_citation_becomes_a_link_and_code_is_untouched(
    make_answer: MakeAnswer,
) -> None:
    # Given a verified citation written in backticks twice, and once inside a code block
    text = (
        "Retries start in `billing/worker.py:141`.\n\n"
        "```python\n# billing/worker.py:141\nretry()\n```\n\n"
        "Again: `billing/worker.py:141`."
    )
    body = "\n".join(markdown_texts(render_answer(make_answer(text))))
    # Then the first mention is a link to the line at the commit, and the rest stay as written
    link = f"[billing/worker.py:141]({BLOB}/billing/worker.py#L141)"
    assert body.count(link) == 1
    assert body.index(link) < body.index("```python")
    assert "# billing/worker.py:141\nretry()" in body
    assert "Again: `billing/worker.py:141`." in body


def test_unverified_citations_are_never_linked_and_are_marked_where_they_stand(
    make_answer: MakeAnswer,
) -> None:
    text = "See `billing/ledger.py:3`, and `billing/worker.py:999`.\n\n```\n# billing/a.py:4\n```"
    body = "\n".join(markdown_texts(render_answer(make_answer(text))))
    assert body.startswith(
        "See `billing/ledger.py:3` (⚠️ unverified), and `billing/worker.py:999` (⚠️ unverified)."
    )
    # inside a code block too, where a citation is a line comment
    assert "# billing/a.py:4 (⚠️ unverified)\n```" in body
    assert "](" not in body


# --- warning, stale note, footer -----------------------------------------------------------------


def test_the_unverified_warning_is_shown_in_the_last_message(make_answer: MakeAnswer) -> None:
    # Given a long answer that also cites a file that does not exist
    text, _ = big_answer()
    answer = make_answer(text + "\n\nAlso see `billing/ledger.py:3`.")
    assert answer.warning
    # When it is rendered
    msgs = render_answer(answer)
    # Then the warning is visible in the last message, before the footer, and only there
    assert len(msgs) > 1
    warning_blocks = [b for b in msgs[-1].blocks if "Could not verify" in " ".join(texts(b))]
    assert len(warning_blocks) == 1
    assert warning_blocks[0]["type"] in ("section", "context")
    assert "⚠️" in " ".join(texts(warning_blocks[0]))
    assert "billing/ledger.py:3" in " ".join(texts(warning_blocks[0]))
    assert all("Could not verify" not in all_text(m) for m in msgs[:-1])
    assert_within_limits(msgs)


def test_no_warning_when_everything_is_verified(make_answer: MakeAnswer) -> None:
    msgs = render_answer(make_answer("Retries start in `billing/worker.py:141`."))
    assert len(msgs) == 1
    assert "Could not verify" not in all_text(msgs[0])


def test_the_warning_cannot_ping_even_when_searches_carry_mentions(
    make_answer: MakeAnswer,
) -> None:
    answer = make_answer("See `billing/ledger.py:3`.", searches=["<!channel> retry", "@here"])
    msgs = render_answer(answer)
    assert "Could not verify" in all_text(msgs[-1])
    assert not pings(all_text(msgs[-1]))


def test_the_footer_states_commit_mode_calls_time_and_cost(make_answer: MakeAnswer) -> None:
    # Given a model answer
    answer = make_answer("Retries start in `billing/worker.py:141`.")
    # When it is rendered with the worker's elapsed time
    msgs = render_answer(answer, elapsed_s=12.46)
    foot = footer(msgs[-1])
    # Then the footer links repo@sha to the commit and states how the answer was made
    assert f"<{COMMIT_URL}|billing@a3f9c21>" in foot
    assert "main" in foot
    assert "claude" in foot
    assert "4 tool calls" in foot
    assert "12.5 s" in foot
    assert "$0.012" in foot
    assert "stopped early" not in foot


def test_the_footer_falls_back_to_the_measured_total_time(make_answer: MakeAnswer) -> None:
    foot = footer(render_answer(make_answer("An answer."))[-1])
    assert "8.3 s" in foot


def test_a_search_only_footer_says_so_and_shows_no_cost(make_answer: MakeAnswer) -> None:
    answer = make_answer(
        "Matches for `retry`: `billing/retry.py:3`.",
        mode="search-only",
        model=None,
        usage={"cost_usd": 0.0, "rounds": 0},
        tool_calls=1,
    )
    foot = footer(render_answer(answer)[-1])
    assert "search-only" in foot
    assert "$" not in foot
    assert "1 tool call" in foot and "1 tool calls" not in foot


def test_a_stopped_early_answer_says_so_in_the_footer(make_answer: MakeAnswer) -> None:
    foot = footer(render_answer(make_answer("Partial.", stopped_early="time"))[-1])
    assert "stopped early" in foot


def test_an_unknown_host_gets_a_plain_repo_at_sha(tmp_path: Path, make_answer: MakeAnswer) -> None:
    (tmp_path / "r").mkdir()
    snap = Snapshot(root=tmp_path / "r", sha=SHA, repo=RepoRef("internal", "/srv/git/internal"))
    foot = footer(render_answer(make_answer("An answer.", snapshot=snap))[-1])
    assert "internal@a3f9c21" in foot
    assert "<" not in foot and "|" not in foot


def test_the_stale_note_is_shown(make_answer: MakeAnswer) -> None:
    # Given an answer read from a mirror that could not be refreshed
    stale = StaleNote(
        sha=SHA, as_of=datetime(2025, 3, 1, 9, 30, tzinfo=UTC), reason="fetch timed out"
    )
    answer = make_answer("Retries start in `billing/worker.py:141`.", stale=stale)
    # When it is rendered
    text = all_text(render_answer(answer)[0])
    # Then readers are told it may be stale, as of when, and why
    assert "may be stale" in text
    assert "2025-03-01 09:30 UTC" in text
    assert "fetch timed out" in text


def test_uncommitted_changes_left_out_are_shown(make_answer: MakeAnswer) -> None:
    # Given an answer read from a local work tree with uncommitted changes
    note = UncommittedNote(repo="billing", sha=SHA, changed=2, untracked=1)
    answer = make_answer("Retries start in `billing/worker.py:141`.", uncommitted=[note])
    # When it is rendered
    text = all_text(render_answer(answer)[0])
    # Then readers are told which commit was read and that the changes are not in it
    assert "uncommitted changes" in text and "not included" in text
    assert "2 changed files, 1 untracked" in text and SHA[:7] in text
    # And a clean one says nothing of the kind
    assert "uncommitted" not in all_text(render_answer(make_answer("Clean."))[0])


# --- failures -----------------------------------------------------------------------------------

FAILURE_KINDS: list[Failure | Refusal] = [*Failure, *Refusal]


@pytest.mark.parametrize("kind", FAILURE_KINDS)
def test_each_failure_kind_has_its_own_short_polite_message(kind: Failure | Refusal) -> None:
    msg = render_failure(kind)
    assert msg.text and len(msg.text) <= 300
    assert_within_limits([msg])
    others = {render_failure(k).text for k in FAILURE_KINDS if k != kind}
    assert msg.text not in others


def test_failure_details_never_show_stack_traces_secrets_or_mentions() -> None:
    trace = 'Traceback (most recent call last):\n  File "x.py", line 1\nValueError: boom'
    assert "Traceback" not in all_text(render_failure(Failure.ERROR, trace))
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    shown = all_text(render_failure(Failure.ERROR, f"clone failed with {token} <!channel>"))
    assert "clone failed" in shown
    assert token not in shown
    assert not pings(shown)
    assert "<" not in render_failure(Failure.ERROR, "bad <https://x.example|link>").text


def test_failure_details_and_header_notes_never_show_the_machines_paths(
    make_answer: MakeAnswer,
) -> None:
    # Given a failure and a stale mirror whose reasons carry paths of the worker's disks
    detail = "cannot use /mnt/efs/mirrors/billing for mirrors: Permission denied"
    reason = "a fetch into it failed: could not lock /tmp/codeask/mirrors/billing.git/config"
    stale = StaleNote(sha=SHA, as_of=datetime(2025, 3, 1, tzinfo=UTC), reason=reason)
    note = UncommittedNote("billing", SHA, 0, 0, error="cannot open '/home/bot/src/billing/.git'")
    # When they are rendered
    failure = all_text(render_failure(Failure.ERROR, detail))
    head = all_text(render_answer(make_answer("Fine.", stale=stale, uncommitted=[note]))[0])
    # Then each says what went wrong, naming the place by its last name only
    assert "cannot use …/billing for mirrors: Permission denied" in failure
    assert "could not lock …/config" in head and "cannot open '…/.git'" in head
    assert not re.search(r"/(mnt|tmp|home)\b", failure + head)
    # while links and prose with slashes are left alone
    assert "and/or https://example.com/a/b" in all_text(
        render_failure(Failure.ERROR, "and/or https://example.com/a/b")
    )


def test_an_unknown_failure_kind_still_renders() -> None:
    msg = render_failure("something-new")  # type: ignore[arg-type]  # a kind no enum has, on purpose
    assert msg.text
    assert_within_limits([msg])


# --- properties: any mix of prose and fences ---------------------------------------------------

_PROSE = st.text(
    st.characters(codec="utf-8", exclude_characters="`~\n\r", exclude_categories=["Cs"]),
    min_size=1,
    max_size=400,
)
_CODE_LINE = st.text(
    st.characters(codec="utf-8", exclude_characters="\n\r", exclude_categories=["Cs"]),
    max_size=160,
).filter(lambda ln: not ln.lstrip().startswith(("```", "~~~")))


@st.composite
def prose_and_fences(draw: st.DrawFn) -> tuple[str, list[str]]:
    """Markdown of paragraphs (some long, some with no space to cut at) and fenced code blocks,
    and the code lines it holds, in order."""
    parts: list[str] = []
    code: list[str] = []
    for _ in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from(["prose", "run", "code", "diagrams"]))
        if kind == "prose":
            parts.append(" ".join(draw(st.lists(_PROSE, min_size=1, max_size=20))))
        elif kind == "run":
            parts.append(draw(st.sampled_from("xé字")) * draw(st.integers(1, 7000)))
        elif kind == "diagrams":
            # now and then more than one message has blocks for their links
            for k in range(draw(st.integers(1, 70))):
                lines = ["flowchart TD", f"  A{k} --> B{k}"]
                code += lines
                parts.append("\n".join(["```mermaid", *lines, "```"]))
        else:
            lines = draw(st.lists(_CODE_LINE, max_size=60))
            lines = lines * draw(st.integers(1, 5))  # now and then longer than one block
            code += lines
            lang = draw(st.sampled_from(["", "python", "ts"]))
            parts.append("\n".join([f"```{lang}", *lines, "```"]))
    return "\n\n".join(parts), code


@settings(max_examples=examples(60), deadline=None)
@given(prose_and_fences())
def test_splitting_loses_no_line_of_code_and_balances_every_piece(
    doc: tuple[str, list[str]],
) -> None:
    text, code = doc
    pieces = split_body(text)
    assert all(0 < len(p) <= BODY_BLOCK_CHARS for p in pieces)
    assert all(p.count("```") % 2 == 0 for p in pieces)
    assert code_lines(pieces) == code


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(prose_and_fences())
def test_any_answer_renders_within_slacks_limits(
    make_answer: MakeAnswer, doc: tuple[str, list[str]]
) -> None:
    msgs = render_answer(make_answer(doc[0]), feedback_key="C1:1.0")
    assert_within_limits(msgs)
    assert all(b.count("```") % 2 == 0 for b in markdown_texts(msgs))
    assert diagram_links(msgs) == [diagram.editor_link(s) for s in diagram.blocks(doc[0])]
    assert msgs[0].blocks and all(len(m.blocks) >= 2 for m in msgs[1:])
    assert msgs[-1].blocks[-1]["type"] == "actions"


# --- splitting at its edges (each found by `make mutate`) ----------------------------------------


def test_an_unclosed_indented_fence_is_closed_at_its_own_indent() -> None:
    assert split_body("Look:\n\n  ```python\n  x = 1") == ["Look:\n\n  ```python\n  x = 1\n  ```"]


def test_a_long_line_of_prose_is_cut_between_words() -> None:
    pieces = split_body(" ".join(["worker"] * 2000))  # 7 characters a word: no cut falls clean
    assert len(pieces) > 1 and all(set(p.split()) == {"worker"} for p in pieces)


def test_a_code_line_longer_than_a_block_keeps_every_character() -> None:
    line = "y" + " " * 4000 + "z"
    pieces = split_body(f"```\n{line}\n```")
    assert len(pieces) > 1 and "".join(code_lines(pieces)) == line


def test_a_paragraph_fills_a_piece_exactly_to_its_limit() -> None:
    lines = ["a" * 99] * 20  # ten lines joined by newlines are exactly 999 characters
    assert split_body("\n".join(lines), limit=999) == ["\n".join(lines[:10])] * 2


def test_a_runaway_info_string_keeps_only_the_language_on_every_piece() -> None:
    code = [f"x = {i}" for i in range(900)]
    pieces = split_body("```python " + "extra " * 30 + "\n" + "\n".join(code) + "\n```")
    assert len(pieces) > 1 and code_lines(pieces) == code
    assert all(p.startswith("```python\n") for p in pieces)


def test_context_text_counts_against_a_message() -> None:
    block = {"type": "context", "elements": [{"type": "mrkdwn", "text": "x" * 10}] * 3}
    assert block_chars(block) == 30


def test_a_diagram_that_may_not_draw_says_why(make_answer: MakeAnswer) -> None:
    source = "flowchart TD\n  A --> B\n  B -->"
    assert diagram.validate(source)
    msgs = render_answer(make_answer(f"The flow:\n\n```mermaid\n{source}\n```"))
    assert "it may not draw: line 3: cannot read node" in all_text(msgs[-1])


def test_chunks_that_fit_one_message_share_it_and_more_go_on(make_answer: MakeAnswer) -> None:
    para = [f"Part {k}. " + "The retry logic is careful. " * 100 for k in range(4)]
    # two blocks' worth fits one message; four (over 10,000 characters) need a second
    assert len(render_answer(make_answer("\n\n".join(para[:2])))) == 1
    msgs = render_answer(make_answer("\n\n".join(para)))
    assert len(msgs) == 2
    assert all(sum(block_chars(b) for b in m.blocks) <= MESSAGE_TEXT_BUDGET for m in msgs)


def _paragraph(k: int, size: int) -> str:
    """Prose of exactly `size` characters, one block on its own beside others of its size."""
    head = f"Part {k}."
    return head + (" retry" * size)[: size - len(head)]


def test_a_continuation_leaves_room_for_its_label_in_the_text_budget(
    make_answer: MakeAnswer,
) -> None:
    # Given four blocks that fill the first message to the budget exactly, then a second
    # message's worth that comes within a label's length of it (9,995 characters)
    sizes = [2_500] * 4 + [2_500] * 3 + [2_495] + [2_500]
    msgs = render_answer(make_answer("\n\n".join(_paragraph(k, n) for k, n in enumerate(sizes))))
    # Then no message, its continuation label included, goes over the budget
    assert len(msgs) == 3
    assert all(sum(block_chars(b) for b in m.blocks) <= MESSAGE_TEXT_BUDGET for m in msgs)
    assert_within_limits(msgs)


# --- many diagrams: the links and the footer kept within limits ---------------------------------


def _diagrams(n: int) -> str:
    return "\n\n".join(
        f"Flow {k}:\n\n```mermaid\nflowchart TD\n  A{k} --> B{k}\n```" for k in range(n)
    )


@pytest.mark.parametrize("n", [47, 48, 60, 200])
def test_many_diagrams_keep_every_message_within_limits_and_every_link(
    n: int, make_answer: MakeAnswer
) -> None:
    # Given an answer with more diagrams than one message has blocks for their links
    text = _diagrams(n)
    # When it is rendered
    msgs = render_answer(make_answer(text), feedback_key="C1:1.0")
    # Then every message is within limits and holds more than its continuation label
    assert_within_limits(msgs)
    assert all(len(m.blocks) >= 2 for m in msgs[1:]) and msgs[0].blocks
    assert msgs[0].blocks[0]["type"] == "markdown"
    # and every diagram's link is there once, in order, with the body's text all kept
    assert diagram_links(msgs) == [diagram.editor_link(s) for s in diagram.blocks(text)]
    assert "\n\n".join(markdown_texts(msgs)) == text
    # and the footer and the buttons close the last message, beside something else
    assert msgs[-1].blocks[-1]["type"] == "actions"
    assert "tool calls" in " ".join(texts(msgs[-1].blocks[-2]))
    assert len(msgs[-1].blocks) > 3 and not any(
        b["type"] == "actions" or "tool calls" in " ".join(texts(b))
        for m in msgs[:-1]
        for b in m.blocks
    )


# --- what Slack would refuse: a diagram too large to link, header notes without end -------------


def post_all(msgs: list[SlackMessage]) -> None:
    """Post every message to the fake Slack, which checks Block Kit's limits as Slack does."""
    with FakeSlack() as slack:
        slack.channels["C1"] = Channel(id="C1")
        client = WebClient(token="xoxb-test", base_url=slack.base_url, retry_handlers=[])
        for m in msgs:
            client.chat_postMessage(channel="C1", text=m.text, blocks=m.blocks)


def links_are_whole(msgs: list[SlackMessage]) -> bool:
    """Every `<…>` of the mrkdwn texts closed: a clipped link would leave a bare `<https…`."""
    for t in (
        t for m in msgs for b in m.blocks if b["type"] in ("section", "context") for t in texts(b)
    ):
        if re.sub(r"<[^<>]*>", "", t).count("<"):
            return False
    return True


def _big_diagram(nodes: int) -> str:
    """A flowchart whose labels do not compress, so its editor link grows with it."""
    rng = random.Random(nodes)
    lines = ["flowchart TD"]
    lines += [f"  N{k}[{rng.getrandbits(64):016x}] --> N{k + 1}" for k in range(nodes)]
    return "\n".join(lines)


@pytest.mark.parametrize("nodes", [150, 400])
def test_a_diagram_too_large_for_a_link_is_shown_whole_with_a_note(
    nodes: int, make_answer: MakeAnswer
) -> None:
    # Given an answer with a small diagram and one whose editor link is longer than Slack takes
    small, big = "flowchart LR\n  A --> B", _big_diagram(nodes)
    assert len(diagram.editor_link(big)) > TEXT_OBJECT_MAX
    text = f"Small:\n\n```mermaid\n{small}\n```\n\nBig:\n\n```mermaid\n{big}\n```"
    # When it is rendered
    msgs = render_answer(make_answer(text), feedback_key="C1:1.0")
    # Then the small one keeps its link, and no link is cut short anywhere
    assert diagram_links(msgs) == [diagram.editor_link(small)]
    assert links_are_whole(msgs)
    # and the big one says why it has no link and where its code can go
    notes = all_texts(msgs)
    assert "Diagram 2 is too large to open from a link" in notes
    assert f"<{diagram.EDITOR_HOME}|Mermaid Live>" in notes
    # and its code is all in the answer, line for line
    assert code_lines(markdown_texts(msgs)) == small.split("\n") + big.split("\n")
    assert_within_limits(msgs)
    post_all(msgs)


def test_a_diagram_that_may_not_draw_keeps_its_link_beside_a_long_reason(
    make_answer: MakeAnswer,
) -> None:
    # Given a diagram whose problem quotes a very long line, with a link near Slack's limit
    source = _big_diagram(90) + "\n  B --> " + "&<x" * 1500
    msgs = render_answer(make_answer(f"```mermaid\n{source}\n```"))
    # Then the reason is cut short, never the link
    assert diagram_links(msgs) == [diagram.editor_link(source)] and links_are_whole(msgs)
    assert "it may not draw" in all_texts(msgs)
    assert_within_limits(msgs)
    post_all(msgs)


def test_header_notes_for_many_repos_and_long_errors_stay_within_slacks_limits(
    make_answer: MakeAnswer,
) -> None:
    # Given an answer from a mirror that could not be refreshed for a very long reason, over
    # sixty work trees with changes left out, some of which could not be checked at all
    stale = StaleNote(sha=SHA, as_of=datetime(2025, 3, 1, tzinfo=UTC), reason="x&<y " * 2000)
    notes = [
        UncommittedNote(repo=f"repo{k}", sha=SHA, changed=k + 1, untracked=0,
                        error=("permission denied & more " * 300) if k % 2 else None)
        for k in range(64)
    ]  # fmt: skip
    body = "\n\n".join(_paragraph(k, 2_500) for k in range(3))
    msgs = render_answer(make_answer(body, stale=stale, uncommitted=notes), feedback_key="C1:1.0")
    # Then every message is one Slack takes
    assert_within_limits(msgs)
    assert links_are_whole(msgs)
    post_all(msgs)
    # and the first message opens with a bounded number of notes, then the answer's body
    first = msgs[0].blocks
    head = [b for b in first[: first.index(next(b for b in first if b["type"] == "markdown"))]]
    assert 2 <= len(head) <= HEAD_NOTES_MAX and all(b["type"] == "context" for b in head)
    assert sum(block_chars(b) for b in head) <= HEAD_CHARS
    # which still say the answer may be stale, name the first repos, and count the rest
    shown = " ".join(t for b in head for t in texts(b))
    assert "may be stale" in shown and "repo0:" in shown
    assert f"{64 - (HEAD_NOTES_MAX - 2)} more repositories" in shown
    assert "\n\n".join(markdown_texts(msgs)) == body


def test_the_footer_of_an_answer_over_many_repos_stays_whole(
    tmp_path: Path, make_answer: MakeAnswer
) -> None:
    # Given an answer read from sixty repositories, each on its own branch
    from codeask.workspace import Workspace

    snaps = []
    for k in range(60):
        (tmp_path / f"r{k}").mkdir()
        ref = RepoRef(f"service-{k}", f"https://github.com/acme/service-{k}.git")
        snaps.append(Snapshot(root=tmp_path / f"r{k}", sha=SHA, repo=ref))
    branch = ", ".join(f"service-{k}: release-2025-{k:02d}" for k in range(60))
    answer = make_answer("It is spread out.", snapshot=Workspace(snaps), branch=branch)
    # When it is rendered
    msgs = render_answer(answer, feedback_key="C1:1.0")
    # Then the footer fits its block with no link cut in half, and still says how it was made
    assert_within_limits(msgs)
    assert links_are_whole(msgs)
    post_all(msgs)
    foot = " ".join(texts(msgs[-1].blocks[-2]))  # the buttons come last
    assert "service-0@a3f9c21" in foot and "4 tool calls" in foot and "8.3 s" in foot
