"""The engine's turn queue (SQS FIFO): one message group per session and agent, so an agent's turns and its
approvals' decisions arrive in order; each deduplicated by what it is (a turn's id, an approval's decision)."""

from __future__ import annotations

import hashlib

from herald.fifo import FifoQueue
from herald.turns.models import Approval, Turn


class SqsTurnQueue(FifoQueue):
    def publish(self, turn: Turn) -> None:
        self.send({"type": "turn", **turn.to_message()}, group_id=turn.group_id, dedup_id=turn.turn_id)

    def tell(self, approval: Approval) -> None:
        # Approval ids are the engine's, unique in a session: the decision's id names the tenant and session too.
        named = f"{approval.app_code}/{approval.session_id}/{approval.approval_id}/decided"
        dedup_id = hashlib.sha256(named.encode()).hexdigest()
        self.send(approval.decision_message(), group_id=approval.group_id, dedup_id=dedup_id)
