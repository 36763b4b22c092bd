"""The turns table's stream, for approvals: what its records of approvals mean to the person and the engine."""

from __future__ import annotations

from herald.dynamo import Image
from herald.observability import logger
from herald.turns.handlers import on_turns_change
from herald.turns.models import Approval
from herald.turns.rows import approval_from_image
from herald.turns.wiring import turn_service


def on_turns_record(old: Image | None, new: Image | None) -> None:
    """One record of the turns table's stream (the outbox): an approval's, or any other (the turn queue's own)."""
    approval = approval_from_image(new) if new else None
    if approval is None:
        on_turns_change(old, new)
        return
    on_approval_change(approval_from_image(old) if old else None, approval)


def on_approval_change(before: Approval | None, approval: Approval) -> None:
    """Asked: its confirm and notification (again, if the request made them). Decided: the engine is told, the
    confirm follows and the notification is read. The record that marks it told changes nothing of this. (The
    confirm and inbox parts are loaded only for an approval's record: a batch of turns starts without them.)"""
    from herald.confirms.approvals.wiring import approval_projection

    if before is not None and before.status is approval.status:
        return
    if approval.untold and turn_service().tell(approval):
        logger.info(
            "approval decision handed to the engine", approval_id=approval.approval_id, decision=approval.status
        )
    approval_projection().project(approval)
