"""The IM push queue (SQS FIFO): one message group per receiver, so a receiver's pushes stay in order."""

from __future__ import annotations

from herald.confirms.delivery import Push
from herald.fifo import FifoQueue


class SqsPushQueue(FifoQueue):
    def publish(self, push: Push, receiver_user_id: str, attempt: str = "") -> None:
        """`attempt` names an operator's deliberate resend, which SQS must not drop as a duplicate."""
        dedup_id = f"{push.dedup_id}:{attempt}" if attempt else push.dedup_id
        self.send(push.to_message(), group_id=f"{push.app_code}#{receiver_user_id}", dedup_id=dedup_id)
