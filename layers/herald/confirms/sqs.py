"""The IM push queue (SQS FIFO): one message group per receiver, so a receiver's pushes stay in order."""

from __future__ import annotations

from herald.confirms.delivery import Push
from herald.fifo import FifoQueue


class SqsPushQueue(FifoQueue):
    def publish(self, push: Push, receiver_user_id: str) -> None:
        self.send(push.to_message(), group_id=f"{push.app_code}#{receiver_user_id}", dedup_id=push.dedup_id)
