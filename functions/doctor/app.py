"""One-off: run `codeask doctor` with the deployed function's settings, secrets, network and role."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from codeask.doctor import collect_checks, summary


def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    checks = collect_checks()
    return {
        "ok": all(c.ok for c in checks),
        "summary": summary(checks),
        "checks": [c.as_dict() for c in checks],
    }
