"""Scheduled: fetch every configured repository into its EFS mirror, so questions find them warm."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from codeask.lambdas import warm_all
from codeask.ops import logger, metrics


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return warm_all()
