"""Inbox stream -> `inbox_updated` pushes to every connection of the user; TTL removals leave the count."""

from herald.coldstart import permanent_imports

with permanent_imports():
    from typing import Any

    from aws_lambda_powertools.utilities.typing import LambdaContext

    from herald.inbox.handlers import on_inbox_change
    from herald.observability import logger
    from herald.workers import process_stream


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return process_stream(event, context, on_inbox_change)
