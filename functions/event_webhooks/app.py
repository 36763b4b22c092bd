"""Status webhooks queue -> each notice posted to its partner's endpoint, signed; retried until a 2xx."""

from herald.coldstart import permanent_imports

with permanent_imports():
    from typing import Any

    from aws_lambda_powertools.utilities.typing import LambdaContext

    from herald.container import current
    from herald.events.webhooks.handlers import on_notice
    from herald.observability import logger, metrics
    from herald.workers import process_fifo


@logger.inject_lambda_context
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = current().settings
    return process_fifo(
        event,
        context,
        on_notice,
        queue_url=settings.event_webhooks_queue_url,
        dead_letter_queue_url=settings.event_webhooks_dlq_url,
        lag_metric="EventWebhooksQueueLag",
    )
