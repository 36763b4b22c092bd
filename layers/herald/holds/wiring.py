"""The holds' parts: their table, and the queues a held message goes back to."""

from __future__ import annotations

from herald.container import Container, part
from herald.fifo import FifoQueue
from herald.holds.dynamo import DynamoHoldStore
from herald.holds.models import HeldQueue
from herald.holds.service import Holds


@part
def holds(c: Container) -> Holds:
    queues = {
        HeldQueue.IM_PUSH: FifoQueue(c.settings.im_push_queue_url, c.clients.sqs),
        HeldQueue.EVENTS: FifoQueue(c.settings.events_queue_url, c.clients.sqs),
    }

    def requeue(queue: HeldQueue, body: str, group_id: str, dedup_id: str) -> None:
        queues[queue].send_raw(body, group_id, dedup_id)

    store = DynamoHoldStore(c.settings.holds_table, c.clients.dynamodb)
    return Holds(store, requeue, clock=c.clock, cache_ms=c.settings.pauses_cache_seconds * 1000)
