"""The engine's turn queue (SQS FIFO): one message group per session and agent, deduplicated by turn id."""

from __future__ import annotations

from herald.fifo import FifoQueue
from herald.turns.models import Turn


class SqsTurnQueue(FifoQueue):
    def publish(self, turn: Turn) -> None:
        self.send(turn.to_message(), group_id=turn.group_id, dedup_id=turn.turn_id)
