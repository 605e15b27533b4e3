"""What each Lambda wires together: settings, clients and the engine; handlers call one function here."""

from __future__ import annotations

import functools
import time
import uuid
from typing import Any

from codeask import clients
from codeask.errors import ConfigError
from codeask.job import Job
from codeask.ops import MetricUnit, logger, metrics
from codeask.secrets import with_secrets
from codeask.settings import Settings


@functools.cache
def settings() -> Settings:
    """Read once per container: environment, then Secrets Manager for what the environment lacks."""
    return with_secrets(Settings.from_env())


def _require(s: Settings, *names: str) -> None:
    missing = [n for n in names if not getattr(s, n)]
    if missing:
        raise ConfigError("missing settings: " + ", ".join(n.upper() for n in missing))


def _slack(s: Settings) -> Any:
    assert s.slack_bot_token is not None
    return clients.slack(s.slack_bot_token, s.slack_api_url)


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

    def refuse(reason: str, ev: dict[str, Any]) -> None:
        msg = render.render_failure(f"refused_{reason}")
        try:
            slack = _slack(s)
            if reason == "dm":
                slack.chat_postMessage(channel=ev["channel"], text=msg.text, blocks=msg.blocks)
            else:
                slack.chat_postEphemeral(
                    channel=ev["channel"], user=ev["user"], text=msg.text, blocks=msg.blocks,
                    thread_ts=ev.get("thread_ts"),
                )  # fmt: skip
        except Exception as e:  # noqa: BLE001 - the refusal stands even if telling them fails
            logger.warning("refusal reply failed", extra={"error": type(e).__name__})

    result = slack_ingress.handle(
        event,
        signing_secret=s.slack_signing_secret,
        config=s.bot_config,
        store=StateStore(s.table_name, clients.aws("dynamodb")),
        enqueue=enqueue,
        refuse=refuse,
    )
    outcome, _, why = result.outcome.partition(":")
    if result.job is not None:
        logger.append_keys(event_id=result.job.event_id, channel=result.job.channel,
                           thread_ts=result.job.thread_ts, user=result.job.user)  # fmt: skip
    if outcome == "queued":
        metrics.add_metric(name="QuestionsReceived", unit=MetricUnit.Count, value=1)
    elif outcome == "refused":
        metrics.add_metric(name=f"Refused_{why}", unit=MetricUnit.Count, value=1)
    elif outcome == "unauthorized":
        metrics.add_metric(name="UnauthorizedRequests", unit=MetricUnit.Count, value=1)
    elif outcome == "duplicate":
        metrics.add_metric(name="DuplicateDeliveries", unit=MetricUnit.Count, value=1)
    metrics.add_metric(name="AckLatency", unit=MetricUnit.Milliseconds,
                       value=(time.monotonic() - started) * 1000)  # fmt: skip
    logger.info("slack event", extra={"outcome": result.outcome, "status": result.status})
    return {"statusCode": result.status, "headers": result.headers, "body": result.body}


# -- answer_worker ------------------------------------------------------------------------------


def answer_record(record: dict[str, Any], context: Any) -> str:
    """One SQS record: raise to have it redelivered (and, after the last try, dead-lettered)."""
    from codeask import worker
    from codeask.mirror import MirrorStore
    from codeask.model import make_client
    from codeask.state import StateStore

    s = settings()
    _require(s, "slack_bot_token", "table_name", "bot_config")
    assert s.table_name is not None
    job = Job.from_json(record["body"])
    logger.append_keys(event_id=job.event_id, channel=job.channel, thread_ts=job.thread_ts,
                       user=job.user)  # fmt: skip
    remaining = context.get_remaining_time_in_millis() / 1000 if context else 300.0
    receives = int((record.get("attributes") or {}).get("ApproximateReceiveCount", "1"))
    outcome = worker.answer_job(
        job,
        settings=s,
        store=StateStore(s.table_name, clients.aws("dynamodb")),
        slack=_slack(s),
        mirrors=MirrorStore.from_settings(s),
        deadline=time.monotonic() + remaining - s.answer_margin_s,
        owner=getattr(context, "aws_request_id", None) or uuid.uuid4().hex,
        last_attempt=receives >= 3,
        model_client=(lambda: make_client(s)) if s.has_model else None,
    )
    metrics.add_metric(name=f"Jobs_{outcome.status}", unit=MetricUnit.Count, value=1)
    if outcome.answer is not None:
        metrics.add_metric(name="EndToEndLatency", unit=MetricUnit.Seconds,
                           value=max(0.0, time.time() - job.event_time))  # fmt: skip
    return outcome.status


def answer_batch(event: dict[str, Any], context: Any) -> dict[str, Any]:
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
        record_handler=lambda record: answer_record(record.raw_event, context),
        processor=processor,
        context=context,
    )


# -- mirror_warmer ------------------------------------------------------------------------------


def warm_all() -> dict[str, Any]:
    """Fetch every configured repo into its mirror; one failing repo does not stop the others."""
    from codeask.mirror import MirrorStore, RepoSpec

    s = settings()
    _require(s, "bot_config")
    assert s.bot_config is not None
    store = MirrorStore.from_settings(s)
    results: dict[str, str] = {}
    for name, entry in s.bot_config.repos.items():
        started = time.monotonic()
        try:
            sha = store.warm(RepoSpec.parse(entry.url, branch=entry.branch, name=name))
            results[name] = sha
            metrics.add_metric(name="MirrorWarmed", unit=MetricUnit.Count, value=1)
        except Exception as e:  # noqa: BLE001 - report it and carry on with the next repo
            results[name] = f"error: {type(e).__name__}: {str(e)[:200]}"
            metrics.add_metric(name="MirrorWarmFailed", unit=MetricUnit.Count, value=1)
            logger.warning("warm failed", extra={"repo": name, "error": results[name]})
        logger.info(
            "warmed", extra={"repo": name, "ms": round((time.monotonic() - started) * 1000)}
        )
    return {
        "repos": results,
        "failed": sorted(n for n, r in results.items() if r.startswith("error")),
    }
