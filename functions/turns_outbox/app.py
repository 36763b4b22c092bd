"""Turns table stream (the outbox) -> each started turn onto the engine's turn queue."""

from herald.coldstart import permanent_imports

with permanent_imports():
    from typing import Any

    from aws_lambda_powertools.utilities.typing import LambdaContext

    from herald.observability import logger, metrics
    from herald.turns.handlers import on_turns_change
    from herald.workers import process_stream


@logger.inject_lambda_context
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return process_stream(event, context, on_turns_change)
