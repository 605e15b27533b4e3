"""moto_server whose DynamoDB requests each run alone, so a conditional write is atomic as in AWS."""

from __future__ import annotations

import threading
from typing import Any

from moto.dynamodb.responses import DynamoHandler
from moto.server import main

# moto checks a ConditionExpression and then writes, with no lock between, on a threaded
# server: two workers' "attribute_not_exists" puts of one key can both succeed when the machine
# is slow enough to switch threads between the check and the write. DynamoDB never lets both
# win, and the state store's "first or not" rests on that, so the fake must not either.
_one_at_a_time = threading.Lock()
_call_action = DynamoHandler.call_action


def _atomic(self: DynamoHandler) -> Any:
    with _one_at_a_time:
        return _call_action(self)


DynamoHandler.call_action = _atomic  # type: ignore[method-assign]

if __name__ == "__main__":
    main()
