"""Events dispatch queue (new work) and waiting queue (lanes crowded out) -> each service's jobs, in receive
order, as Feishu cards."""

from herald.coldstart import permanent_imports

with permanent_imports():
    from typing import Any

    from aws_lambda_powertools.utilities.typing import LambdaContext

    from herald.container import current
    from herald.events.handlers import on_dispatch
    from herald.observability import logger, metrics
    from herald.workers import from_queue, process_fifo


@logger.inject_lambda_context
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = current().settings
    waiting = from_queue(event, settings.events_waiting_queue_url)  # a batch is one mapping's: one queue's
    return process_fifo(
        event,
        context,
        lambda record: on_dispatch(record, context.get_remaining_time_in_millis, waiting),
        queue_url=settings.events_waiting_queue_url if waiting else settings.events_queue_url,
        dead_letter_queue_url=settings.events_waiting_dlq_url if waiting else settings.events_dlq_url,
        lag_metric="EventsWaitingQueueLag" if waiting else "EventsQueueLag",
        groups_at_once=settings.events_groups_at_once,
    )
