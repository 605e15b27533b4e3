"""The worker: one queued question becomes exactly one reply in its thread, whatever fails on the way."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import StrEnum

from codeask.agent import Turn
from codeask.answer import Answer, ask
from codeask.botconfig import BotConfig, Refusal
from codeask.clients import SlackClient
from codeask.errors import CodeaskError, DiskFull
from codeask.job import Job
from codeask.mirror import MirrorStore, RepoSpec
from codeask.model import ModelClient
from codeask.ops import logger
from codeask.render import (
    Failure,
    SlackMessage,
    render_answer,
    render_failure,
    render_placeholder,
    render_progress,
)
from codeask.settings import Settings
from codeask.slack_stream import SlackStream
from codeask.state import StateStore, lease_s

PROGRESS_EDIT_INTERVAL_S = 4.0  # chat.update is a tier-3 method: stay far below ~50 a minute


class OutcomeStatus(StrEnum):
    """What became of one job (the worker's metrics are keyed by it)."""

    ANSWERED = "answered"
    REFUSED = "refused"  # no repo left that the channel may read
    SKIPPED = "skipped"  # answered already, or another live worker has it
    FAILED = "failed"  # the thread got an honest failure message instead


@dataclass
class Outcome:
    status: OutcomeStatus
    answer: Answer | None = None
    posted_ts: list[str] | None = None


class Progress:
    """Shows what the worker is doing: the assistant status where allowed, else throttled edits.
    Once the answer itself is being shown (`answering()`), progress keeps quiet."""

    def __init__(
        self,
        slack: SlackClient,
        channel: str,
        thread_ts: str,
        placeholder_ts: str,
        answering: Callable[[], bool] = lambda: False,
    ) -> None:
        self.slack, self.channel, self.thread_ts, self.placeholder_ts = (
            slack,
            channel,
            thread_ts,
            placeholder_ts,
        )
        self.answering = answering
        self.use_status = True
        self.last_edit = 0.0

    def __call__(self, step: str) -> None:
        if self.answering():
            return
        line = render_progress(step)
        try:
            if self.use_status:
                try:
                    self.slack.assistant_threads_setStatus(
                        channel_id=self.channel, thread_ts=self.thread_ts, status=line
                    )
                    return
                except Exception:  # noqa: BLE001 - not an assistant thread here: fall back to edits
                    self.use_status = False
            now = time.monotonic()
            if now - self.last_edit >= PROGRESS_EDIT_INTERVAL_S:
                self.last_edit = now
                # Blocks too: an update with text only would leave the old blocks showing.
                self.slack.chat_update(
                    channel=self.channel,
                    ts=self.placeholder_ts,
                    text=f"⏳ {line}",
                    blocks=[
                        {"type": "context", "elements": [{"type": "mrkdwn", "text": f"⏳ {line}"}]}
                    ],
                )
        except Exception as e:  # noqa: BLE001 - progress is decoration; it must never sink an answer
            logger.debug("progress update failed", extra={"error": type(e).__name__})


def _post(slack: SlackClient, channel: str, thread_ts: str, msg: SlackMessage) -> str:
    resp = slack.chat_postMessage(
        channel=channel,
        thread_ts=thread_ts,
        text=msg.text,
        blocks=msg.blocks,
        unfurl_links=False,
        unfurl_media=False,
    )
    return str(resp["ts"])


def _update(slack: SlackClient, channel: str, ts: str, msg: SlackMessage) -> None:
    slack.chat_update(channel=channel, ts=ts, text=msg.text, blocks=msg.blocks)


def _publish(
    slack: SlackClient,
    store: StateStore,
    job: Job,
    placeholder_ts: str,
    posted: list[str],
    msgs: list[SlackMessage],
) -> list[str]:
    """First message replaces the placeholder; the rest edit what an earlier attempt posted, or
    post. `posted` and the result are the continuation messages only, never the placeholder."""
    _update(slack, job.channel, placeholder_ts, msgs[0])
    out = list(posted)
    for i, msg in enumerate(msgs[1:]):
        if i < len(out):
            _update(slack, job.channel, out[i], msg)
        else:
            out.append(_post(slack, job.channel, job.thread_ts, msg))
            store.record_posts(job.dedupe_key, placeholder_ts, out)
    # An earlier attempt that needed more messages left some behind: they would read as a second
    # answer, so they go.
    keep = len(msgs) - 1
    for ts in out[keep:]:
        slack.chat_delete(channel=job.channel, ts=ts)
    if len(out) > keep:
        out = out[:keep]
        store.record_posts(job.dedupe_key, placeholder_ts, out)
    return out


def answer_job(
    job: Job,
    *,
    settings: Settings,
    store: StateStore,
    slack: SlackClient,
    mirrors: MirrorStore,
    deadline: float,
    owner: str,
    last_attempt: bool = False,
    model_client: Callable[[], ModelClient] | None = None,
    stream_slack: SlackClient | None = None,
) -> Outcome:
    """Answer `job` at most once. Unexpected errors propagate (SQS redelivers) unless this is the
    last attempt, in which case the thread gets an honest failure message instead of silence.

    The answer is shown while it is written (SlackStream, through `stream_slack`: a client that
    does not sit out 429s, since the stream backs off by itself); the finished answer then
    replaces what was shown."""
    key = job.dedupe_key
    state = store.start_answer(key, owner, stale_after_s=lease_s(settings.worker_timeout_s))
    if state is None:
        logger.info("job already answered or in hand", extra={"event_id": job.event_id})
        return Outcome(OutcomeStatus.SKIPPED)
    placeholder = state.placeholder_ts
    stream: SlackStream | None = None
    try:
        if placeholder is None:
            placeholder = _post(slack, job.channel, job.thread_ts, render_placeholder(job.text))
            store.record_posts(key, placeholder, state.posted_ts)
        stream = SlackStream(
            stream_slack or slack, store, job, placeholder, previous=state.stream,
            posted=state.posted_ts, append_interval_s=settings.stream_append_s,
            edit_interval_s=settings.stream_edit_s,
        )  # fmt: skip
        stream.recover()
        return _answer(
            job, settings, store, slack, mirrors, deadline, stream, state.posted_ts, model_client
        )
    except Exception as e:
        logger.exception("answer failed", extra={"event_id": job.event_id, "channel": job.channel})
        detail = str(e) if isinstance(e, CodeaskError) else None
        if stream is not None:
            placeholder = stream.close()  # the message the answer was going in
        if isinstance(e, CodeaskError) or last_attempt:
            # A clear, final failure: say so once and stop; nothing to gain from a redelivery.
            # A full disk is the bot's own trouble: its paths and sizes are for the logs.
            full = isinstance(e, DiskFull)
            failure = render_failure(
                Failure.DISK_FULL if full else Failure.ERROR, None if full else detail
            )
            if placeholder is None:
                placeholder = _post(slack, job.channel, job.thread_ts, failure)
            else:
                _update(slack, job.channel, placeholder, failure)
            store.finish_answer(key, [])
            return Outcome(OutcomeStatus.FAILED)
        store.release_answer(key, owner)
        raise


def _answer(
    job: Job,
    settings: Settings,
    store: StateStore,
    slack: SlackClient,
    mirrors: MirrorStore,
    deadline: float,
    stream: SlackStream,
    posted: list[str],
    model_client: Callable[[], ModelClient] | None,
) -> Outcome:
    placeholder = stream.answer_ts
    config = settings.bot_config
    if config is None:
        raise CodeaskError("codeask has no CODEASK_CONFIG any more")
    # The job's repos are what the ack saw; the channel's permission now is what counts. A job
    # queued before a permission was removed, or put on the queue by anything but the ack, must
    # not widen what the channel may read.
    entries = config.readable(job.channel, job.repos)
    names = [e.name for e in entries]
    if len(names) < len(job.repos):
        logger.warning(
            "job names repos its channel may not read",
            extra={"event_id": job.event_id, "channel": job.channel,
                   "refused_repos": len(job.repos) - len(names)},
        )  # fmt: skip
    if not names or not job.text.strip():
        msgs = [render_failure(Failure.EMPTY if names else Refusal.REPOS)]
        ts = _publish(slack, store, job, placeholder, posted, msgs)
        store.finish_answer(job.dedupe_key, ts)
        status = OutcomeStatus.ANSWERED if names else OutcomeStatus.REFUSED
        return Outcome(status, posted_ts=[placeholder, *ts])
    # Only the repos this channel may read, and of each only the part it may read (its scope):
    # nothing else is written to disk, searched, listed, read, named or cited.
    specs = [replace(RepoSpec.parse(e.url, branch=e.branch, name=e.name), scope=e.scope)
             for e in entries]  # fmt: skip
    scopes = ",".join(e.scope.fingerprint() for e in entries)
    history = [
        Turn(t["question"], t["answer"], t["sha"])
        for t in store.thread_turns(job.channel, job.thread_ts) or []
        if _turn_readable(config, job.channel, t, names)
    ]
    started = time.monotonic()
    answer = ask(
        job.text,
        specs,
        settings,
        store=mirrors,
        on_event=Progress(slack, job.channel, job.thread_ts, placeholder, lambda: stream.started),
        history=history,
        deadline=deadline,
        client=model_client() if model_client else None,
        sink=stream if settings.stream else None,
    )
    msgs = render_answer(answer, elapsed_s=time.monotonic() - started, feedback_key=job.dedupe_key)
    # The finished answer replaces what was shown while it was written, in the same message.
    placeholder = stream.close()
    extra = _publish(slack, store, job, placeholder, posted, msgs)
    info = {"question": job.text, "answer": answer.text, "repos": ",".join(names),
            "scopes": scopes, "sha": answer.snapshot.sha, "mode": answer.mode}  # fmt: skip
    store.finish_answer(job.dedupe_key, extra, info)
    store.add_turn(
        job.channel,
        job.thread_ts,
        {"question": job.text, "answer": answer.text, "sha": answer.snapshot.sha,
         "repos": ",".join(names), "scopes": scopes},
    )  # fmt: skip
    logger.info(
        "answered",
        extra={"event_id": job.event_id, "channel": job.channel, "thread_ts": job.thread_ts,
               "repo": ",".join(n for n in names), "sha": answer.snapshot.sha, "mode": answer.mode},
    )  # fmt: skip
    _prepare_next(mirrors, specs, answer, deadline)
    return Outcome(OutcomeStatus.ANSWERED, answer, [placeholder, *extra])


def _prepare_next(
    mirrors: MirrorStore, specs: list[RepoSpec], answer: Answer, deadline: float
) -> None:
    """With the answer posted, make the next commit's snapshot cheap (a spare of this one): the
    asker waits for nothing, and this warm worker's next question after a commit does not
    write the whole tree again. Only while the answer's own deadline has not passed: the time
    kept back after it is for posting, not for this."""
    for spec in specs:
        if time.monotonic() >= deadline:
            return
        part = answer.snapshot.parts.get(spec.name)
        if part is None:
            continue
        try:
            mirrors.prepare_next(spec, part)
        except Exception as e:  # noqa: BLE001 - an optimisation; the answer is already out
            logger.warning("no spare snapshot made", extra={"repo": spec.name,
                           "error": f"{type(e).__name__}: {str(e)[:200]}"})  # fmt: skip


def _turn_readable(config: BotConfig, channel: str, turn: dict[str, str], names: list[str]) -> bool:
    """An earlier turn reaches the model only if every repo it read is still readable here, and
    through a scope at least as wide: its answer quotes that code. A turn that does not say
    which repos it read is left out; one from before scopes existed read whole repos."""
    read = [r for r in str(turn.get("repos", "")).split(",") if r]
    scopes = turn.get("scopes")
    recorded = None if scopes is None else str(scopes).split(",")
    return bool(read) and set(read) <= set(names) and config.may_reread(channel, read, recorded)
