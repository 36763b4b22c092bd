"""IM push queue -> Tencent IM `sendmsg`, once per push (retried with backoff; permanent failures to the DLQ)."""

from herald.coldstart import permanent_imports

with permanent_imports():
    from typing import Any

    from aws_lambda_powertools.utilities.typing import LambdaContext

    from herald.confirms.handlers import on_im_push
    from herald.container import current
    from herald.observability import logger, metrics
    from herald.workers import process_fifo


@logger.inject_lambda_context
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = current().settings
    return process_fifo(
        event,
        context,
        on_im_push,
        queue_url=settings.im_push_queue_url,
        dead_letter_queue_url=settings.im_push_dlq_url,
        lag_metric="ImPushQueueLag",
        groups_at_once=settings.im_push_groups_at_once,
    )
