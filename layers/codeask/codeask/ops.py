"""The one place that owns the powertools Logger, Metrics and Tracer every function shares."""

from __future__ import annotations

import functools
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

logger = Logger(service="codeask")
metrics = Metrics(namespace="Codeask", service="codeask")

__all__ = ["MetricUnit", "logger", "metrics", "tracer"]


@functools.cache
def tracer() -> Any:
    """The X-Ray tracer, made on first use: it costs ~0.5 s to import, which the ack must not pay."""
    from aws_lambda_powertools import Tracer

    return Tracer(service="codeask")
