"""The events dispatch queue (SQS FIFO): one message group per service. A message only says "this service
has work"; which job runs next is decided from DynamoDB (see herald.events.dispatch)."""

from __future__ import annotations

from herald.events.nudges import Nudge
from herald.fifo import FifoQueue


class SqsDispatchQueue(FifoQueue):
    def publish(self, nudge: Nudge) -> None:
        self.send(nudge.to_message(), group_id=nudge.service_id, dedup_id=nudge.dedup_id)
