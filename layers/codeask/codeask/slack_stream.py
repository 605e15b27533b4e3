"""An answer shown in its Slack thread while it is written: a Slack stream, else throttled edits."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from codeask.clients import SlackClient
from codeask.ops import logger
from codeask.render import body_markdown, render_partial
from codeask.state import StateStore, StreamMode, StreamRecord, StreamStatus

if TYPE_CHECKING:
    from codeask.holdback import Settled
    from codeask.job import Job

# How often what is new goes out; whatever arrives in between goes together. Slack's budgets are
# per method and per workspace, shared by every answer streaming at once; measured by `make
# bench` (bench/bench_stream.py) with answers written at 65 tokens/s for 13 s:
# - chat.appendStream is Tier 4 (100+ a minute): every 0.6 s draws no 429 for one answer (0.3 s
#   does); three at once draw a few whatever the interval, and see no more appends for it.
# - chat.update (the fallback) is Tier 3 (50+ a minute): every 2 s draws no 429 with two answers
#   at once (1 s: six, and no more edits seen: the budget, not the interval, sets the pace).
# Past that, a stream backs off on the 429s by itself (Retry-After, doubling) and stays slower.
APPEND_INTERVAL_S = 0.6
EDIT_INTERVAL_S = 2.0
BACKOFF_MAX_S = 10.0  # after 429s the interval doubles up to this; Retry-After is honoured too
# Beyond this much streamed text the reader waits for the finished answer, which continues in
# further messages; a message (and one chat.appendStream call) holds at most 12,000 characters.
STREAM_MAX_CHARS = 10_000
JOIN_TIMEOUT_S = 15.0


def _error(e: Exception) -> str:
    response = getattr(e, "response", None)
    if response is not None:
        try:
            return str(response["error"])
        except (KeyError, TypeError):
            pass
    return type(e).__name__


def _status(e: Exception) -> int:
    return int(getattr(getattr(e, "response", None), "status_code", 0) or 0)


def _retry_after(e: Exception) -> float:
    headers = getattr(getattr(e, "response", None), "headers", None) or {}
    try:
        return float(headers.get("Retry-After") or headers.get("retry-after") or 1)
    except ValueError:
        return 1.0


class SlackStream:
    """The holdback.AnswerSink for a Slack thread.

    The first settled words start a `chat.startStream` reply (its message takes the place of the
    "Looking into it…" placeholder, which goes), and later ones are appended at most every
    APPEND_INTERVAL_S. Where Slack refuses to stream, the placeholder itself is edited instead,
    at most every EDIT_INTERVAL_S. Sending happens on a thread of its own, so Slack's pace never
    holds up the model's. Every step is recorded in the job's state: a redelivered job finishes
    the message this one streamed into, never starts a second one.
    """

    def __init__(
        self,
        slack: SlackClient,
        store: StateStore,
        job: Job,
        placeholder_ts: str,
        *,
        previous: StreamRecord | None = None,
        posted: list[str] | None = None,
        append_interval_s: float = APPEND_INTERVAL_S,
        edit_interval_s: float = EDIT_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.slack, self.store, self.job = slack, store, job
        self.answer_ts = placeholder_ts  # where the finished answer goes
        self.posted = list(posted or [])  # the answer's continuation messages, from before
        self.clock = clock
        self.intervals = {StreamMode.STREAM: append_interval_s, StreamMode.EDITS: edit_interval_s}
        # A job that streamed before (and was redelivered) edits that message: never a new one.
        # Nor does one whose earlier attempt left continuation messages: a new stream message
        # would sort after them, and the answer's first part would be shown last.
        again = previous is not None or bool(self.posted)
        self.mode: StreamMode | None = StreamMode.EDITS if again else None
        self.previous = previous
        self.latest: Settled | None = None  # what the reader should see
        self.version = 0  # of `latest`; `shown_version` is the one sent
        self.shown_version = 0
        self.sent = ""  # the markdown the reader sees
        self.broken: str | None = None  # why Slack took no more of it
        self.closed = False
        self.backoff = 0.0
        self.next_at = 0.0
        self._cond = threading.Condition()
        self._sending = threading.Lock()
        self._pump: threading.Thread | None = None

    # -- the sink (called from the answering thread) -------------------------------------------

    def show(self, settled: Settled) -> None:
        if settled.done:
            return  # the finished answer is posted whole (render_answer) by the worker
        with self._cond:
            if self.closed or self.broken:
                return
            self.latest = settled
            self.version += 1
            self._cond.notify()
            if self._pump is None:
                self._pump = threading.Thread(target=self._run, name="slack-stream", daemon=True)
                self._pump.start()

    @property
    def started(self) -> bool:
        """Whether the reader is being shown the answer (so progress must not overwrite it)."""
        return self._pump is not None

    # -- the end (called from the answering thread) --------------------------------------------

    def recover(self) -> None:
        """Before answering again: finish whatever an earlier attempt left streaming."""
        prev = self.previous
        if prev is None:
            return
        if prev.status == StreamStatus.STARTING and prev.ts is None:
            prev.ts = self._orphan()
        if prev.ts is not None and prev.status in (StreamStatus.STARTING, StreamStatus.STREAMING):
            self._stop_quietly(prev.ts, None)
        if prev.ts is not None:
            if prev.replaced and prev.replaced != prev.ts:
                self._delete_quietly(prev.replaced)
            self.answer_ts = prev.ts
            self.store.record_stream(
                self.job.dedupe_key,
                StreamRecord(StreamMode.EDITS, StreamStatus.STOPPED, ts=prev.ts, shown=prev.shown,
                             note=prev.note),
                placeholder_ts=prev.ts,
            )  # fmt: skip

    def close(self) -> str:
        """Stop showing; returns the message the finished answer goes in."""
        with self._cond:
            self.closed = True
            self._cond.notify()
        if self._pump is None:
            return self.answer_ts
        self._pump.join(JOIN_TIMEOUT_S)
        with self._sending:  # no update of the pump's lands after this
            if self.broken is None and self.mode is not None:
                if self.mode == StreamMode.STREAM:
                    self._stop_quietly(self.answer_ts, None)
                self._record(StreamStatus.STOPPED)
        return self.answer_ts

    # -- the pump (its own thread) ---------------------------------------------------------------

    def _next(self) -> Settled | None:
        """Waits until there is something new to send and its time has come; None once closed."""
        with self._cond:
            while not self.closed:
                if self.version != self.shown_version:
                    delay = self.next_at - self.clock()
                    if delay <= 0:
                        self.shown_version = self.version
                        return self.latest
                    self._cond.wait(delay)
                else:
                    self._cond.wait()
            return None

    def _run(self) -> None:
        while (settled := self._next()) is not None:
            markdown = body_markdown(settled.text, settled.verification)
            if len(markdown) > STREAM_MAX_CHARS or markdown == self.sent:
                continue  # past what one message holds, the finished answer shows the rest
            with self._sending:
                if self.closed:
                    return
                try:
                    self._send(markdown)
                except Exception as e:  # noqa: BLE001 - Slack said no: back off, or end the stream
                    if not (_status(e) == 429 or _error(e) == "ratelimited"):
                        self._break(_error(e))
                        return
                    self.backoff = min(BACKOFF_MAX_S, max(2 * self.backoff, 1.0, _retry_after(e)))
                    self.next_at = self.clock() + self.backoff
                    # The budget is shared with other answers: stay slower for the rest of this
                    # one rather than knock again at the old pace.
                    if self.mode is not None:
                        self.intervals[self.mode] = max(self.intervals[self.mode], self.backoff)
                    with self._cond:
                        self.shown_version = -1  # send it again, after the pause
                    continue
            self.backoff = 0.0 if self.backoff <= 1.0 else self.backoff / 2
            assert self.mode is not None
            self.next_at = self.clock() + self.intervals[self.mode]

    def _send(self, markdown: str) -> None:
        if self.mode is None:
            self.mode = self._start(markdown)
            if self.mode == StreamMode.STREAM:
                return
        if self.mode == StreamMode.STREAM:
            if not markdown.startswith(self.sent):
                # A stream only grows; what would change what was shown waits for the finished
                # answer (the hold-back never gives this; the guard keeps it so).
                logger.warning("streamed text would change; waiting for the finished answer")
                return
            self.slack.chat_appendStream(
                channel=self.job.channel,
                ts=self.answer_ts,
                markdown_text=markdown[len(self.sent) :],
            )
        else:
            msg = render_partial(markdown)
            self.slack.chat_update(
                channel=self.job.channel, ts=self.answer_ts, text=msg.text, blocks=msg.blocks
            )
        self.sent = markdown

    def _start(self, markdown: str) -> StreamMode:
        """A stream of its own where Slack offers one (recorded before and after, so a crash
        in between still finds it); otherwise edits of the placeholder."""
        placeholder = self.answer_ts
        self.store.record_stream(
            self.job.dedupe_key,
            StreamRecord(StreamMode.STREAM, StreamStatus.STARTING, replaced=placeholder),
        )
        try:
            started = self.slack.chat_startStream(
                channel=self.job.channel,
                thread_ts=self.job.thread_ts,
                recipient_user_id=self.job.user,
                recipient_team_id=self.job.team_id,
                markdown_text=markdown,
            )
        except Exception as e:
            if _status(e) == 429 or _error(e) == "ratelimited":
                raise  # busy, not refused: the pump tries again after a pause
            logger.info("streaming refused; editing the placeholder", extra={"error": _error(e)})
            self.store.record_stream(
                self.job.dedupe_key, StreamRecord(StreamMode.EDITS, StreamStatus.STREAMING,
                                                  ts=placeholder)
            )  # fmt: skip
            return StreamMode.EDITS
        ts = str(started["ts"])
        self.answer_ts, self.sent = ts, markdown
        self.store.record_stream(
            self.job.dedupe_key,
            StreamRecord(StreamMode.STREAM, StreamStatus.STREAMING, ts=ts, replaced=placeholder),
            placeholder_ts=ts,
        )
        self._delete_quietly(placeholder)
        return StreamMode.STREAM

    def _break(self, why: str) -> None:
        """Slack took no more of the stream: end it with a line saying so, and record that."""
        self.broken = why
        logger.warning("streaming stopped by Slack", extra={"error": why})
        if self.mode == StreamMode.STREAM:
            self._stop_quietly(
                self.answer_ts, f"\n\n_(Slack stopped taking this answer here: `{why}`.)_"
            )
        self._record(StreamStatus.CUT, note=why)

    # -- helpers -------------------------------------------------------------------------------

    def _record(self, status: StreamStatus, *, note: str | None = None) -> None:
        try:
            self.store.record_stream(
                self.job.dedupe_key,
                StreamRecord(self.mode or StreamMode.EDITS, status, ts=self.answer_ts,
                             shown=self.sent, note=note),
            )  # fmt: skip
        except Exception as e:  # noqa: BLE001 - the message itself is recorded already
            logger.warning("stream state not recorded", extra={"error": type(e).__name__})

    def _stop_quietly(self, ts: str, line: str | None) -> None:
        try:
            args: dict[str, Any] = {"markdown_text": line} if line else {}
            self.slack.chat_stopStream(channel=self.job.channel, ts=ts, **args)
        except Exception as e:  # noqa: BLE001 - stopped already, or expired: either way it ended
            logger.info("stream stop refused", extra={"error": _error(e)})

    def _delete_quietly(self, ts: str) -> None:
        try:
            self.slack.chat_delete(channel=self.job.channel, ts=ts)
        except Exception as e:  # noqa: BLE001 - gone already; nothing to take back
            logger.info("placeholder not deleted", extra={"error": _error(e)})

    def _orphan(self) -> str | None:
        """The message a chat.startStream made before its attempt died unrecorded: ours, in the
        thread, after the placeholder, and not one of the answer's continuations."""
        try:
            replies = self.slack.conversations_replies(
                channel=self.job.channel, ts=self.job.thread_ts, limit=200
            )["messages"]
        except Exception as e:  # noqa: BLE001 - cannot look: nothing adopted, nothing lost
            logger.info("thread not read", extra={"error": _error(e)})
            return None
        ours = next((m for m in replies if m.get("ts") == self.answer_ts), None)
        if ours is None or not ours.get("bot_id"):
            return None
        later = [
            str(m["ts"]) for m in replies
            if m.get("bot_id") == ours["bot_id"] and float(m["ts"]) > float(self.answer_ts)
            and m["ts"] not in self.posted
        ]  # fmt: skip
        return later[0] if later else None
