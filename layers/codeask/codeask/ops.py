"""The one place that owns the powertools Logger, Metrics and Tracer, and the catalogue of metrics."""

from __future__ import annotations

import contextlib
import functools
import os
from enum import StrEnum
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit, single_metric

NAMESPACE = "Codeask"
logger = Logger(service="codeask")
metrics = Metrics(namespace=NAMESPACE, service="codeask")

# Every metric codeask emits: name -> (unit, the dimension it is split by, or None). The dashboard
# and the alarms in template.yaml may only name these; tests hold the two together.
CATALOGUE: dict[str, tuple[MetricUnit, str | None]] = {
    # the ack
    "QuestionsReceived": (MetricUnit.Count, None),
    "Refusals": (MetricUnit.Count, "Reason"),
    "DuplicateDeliveries": (MetricUnit.Count, None),
    "UnauthorizedRequests": (MetricUnit.Count, None),
    "AckErrors": (MetricUnit.Count, None),
    "AckLatency": (MetricUnit.Milliseconds, None),
    "FeedbackVotes": (MetricUnit.Count, "Vote"),
    # the worker, per answer
    "AnswersPosted": (MetricUnit.Count, None),
    "EndToEndLatency": (MetricUnit.Seconds, None),
    "SyncLatency": (MetricUnit.Milliseconds, None),
    "SyncFetches": (MetricUnit.Count, None),
    "ModelRounds": (MetricUnit.Count, None),
    "ToolCalls": (MetricUnit.Count, None),
    "InputTokens": (MetricUnit.Count, None),
    "OutputTokens": (MetricUnit.Count, None),
    "CacheReadTokens": (MetricUnit.Count, None),
    "CacheWriteTokens": (MetricUnit.Count, None),
    "EstimatedCostUSD": (MetricUnit.NoUnit, None),
    "UnverifiedPaths": (MetricUnit.Count, None),
    "AnswersWithUnverifiedPaths": (MetricUnit.Count, None),
    "Redactions": (MetricUnit.Count, "Kind"),  # the redaction marker's kind: jwt, private-key, …
    "ModelFallbacks": (MetricUnit.Count, None),
    "StoppedEarly": (MetricUnit.Count, None),
    "JobsSkipped": (MetricUnit.Count, None),
    "Errors": (MetricUnit.Count, "Kind"),
    # the warmer
    "MirrorAge": (MetricUnit.Seconds, "Repo"),
    "MirrorWarmFailures": (MetricUnit.Count, "Repo"),
    # the worker and the warmer: a mirror, snapshot, lock or state file found damaged and rebuilt
    "MirrorRepairs": (MetricUnit.Count, "Repo"),
}


class ErrorKind(StrEnum):
    """The Kind dimension of the Errors metric (the worker's error-rate alarm reads answer_failed)."""

    ANSWER_FAILED = "answer_failed"  # the thread got a failure message: nothing will retry it
    ANSWER_RETRY = "answer_retry"  # the record went back to the queue to be tried again


__all__ = ["CATALOGUE", "ErrorKind", "MetricUnit", "emit", "logger", "metrics", "span", "tracer"]


def emit(name: str, value: float, dimension: str | None = None) -> None:
    """Record one catalogued metric; a split metric goes out on its own with its dimension."""
    unit, dim_name = CATALOGUE[name]
    if dim_name is None:
        metrics.add_metric(name=name, unit=unit, value=value)
        return
    if dimension is None:
        raise ValueError(f"metric {name} is split by {dim_name}; give its value")
    with single_metric(
        name=name, unit=unit, value=value, namespace=NAMESPACE,
        default_dimensions={"service": "codeask", dim_name: dimension},
    ) as one:  # fmt: skip
        del one  # flushed on exit, separately from the batch: its dimension set differs


def span(name: str) -> Any:
    """An X-Ray subsegment on Lambda (sync, each model call, each tool call); elsewhere nothing."""
    if not os.environ.get("AWS_LAMBDA_FUNCTION_NAME") or os.environ.get(
        "POWERTOOLS_TRACE_DISABLED", ""
    ).lower() in ("1", "true"):
        return contextlib.nullcontext()
    return tracer().provider.in_subsegment(name)


@functools.cache
def tracer() -> Any:
    """The X-Ray tracer, made on first use: it costs ~0.5 s to import, which the ack must not pay."""
    from aws_lambda_powertools import Tracer

    return Tracer(service="codeask")
