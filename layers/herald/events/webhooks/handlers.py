"""Record handlers of the status webhooks: a job's stored change becomes a notice on the webhooks queue (called by
the events outbox), and the webhooks worker posts each notice, trying again with backoff until it gets a 2xx."""

from __future__ import annotations

import json

from herald.clock import now_ms
from herald.events.jobs import Job
from herald.events.webhooks.models import StatusNotice, notice_for
from herald.events.webhooks.service import WebhookNotDelivered, unasked
from herald.events.webhooks.wiring import notice_queue, webhook_poster, webhook_store
from herald.observability import logger, metrics
from herald.workers import PermanentFailure, QueueMessage, RetryLater

RETRY_FIRST_S, RETRY_MOST_S = 10, 900


def retry_in_s(receive_count: int) -> int:
    """How long a notice waits before its next post: 10 s, doubling, at most 15 min, so the queue's 30 receives span
    about six hours before it is dead-lettered (README states the figure; a test derives it from the template)."""
    return int(min(RETRY_MOST_S, RETRY_FIRST_S * 2 ** max(0, receive_count - 1)))


def on_job_change(before: Job | None, after: Job | None) -> None:
    """The events outbox's share for webhooks: queue the notice a job's stored change calls for, if its service's
    webhook asks for it (a notice queued for none cost three SQS requests and an invocation to throw away)."""
    notice = notice_for(before, after, now_ms())
    if notice is not None and unasked(webhook_store().get(notice.service_id, notice.tenant), notice) is None:
        notice_queue().publish(notice)


def on_notice(record: QueueMessage) -> None:
    try:
        notice = StatusNotice.from_message(json.loads(record.body))
    except ValueError as exc:
        raise PermanentFailure(f"malformed status notice: {exc}") from exc
    try:
        posted = webhook_poster().post(notice)
    except WebhookNotDelivered as exc:
        metrics.add_metric(name="EventWebhookRetried", unit="Count", value=1)
        raise RetryLater(str(exc), retry_in_s(record.receive_count)) from exc
    metrics.add_metric(name=f"EventWebhook_{posted}", unit="Count", value=1)
    logger.info("status notice", webhook_id=notice.webhook_id, status=str(notice.status), posted=str(posted))
