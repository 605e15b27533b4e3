"""SQS jobs in, answers posted in their Slack threads; failing records are reported one by one."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from codeask.lambdas import answer_batch
from codeask.ops import logger, metrics, tracer


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
@tracer().capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return answer_batch(event, context)
