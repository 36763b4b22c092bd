"""Record handlers of the turn queue's workers (stream outbox, janitor), called by thin entry points."""

from __future__ import annotations

from herald.dynamo import Image, from_image
from herald.observability import logger, metrics
from herald.settings import get_settings
from herald.turns.dynamo import agent_from_item, is_agent
from herald.turns.wiring import turn_service


def on_turns_change(old_image: Image | None, new_image: Image | None) -> None:
    """The turns table's stream is the outbox: a turn started (its agent's current turn changed) goes to
    the engine's queue. A later change while it runs (a message queued) does not send it again."""
    old, new = from_image(old_image), from_image(new_image)
    if new is None or not is_agent(new):
        return
    after = agent_from_item(new)
    before = agent_from_item(old) if old and is_agent(old) else None
    if after.turn is None or not after.undispatched or (before is not None and before.turn_id == after.turn_id):
        return
    if turn_service().dispatch(after.turn):
        logger.info("turn handed to the engine", session_id=after.session_id, agent=after.agent, turn_id=after.turn_id)


def repair_turns() -> dict[str, int]:
    repairs = turn_service().repair(get_settings().turns_janitor_grace_seconds * 1000)
    if repairs.redispatched:
        metrics.add_metric(name="TurnRedispatched", unit="Count", value=repairs.redispatched)
    if repairs.delivered:
        metrics.add_metric(name="TurnQueueDeliveredByJanitor", unit="Count", value=repairs.delivered)
    return {"redispatched": repairs.redispatched, "delivered": repairs.delivered}
