"""Status webhooks on the events table (herald.events.webhooks.rows)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pynamodb.exceptions import DeleteError

from herald.events.jobs import JobStatus
from herald.events.webhooks.models import StatusWebhook
from herald.events.webhooks.rows import HOOK, WEBHOOK_ITEM, WebhookRow, webhook_pk
from herald.tables import Database, condition_failed

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class DynamoWebhookStore:
    def __init__(self, table_name: str, client: DynamoDBClient | None = None) -> None:
        self._rows = Database(client).bind(WebhookRow, table_name)

    def get(self, service_id: str, tenant: str) -> StatusWebhook | None:
        try:
            return _webhook(self._rows.get(webhook_pk(service_id, tenant), HOOK, consistent_read=True))
        except self._rows.DoesNotExist:
            return None

    def put(self, webhook: StatusWebhook) -> None:
        self._rows(
            pk=webhook_pk(webhook.service_id, webhook.tenant),
            service_id=webhook.service_id,
            tenant=webhook.tenant or None,
            url=webhook.url,
            statuses={str(status) for status in webhook.statuses},
            secret=webhook.secret,
            previous_secret=webhook.previous_secret or None,
            previous_secret_until_ms=webhook.previous_secret_until_ms or None,
            created_at_ms=webhook.created_at_ms,
            updated_at_ms=webhook.updated_at_ms,
        ).save()

    def delete(self, service_id: str, tenant: str) -> bool:
        rows = self._rows
        try:
            rows(pk=webhook_pk(service_id, tenant)).delete(condition=rows.pk.exists())
        except DeleteError as error:
            if condition_failed(error):
                return False
            raise
        return True

    def all(self) -> list[StatusWebhook]:
        """Every webhook (an operator's listing: a scan of the table's webhook items)."""
        rows = self._rows
        return [_webhook(row) for row in rows.scan(rows.item_type == WEBHOOK_ITEM)]


def _webhook(row: WebhookRow) -> StatusWebhook:
    return StatusWebhook(
        service_id=row.service_id,
        tenant=row.tenant or "",
        url=row.url,
        statuses=frozenset(JobStatus(status) for status in row.statuses),
        secret=row.secret,
        created_at_ms=row.created_at_ms,
        updated_at_ms=row.updated_at_ms,
        previous_secret=row.previous_secret or "",
        previous_secret_until_ms=row.previous_secret_until_ms or 0,
    )
