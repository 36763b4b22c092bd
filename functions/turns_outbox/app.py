"""Turns table stream (the outbox) -> each started turn, and each approval's decision, onto the engine's turn queue;
each approval asked or decided into its confirm and inbox notification."""

from herald.coldstart import permanent_imports

with permanent_imports():
    from typing import Any

    from aws_lambda_powertools.utilities.typing import LambdaContext

    from herald.confirms.approvals.handlers import on_turns_record
    from herald.observability import logger, metrics
    from herald.workers import process_stream


@logger.inject_lambda_context
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return process_stream(event, context, on_turns_record)
