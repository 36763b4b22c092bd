"""The events dispatch queue (SQS FIFO): one message group per lane (a service, or one target of a service
ordering by target), so lanes run side by side. A message only says "this lane has work"; which job runs
next is decided from DynamoDB (see herald.events.dispatch)."""

from __future__ import annotations

from herald.events.nudges import Nudge
from herald.fifo import FifoQueue


class SqsDispatchQueue(FifoQueue):
    def publish(self, nudge: Nudge) -> None:
        self.send(nudge.to_message(), group_id=nudge.lane, dedup_id=nudge.dedup_id)
