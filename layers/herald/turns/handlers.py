"""Record handlers of the turn queue's workers (stream outbox, janitor), called by thin entry points."""

from __future__ import annotations

from herald.container import current
from herald.dynamo import Image
from herald.observability import logger, metrics
from herald.turns.rows import agent_from_image
from herald.turns.wiring import turn_service


def on_turns_change(old: Image | None, new: Image | None) -> None:
    """The turns table's stream is the outbox: a turn started (its agent's current turn changed) goes to
    the engine's queue. A later change while it runs (a message queued) does not send it again."""
    after = agent_from_image(new) if new else None
    if after is None:
        return
    before = agent_from_image(old) if old else None
    if after.turn is None or not after.undispatched or (before is not None and before.turn_id == after.turn_id):
        return
    if turn_service().dispatch(after.turn):
        logger.info("turn handed to the engine", session_id=after.session_id, agent=after.agent, turn_id=after.turn_id)


def repair_turns() -> dict[str, int]:
    repairs = turn_service().repair(current().settings.turns_janitor_grace_seconds * 1000)
    if repairs.redispatched:
        metrics.add_metric(name="TurnRedispatched", unit="Count", value=repairs.redispatched)
    if repairs.delivered:
        metrics.add_metric(name="TurnQueueDeliveredByJanitor", unit="Count", value=repairs.delivered)
    if repairs.told:
        metrics.add_metric(name="ApprovalDecisionToldByJanitor", unit="Count", value=repairs.told)
    return {"redispatched": repairs.redispatched, "delivered": repairs.delivered, "told": repairs.told}
