"""What each Lambda wires together: settings, clients and the engine; handlers call one function here."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from codeask import clients
from codeask.botconfig import Refusal
from codeask.errors import ConfigError
from codeask.job import Job
from codeask.ops import ErrorKind, emit, logger, span
from codeask.secrets import with_secrets
from codeask.settings import Settings

NEVER_SYNCED_AGE_S = 10_000_000.0  # ~116 days: far past any stale-mirror threshold
SETTINGS_TTL_S = 300.0  # a rotated secret, or one put in after the first request, is picked up
_cached: tuple[float, Settings] | None = None

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from codeask.answer import Answer
    from codeask.mirror import Repair
    from codeask.slack_ingress import Ack


def settings() -> Settings:
    """Environment, then Secrets Manager for what the environment lacks; re-read every 5 minutes,
    and at once while a Slack secret is still missing (e.g. Slack verified the URL before the
    secrets were put in), so a warm container never keeps a bad start."""
    global _cached
    now = time.monotonic()
    incomplete = False
    if _cached is not None:
        s = _cached[1]
        incomplete = not (s.slack_signing_secret and s.slack_bot_token)
        if now - _cached[0] < SETTINGS_TTL_S and not incomplete:
            return s
    fresh = with_secrets(Settings.from_env(), force_fetch=incomplete)
    _cached = (now, fresh)
    return fresh


def reset_settings() -> None:
    """Forget the cached settings (tests change the environment between cases)."""
    global _cached
    _cached = None


def _require(s: Settings, *names: str) -> None:
    missing = [n for n in names if not getattr(s, n)]
    if missing:
        raise ConfigError("missing settings: " + ", ".join(n.upper() for n in missing))


def _slack(s: Settings, *, wait_out_429: bool = True) -> clients.SlackClient:
    assert s.slack_bot_token is not None
    return clients.slack(s.slack_bot_token, s.slack_api_url, wait_out_429=wait_out_429)


# -- slack_events: the ack ----------------------------------------------------------------------


def ack(event: dict[str, Any]) -> dict[str, Any]:
    """API Gateway HTTP API event in, HTTP response out, in milliseconds."""
    from codeask import render, slack_ingress
    from codeask.state import StateStore

    started = time.monotonic()
    s = settings()
    _require(s, "slack_signing_secret", "slack_bot_token", "queue_url", "table_name", "bot_config")
    assert s.slack_signing_secret and s.queue_url and s.table_name and s.bot_config
    sqs = clients.aws("sqs")

    def enqueue(job: Job) -> None:
        sqs.send_message(QueueUrl=s.queue_url, MessageBody=job.to_json())

    def refuse(reason: Refusal, ev: dict[str, Any]) -> None:
        msg = render.render_failure(reason)
        try:
            slack = _slack(s)
            if reason == Refusal.DM:
                slack.chat_postMessage(channel=ev["channel"], text=msg.text, blocks=msg.blocks)
            else:
                slack.chat_postEphemeral(
                    channel=ev["channel"], user=ev["user"], text=msg.text, blocks=msg.blocks,
                    thread_ts=ev.get("thread_ts"),
                )  # fmt: skip
        except Exception as e:  # noqa: BLE001 - the refusal stands even if telling them fails
            logger.warning("refusal reply failed", extra={"error": type(e).__name__})

    store = StateStore(s.table_name, clients.aws("dynamodb"))
    if str(event.get("rawPath", "")).endswith("/slack/interactivity"):
        result = slack_ingress.handle_interaction(
            event, signing_secret=s.slack_signing_secret, config=s.bot_config, store=store,
            actions=render.FEEDBACK_ACTIONS,
        )  # fmt: skip
    else:
        result = slack_ingress.handle(
            event,
            signing_secret=s.slack_signing_secret,
            config=s.bot_config,
            store=store,
            enqueue=enqueue,
            refuse=refuse,
        )
    if result.job is not None:
        logger.append_keys(event_id=result.job.event_id, channel=result.job.channel,
                           thread_ts=result.job.thread_ts, user=result.job.user)  # fmt: skip
    _ack_metrics(result)
    emit("AckLatency", (time.monotonic() - started) * 1000)
    why = {"refusal": result.refusal, "ignored": result.ignored, "vote": result.vote}
    logger.info(
        "slack event",
        extra={"outcome": result.outcome, "status": result.status,
               **{k: v for k, v in why.items() if v is not None}},
    )  # fmt: skip
    return {"statusCode": result.status, "headers": result.headers, "body": result.body}


def _ack_metrics(result: Ack) -> None:
    from codeask.slack_ingress import AckOutcome

    match result.outcome:
        case AckOutcome.QUEUED:
            emit("QuestionsReceived", 1)
        case AckOutcome.REFUSED:
            emit("Refusals", 1, result.refusal)
        case AckOutcome.UNAUTHORIZED:
            emit("UnauthorizedRequests", 1)
        case AckOutcome.DUPLICATE:
            emit("DuplicateDeliveries", 1)
        case AckOutcome.ERROR:
            emit("AckErrors", 1)
        case AckOutcome.VOTE:
            emit("FeedbackVotes", 1, result.vote)


# -- answer_worker ------------------------------------------------------------------------------


def answer_record(record: SQSRecord, context: LambdaContext | None) -> str:
    """One SQS record: raise to have it redelivered (and, after the last try, dead-lettered)."""
    from codeask import worker
    from codeask.mirror import MirrorStore
    from codeask.model import make_client
    from codeask.state import StateStore, check_worker_timeout
    from codeask.worker import OutcomeStatus

    s = settings()
    _require(s, "slack_bot_token", "table_name", "bot_config")
    assert s.table_name is not None
    job = Job.from_json(record.body)
    logger.append_keys(event_id=job.event_id, channel=job.channel, thread_ts=job.thread_ts,
                       user=job.user)  # fmt: skip
    remaining = context.get_remaining_time_in_millis() / 1000 if context else 300.0
    check_worker_timeout(s.worker_timeout_s, remaining)
    with span("job"), _counted_failure():
        outcome = worker.answer_job(
            job,
            settings=s,
            store=StateStore(s.table_name, clients.aws("dynamodb")),
            slack=_slack(s),
            mirrors=MirrorStore.from_settings(s, on_repair=_repaired),
            deadline=time.monotonic() + remaining - s.answer_margin_s,
            owner=(context.aws_request_id if context else None) or uuid.uuid4().hex,
            last_attempt=_receives(record) >= s.max_receives,
            model_client=(lambda: make_client(s)) if s.has_model else None,
            stream_slack=_slack(s, wait_out_429=False),
        )
    if outcome.status == OutcomeStatus.SKIPPED:
        emit("JobsSkipped", 1)
    elif outcome.status == OutcomeStatus.REFUSED:
        emit("Refusals", 1, Refusal.REPOS)
    elif outcome.status == OutcomeStatus.FAILED:
        emit("Errors", 1, ErrorKind.ANSWER_FAILED)
    if outcome.answer is not None:
        _answer_metrics(outcome.answer, job)
    return outcome.status


def _receives(record: SQSRecord) -> int:
    """How often SQS has handed this record out, this time included (1 if it does not say)."""
    try:
        return int(record.attributes.approximate_receive_count)
    except KeyError:
        return 1


@contextlib.contextmanager
def _counted_failure() -> Iterator[None]:
    """A record that fails and goes back to the queue is counted: Lambda itself does not see it."""
    try:
        yield
    except Exception:
        emit("Errors", 1, ErrorKind.ANSWER_RETRY)
        raise


def _answer_metrics(ans: Answer, job: Job) -> None:
    """One answer's figures: what the dashboard's latency, cost and trust widgets are made of."""
    logger.append_keys(repo=ans.snapshot.repo.name, sha=ans.snapshot.sha)
    usage = ans.usage
    emit("AnswersPosted", 1)
    emit("EndToEndLatency", max(0.0, time.time() - job.event_time))
    emit("SyncLatency", ans.timings_ms.get("sync", 0.0))
    emit("SyncFetches", 1 if ans.fetched else 0)
    emit("ModelRounds", usage.get("rounds", 0))
    emit("ToolCalls", ans.tool_calls)
    emit("InputTokens", usage.get("input_tokens", 0))
    emit("OutputTokens", usage.get("output_tokens", 0))
    emit("CacheReadTokens", usage.get("cache_read_tokens", 0))
    emit("CacheWriteTokens", usage.get("cache_write_tokens", 0))
    emit("EstimatedCostUSD", usage.get("cost_usd", 0.0))
    unverified = len(ans.verification.unverified)
    emit("UnverifiedPaths", unverified)
    emit("AnswersWithUnverifiedPaths", 1 if unverified else 0)
    for kind, count in sorted(ans.redactions.items()):
        emit("Redactions", count, kind)
    emit("ModelFallbacks", 1 if ans.model_fallback else 0)
    emit("StoppedEarly", 1 if ans.stopped_early else 0)


def answer_batch(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """SQS batch in, ReportBatchItemFailures response out: only failing records come back."""
    from aws_lambda_powertools.utilities.batch import (
        BatchProcessor,
        EventType,
        process_partial_response,
    )

    # Report even an all-failed batch item by item: SQS then redelivers just those, the same way.
    processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
    return process_partial_response(  # type: ignore[return-value]
        event=event,
        record_handler=lambda record: answer_record(record, context),
        processor=processor,
        context=context,
    )


def _repaired(repair: Repair) -> None:
    """Damage a sync found and rebuilt (a mirror, snapshot, lock or state file): counted per repo."""
    emit("MirrorRepairs", 1, repair.repo)
    logger.warning(
        "repaired", extra={"repo": repair.repo, "what": repair.what, "reason": repair.reason}
    )


# -- mirror_warmer ------------------------------------------------------------------------------


def warm_all() -> dict[str, Any]:
    """Fetch every configured repo into its mirror; one failing repo does not stop the others."""
    from codeask.mirror import MirrorStore, RepoSpec

    s = settings()
    _require(s, "bot_config")
    assert s.bot_config is not None
    store = MirrorStore.from_settings(s, on_repair=_repaired)
    results: dict[str, str] = {}
    for name, entry in s.bot_config.repos.items():
        started = time.monotonic()
        spec = None
        try:
            spec = RepoSpec.parse(entry.url, branch=entry.branch, name=name)
            results[name] = store.warm(spec)
        except Exception as e:  # noqa: BLE001 - report it and carry on with the next repo
            results[name] = f"error: {type(e).__name__}: {str(e)[:200]}"
            emit("MirrorWarmFailures", 1, name)
            logger.warning("warm failed", extra={"repo": name, "error": results[name]})
        synced = store.last_synced_at(spec) if spec is not None else None
        # A repo that never synced is as stale as it gets: the stale-mirror alarm must see it.
        age = NEVER_SYNCED_AGE_S if synced is None else max(0.0, time.time() - synced.timestamp())
        emit("MirrorAge", age, name)
        logger.info(
            "warmed", extra={"repo": name, "ms": round((time.monotonic() - started) * 1000)}
        )
    return {
        "repos": results,
        "failed": sorted(n for n, r in results.items() if r.startswith("error")),
    }
