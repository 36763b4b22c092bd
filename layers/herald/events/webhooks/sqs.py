"""The status webhooks queue (SQS FIFO): one message group per service and tenant, so each endpoint's notices go
in order and a slow or dead endpoint holds back only its own; deduplicated by the notice's `webhook-id`."""

from __future__ import annotations

from herald.events.webhooks.models import StatusNotice
from herald.fifo import FifoQueue


class SqsNoticeQueue(FifoQueue):
    def publish(self, notice: StatusNotice) -> None:
        group = f"{notice.service_id}#{notice.tenant}"
        self.send(notice.to_message(), group_id=group, dedup_id=notice.webhook_id)
