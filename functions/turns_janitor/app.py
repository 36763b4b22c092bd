"""Every minute: hand over turns the outbox missed, and deliver queues left waiting for an idle agent."""

from herald.coldstart import permanent_imports

with permanent_imports():
    from typing import Any

    from aws_lambda_powertools.utilities.typing import LambdaContext

    from herald.observability import logger, metrics
    from herald.turns.handlers import repair_turns


@logger.inject_lambda_context
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, int]:
    return repair_turns()
