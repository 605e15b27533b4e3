"""Slack Events API: verify, filter, deduplicate, queue, and answer Slack in milliseconds."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from codeask.lambdas import ack
from codeask.ops import logger, metrics


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return ack(event)
