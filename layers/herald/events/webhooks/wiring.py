"""The status webhooks' parts: their store (the events table), the queue of notices, and the poster, whose calls go
through the guarded callback transport under the owner callbacks' URL rules (providers.callback_http's
callback_url_policy, one for both) and total deadline."""

from __future__ import annotations

from typing import TYPE_CHECKING

from herald.container import Container, part
from herald.events.webhooks.dynamo import DynamoWebhookStore
from herald.events.webhooks.service import StatusWebhooks
from herald.events.webhooks.sqs import SqsNoticeQueue

if TYPE_CHECKING:
    from herald.callback_urls import UrlPolicy
    from herald.events.webhooks.service import WebhookPoster


@part
def webhook_store(c: Container) -> DynamoWebhookStore:
    return DynamoWebhookStore(c.settings.events_table, c.clients.dynamodb)


@part
def notice_queue(c: Container) -> SqsNoticeQueue:
    return SqsNoticeQueue(c.settings.event_webhooks_queue_url, c.clients.sqs)


@part
def status_webhooks(c: Container) -> StatusWebhooks:
    return StatusWebhooks(webhook_store(c), webhook_urls(c), clock=c.clock)


@part
def webhook_urls(c: Container) -> UrlPolicy:
    """Where a webhook may point: the owner callbacks' rules, checked at registration and again at every post."""
    from herald.providers.callback_http import callback_url_policy

    return callback_url_policy(c.settings)


@part
def webhook_poster(c: Container) -> WebhookPoster:
    from herald.events.webhooks.service import WebhookPoster
    from herald.providers.callback_http import GuardedTransport

    total_s = c.settings.owner_call_total_ms / 1000
    transport = GuardedTransport(webhook_urls(c), total_s=total_s, user_agent="Herald-Webhooks/1")
    return WebhookPoster(webhook_store(c), transport, clock=c.clock)
