"""Invitations stream (the owner's outbox) -> confirms: a new invitation gets exactly one confirm."""

from herald.coldstart import permanent_imports

with permanent_imports():
    from typing import Any

    from aws_lambda_powertools.utilities.typing import LambdaContext

    from herald.confirms.handlers import on_invitation_change
    from herald.observability import logger
    from herald.workers import process_stream


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return process_stream(event, context, on_invitation_change)
