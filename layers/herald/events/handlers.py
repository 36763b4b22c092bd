"""Record handlers of the external-event workers (stream outbox, dispatch queue), called by thin entry points."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable

from herald import budgets
from herald.dynamo import Image
from herald.events.drained import DrainResult
from herald.events.models import Lane
from herald.events.nudges import Nudge, nudges_for
from herald.events.rows import job_from_image
from herald.events.webhooks.handlers import on_job_change
from herald.events.wiring import (
    dispatch_queue,
    dispatcher,
    events_janitor,
    new_work_dispatcher,
    policy,
    waiting_queue,
)
from herald.holds.models import Held, Pause
from herald.holds.wiring import holds
from herald.observability import count_for_tenant, logger
from herald.tenants.models import TenantPaused
from herald.tenants.wiring import tenants
from herald.workers import PermanentFailure, QueueMessage, RetryLater

# A lane that keeps waiting (its service over its part of a shared app, its pace, a retry's backoff) is handed a
# fresh message after this many receives of one: waiting never spends the events queue's maxReceiveCount (30),
# which is for messages no worker can read.
FRESH_MESSAGE_AFTER_RECEIVES = 20


def on_events_change(old: Image | None, new: Image | None) -> None:
    """The events table's stream is the outbox: a new job, or a blocked one resolved, nudges its lane; a job that
    reached a status a webhook may ask for is told of on the webhooks queue."""
    before = job_from_image(old) if old else None
    after = job_from_image(new) if new else None
    for nudge in nudges_for(before, after):
        dispatch_queue().publish(nudge)
    on_job_change(before, after)  # a status its partner's webhook may ask for


def on_dispatch(record: QueueMessage, remaining_ms: Callable[[], int], waiting: bool = False) -> None:
    """One lane's jobs, each delivered for the tenant recorded with it when it was accepted. `waiting`: the record
    came from the waiting queue, where lanes crowded out wait (their app's next moments taken, their service over
    its part of a shared app); one crowded out in the events queue moves there, so new work (another partner's
    first card) never waits behind a backlog's lanes coming back for their turn: SQS hands out a FIFO queue's
    groups oldest first, and the backlog's are older."""
    try:
        lane = Nudge.lane_of(json.loads(record.body))
    except (ValueError, AttributeError) as exc:
        raise PermanentFailure(f"malformed dispatch message: {exc}") from exc
    if (pause := holds().pause_of(lane, Lane.parse(lane).service_id)) is not None:  # an operator's pause
        _hold_lane(lane, pause.scope, lambda: holds().in_force(pause.key))
        return
    try:
        drained = (dispatcher() if waiting else new_work_dispatcher()).drain(lane, remaining_ms)
    except TenantPaused as paused:  # held off its queue, untried, until the tenant is enabled or resumed again
        app_code, key = paused.app_code, paused.pause_key
        if key:
            _hold_lane(lane, Pause.scope_of(key), lambda: holds().in_force(key))
        else:
            _hold_lane(lane, Held.tenant_scope(app_code), lambda: not tenants().enabled_now(app_code))
        return
    if drained.result is DrainResult.WAITING:
        if drained.tenant:
            count_for_tenant("EventsRetriedByTenant", drained.tenant)
        if drained.crowded and not waiting:
            waiting_queue().publish(Nudge(lane, 0, f"crowded-{record.message_id}"))
            logger.info("crowded-out lane moved to the waiting queue", lane=lane, reason=drained.reason)
            return
        if record.receive_count >= FRESH_MESSAGE_AFTER_RECEIVES:  # this one is done; the fresh one waits on
            (waiting_queue() if waiting else dispatch_queue()).publish(Nudge(lane, 0, f"waits-on-{record.message_id}"))
            logger.info("lane waits on in a fresh message", lane=lane, receives=record.receive_count)
            return
        back_in_ms = drained.retry_in_ms
        if first_back := drained.first_back_ms:  # over its part: longer each time, spread over a third of the first
            spread = secrets.randbelow(first_back // 3 + 1)
            back_in_ms = policy().crowded_retry(back_in_ms, first_back, record.receive_count, spread)
        raise RetryLater(drained.reason, back_in_ms / 1000)
    if drained.result is DrainResult.OUT_OF_TIME:
        raise budgets.OutOfTime(drained.reason)  # back in the queue at once, untried
    logger.info("lane drained", lane=lane, result=str(drained.result))


def _hold_lane(lane: str, scope: str, still_paused: Callable[[], bool]) -> None:
    """The lane off its queue, held in `scope` (a disabled tenant's, an operator's pause) until it is resumed."""
    resume = json.dumps(Nudge(lane, 0, "resumed").to_message(), separators=(",", ":"))
    holds().hold(lambda now: Held.lane(scope, lane, resume, now), still_paused)
    logger.info("lane held", lane=lane, scope=scope)


def nudge_overdue_jobs() -> int:
    """The events janitor: a dispatch message for each side effect left behind by a worker that died."""
    nudges = events_janitor().nudge_overdue()
    for nudge in nudges:
        logger.info("overdue side effect nudged", lane=nudge.lane, seq=nudge.seq, why=nudge.why)
    return len(nudges)
