"""The hold-back: an answer shown while it is written, never a path before it is checked."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codeask.holdback import HoldBack, Settled, _show_limit, marked
from codeask.render import body_markdown
from codeask.snapshot import RepoRef, Snapshot
from codeask.verify import (
    _DIRECT_SUFFIX,
    _PHRASE_SUFFIX,
    SUFFIX_PREFIXES,
    UNVERIFIED_MARK,
    settled,
    verify_answer,
)
from conftest import examples
from fakes.billing import FILES

SHA = "a3f9c21" + "0" * 33
URL = "https://github.com/acme/billing.git"

# Answers that exercise everything the hold-back must get right: citations in every form the
# verifier knows, invented paths, mass mentions, Slack links, code spans, fences and a diagram.
ANSWERS = {
    "citations": (
        "Failed jobs are retried by `retry_job` (`billing/worker.py:6-11`), backing off "
        "2^attempt s (`billing/policy.py:4-5`).\n\n"
        "- `billing/worker.py:6` — the loop\n"
        "- lines 4-5 of `billing/policy.py`: the backoff\n"
        "- billing/worker.py (lines 7 to 9), billing/policy.py, line 2, and "
        "billing/worker.py#L3-L5.\n"
        "See README.md too."
    ),
    "invented": (
        "The ledger is posted in `billing/ledger.py:12` and billing/worker.py:60 is past the "
        "end; `billing/worker.py:6` is real. Also see billing/nope.py line 4, and `nope/x.py`."
    ),
    "mentions": (
        "Heads up <!channel> and @here, <!here|here> <!subteam^S0123|@devs> @everyone:\n"
        "retries live in `billing/worker.py:6` <!everyone> @channel."
    ),
    "code": (
        "It loops:\n\n```python\n# billing/worker.py:7\nfor attempt in range(n):\n"
        "    if x < y and y > z:\n        pass\n```\n\nand `docs/my notes.md` is not there.\n\n"
        '```mermaid\nflowchart TD\n  A["billing/worker.py:6"] --> B["billing/gone.py:3"]\n```\n'
        "Done, see <https://example.com/billing/worker.py|the file> and a < b; "
        "mail ops@acme.io or git@github.com:acme/billing.git."
    ),
    "backticks": (
        "``billing/worker.py`` vs `billing/worker.py` and ```inline```, then `Makefile:3`, "
        "`README.md:1`\nand an `unclosed one\nthen `billing/policy.py:5`."
    ),
}

_PING = re.compile(
    r"<\s*!\s*(?:channel|here|everyone|group|all|subteam)|(?<![\w@])@(?:channel|here|everyone)\b",
    re.IGNORECASE,
)


@pytest.fixture
def snap(tmp_path: Path) -> Snapshot:
    root = tmp_path / "repo"
    for rel, body in FILES.items():
        f = root / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(body)
    (root / "Makefile").write_text("all:\n\ttrue\n\ttrue\n")
    return Snapshot(root=root, sha=SHA, repo=RepoRef(name="billing", url=URL))


class Screen:
    """A sink that keeps what a reader would have seen after each update, as Slack shows it."""

    def __init__(self) -> None:
        self.states: list[str] = []
        self.settled: list[Settled] = []

    def show(self, settled: Settled) -> None:
        self.settled.append(settled)
        self.states.append(body_markdown(settled.text, settled.verification))


def splits(text: str, rng: random.Random) -> list[str]:
    """`text` cut at random places, from single characters to long runs."""
    pieces: list[str] = []
    i = 0
    while i < len(text):
        n = rng.choice((1, 1, 2, 3, 4, 7, 16))
        pieces.append(text[i : i + n])
        i += n
    return pieces


def stream(snap: Snapshot, pieces: list[str]) -> tuple[Screen, str]:
    screen = Screen()
    hold = HoldBack(snap, screen)
    for piece in pieces:
        hold.write(piece)
    return screen, hold.finish()


@pytest.mark.parametrize("name", list(ANSWERS))
def test_for_any_split_what_is_shown_only_grows_and_ends_as_the_posted_body(
    snap: Snapshot, name: str
) -> None:
    text = ANSWERS[name]
    final = body_markdown(text, verify_answer(text, snap))
    rng = random.Random(name)
    for trial in range(60):
        pieces = [*text] if trial == 0 else splits(text, rng)
        screen, kept = stream(snap, pieces)
        # Given any split, the answer kept is the text, and what the reader saw only ever grew
        assert kept == text
        for before, after in zip(screen.states, screen.states[1:], strict=False):
            assert after.startswith(before), (before, after)
        # and ended exactly as today's posted answer's body
        assert screen.states[-1] == final
        # and no state ever showed a live mass mention
        assert not any(_PING.search(state) for state in screen.states)


@pytest.mark.parametrize("name", list(ANSWERS))
def test_no_state_shows_an_unverified_reference_without_its_mark(snap: Snapshot, name: str) -> None:
    text = ANSWERS[name]
    full = verify_answer(text, snap)
    rng = random.Random(name + "marks")
    for trial in range(40):
        screen, _ = stream(snap, [*text] if trial == 0 else splits(text, rng))
        for part, state in zip(screen.settled[:-1], screen.states, strict=False):
            shown = len(part.text)
            # The settled part's mentions are exactly the finished answer's, in that part
            assert part.verification.mentions == [m for m in full.mentions if m.span[1] <= shown]
            for m in full.unverified:
                # an unverified reference is either not begun, or shown whole with its mark
                assert m.span[0] >= shown or m.span[1] <= shown
                if m.span[1] <= shown:
                    assert UNVERIFIED_MARK in state
        # and, read as a reader would, every shown invented path is followed by its mark
        for state in screen.states:
            for bad in ("billing/ledger.py", "billing/nope.py", "billing/gone.py", "nope/x.py"):
                for hit in re.finditer(re.escape(bad), state):
                    after = state[hit.end() : hit.end() + 40]
                    assert re.match(
                        r"[:\d\-L` ]*(?:line \d+)?`?\"?\]?\s?\(⚠️ unverified\)", after
                    ), state


def test_a_path_cut_mid_name_is_held_until_it_is_whole_and_checked(snap: Snapshot) -> None:
    screen = Screen()
    hold = HoldBack(snap, screen)
    # When the model has written up to the middle of a path
    for piece in ("Retries are in ", "`billing/wor"):
        hold.write(piece)
    # Then the words before it are shown, the path not at all
    assert screen.states[-1] == "Retries are in"
    # When the rest arrives and the next word shows its citation is complete
    for piece in ("ker.py:6", "` and", " more"):
        hold.write(piece)
    # Then it goes out linked at the SHA, exactly as the posted answer links it
    link = f"[billing/worker.py:6](https://github.com/acme/billing/blob/{SHA}/billing/worker.py#L6)"
    assert screen.states[-1] == f"Retries are in {link} and"


def test_an_invented_path_goes_out_only_with_its_mark(snap: Snapshot) -> None:
    screen = Screen()
    hold = HoldBack(snap, screen)
    for piece in ("The ledger is in `billing/led", "ger.py:12` ", "so"):
        hold.write(piece)
    assert screen.states == [
        "The ledger is in",
        f"The ledger is in `billing/ledger.py:12`{UNVERIFIED_MARK}",
    ]


def test_a_mermaid_block_is_held_until_it_closes_and_code_goes_a_line_at_a_time(
    snap: Snapshot,
) -> None:
    screen = Screen()
    hold = HoldBack(snap, screen)
    hold.write("Flow:\n\n```mermaid\nflowchart TD\n  A --> B\n")
    assert screen.states[-1] == "Flow:"
    hold.write("```\n\n```py\nx = 1\ny = ")
    assert screen.states[-1].endswith("A --> B\n```\n\n```py\nx = 1")


def test_rewind_forgets_unshown_text_and_refuses_once_some_was_shown(snap: Snapshot) -> None:
    screen = Screen()
    hold = HoldBack(snap, screen)
    hold.preface("_Stopped early._")
    start = hold.mark()
    hold.write("`billing/wor")  # nothing settled yet
    assert not hold.shown and hold.rewind(start)
    hold.write("Retries are in `billing/worker.py:6` and then")
    assert hold.shown and not hold.rewind(start)
    # and the preface came out first, with the answer's first words
    assert screen.states[0].startswith("_Stopped early._\n\nRetries are in")


def test_the_terminal_rendering_marks_the_same_places(snap: Snapshot) -> None:
    text = ANSWERS["invented"]
    out = marked(text, verify_answer(text, snap))
    assert "`billing/ledger.py:12` (⚠️ unverified) and billing/worker.py:60 (⚠️ unverified) is" in out
    assert "`billing/worker.py:6` is real" in out and out.count(UNVERIFIED_MARK) == 4


SUFFIXES = [
    ":6", ":L6", ":6-11", ":6–11", ":6 – 11", ":L6-L11", ":6:3", "`:6", "**:6", "#L6",
    "#L6C2", "#L6-L9", "#L6C1-L9C4", " (line 6)", " (lines 6-9)", " (lines 6 to 9)",
    ", line 6", " on line 6", " at lines 6 through 9", "** (Lines L6–L9)", "\t( line 6)",
]  # fmt: skip


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_every_beginning_of_a_line_suffix_counts_as_one_that_may_still_grow(suffix: str) -> None:
    # Given a suffix the verifier reads as a citation's lines
    whole = _DIRECT_SUFFIX.match(suffix) or _PHRASE_SUFFIX.match(suffix)
    assert whole is not None and whole.end() == len(suffix), suffix
    # Then each of its beginnings is still one that may grow into it
    for k in range(len(suffix) + 1):
        assert any(rx.fullmatch(suffix, 0, k) for rx in SUFFIX_PREFIXES), suffix[:k]


def test_a_path_is_settled_once_what_follows_cannot_be_its_line_suffix(snap: Snapshot) -> None:
    undecided = ["see billing/worker.py", "see billing/worker.py:", "see billing/worker.py (li",
                 "see billing/worker.py on line 6", "see `billing/worker.py"]  # fmt: skip
    for text in undecided:
        assert settled(text + "", snap)[0] == len("see"), text
    cut, v = settled("see billing/worker.py for it", snap)
    assert cut == len("see billing/worker.py for") and [m.text for m in v.mentions] == [
        "billing/worker.py"
    ]


# Pieces of answers, for texts that hit every rule of the settled check: paths with and without
# line suffixes, invented ones, code spans and fences (mermaid too), Slack links and lone `<`,
# phrase suffixes and prefixes, and lines long enough that the hold-back rechecks in steps.
_FRAGMENTS = [
    "Retries are in", " ", " ", "\n", "\n\n", "`", "``", "```", "```python\n", "```mermaid\n",
    "```\n", "billing/worker.py", ":6", ":6-11", "billing/policy.py", "#L4-L5", " (lines 4 to 5)",
    ", line 2", "lines 4-5 of ", "billing/nope.py:3", "README.md", "Makefile:2", "docs/x.md",
    "<https://example.com/billing/worker.py|the file>", "a < b", "> ", "<!here>", "- ",
    "the backoff doubles every attempt, as the policy computes it and the worker waits", ".",
    ", ", "(", ")", "**", "_", "worker.py", "x = 1", '  A["billing/worker.py:6"] --> B',
]  # fmt: skip


@settings(
    max_examples=examples(150),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    parts=st.lists(st.sampled_from(_FRAGMENTS), min_size=1, max_size=120),
    rng=st.randoms(use_true_random=False),
)
def test_each_update_settles_what_the_whole_text_check_settles(
    snap: Snapshot, parts: list[str], rng: random.Random
) -> None:
    # Given an answer streamed in arbitrary pieces
    text = "".join(parts)
    screen = Screen()
    hold = HoldBack(snap, screen)
    written, seen = "", 0
    for piece in splits(text, rng):
        hold.write(piece)
        written = (written + piece).lstrip()
        if len(screen.settled) > seen:
            # Then what it shows is what the check of the whole text so far settles
            state, seen = screen.settled[-1], len(screen.settled)
            available = written[: _show_limit(written)]
            cut, whole = settled(available, snap)
            assert state.text == available[:cut], (state.text, available)
            assert state.verification.mentions == whole.mentions
            # with the marks the verification of that text places
            assert state.marks == state.verification.marks(state.text)
    # And the finished answer is the text, shown whole
    assert hold.finish() == text.strip()
    assert screen.settled[-1].text == text.strip() and screen.settled[-1].done


def test_a_close_angle_bracket_lines_later_takes_back_nothing_settled(snap: Snapshot) -> None:
    # Given a `<` in prose, settled past because its line ended without a `>`
    first = "a < b\n- the worker then "
    cut, _ = settled(first, snap)
    assert cut > first.index("\n")
    # When a `-->` (a diagram arrow) arrives on a later line
    later, _ = settled(first + "hands it on -->", snap)
    # Then the `<` is still plain text: Slack's `<…>` never spans lines
    assert later >= cut
