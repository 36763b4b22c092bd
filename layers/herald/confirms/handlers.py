"""Record handlers of the confirm workers (streams, queue, schedule), called by thin entry points."""

from __future__ import annotations

import json
from collections.abc import Callable

from herald.confirms.delivery import (
    DeliveryPaced,
    PermanentDeliveryFailure,
    Push,
    RetryableDeliveryFailure,
    pushes_for,
)
from herald.confirms.rows import confirm_from_image
from herald.confirms.wiring import confirms, delivery_for, push_queue
from herald.dynamo import Image
from herald.holds.models import Held
from herald.holds.wiring import holds
from herald.observability import count_for_tenant, logger, metrics
from herald.tenants.models import TenantPaused
from herald.tenants.wiring import tenants
from herald.workers import PermanentFailure, QueueMessage, RetryLater, backoff_seconds


def on_invitation_change(old: Image | None, new: Image | None) -> None:
    """The invitations table's stream is the role-invitation business's outbox: each change of an invitation is
    projected into its confirm (herald.confirms.role_invitation; claims and grants are not invitations)."""
    from herald.confirms.role_invitation import project_invitation_change
    from herald.invitations.dynamo import invitation_from_image

    invitation = invitation_from_image(new) if new else None
    if invitation is not None:
        project_invitation_change(confirms(), invitation_from_image(old) if old else None, invitation)


def on_confirm_change(old: Image | None, new: Image | None) -> None:
    """The confirms table's stream is the IM outbox: each push a change calls for goes on the queue."""
    after = confirm_from_image(new) if new else None
    if after is None:
        return
    before = confirm_from_image(old) if old else None
    for push in pushes_for(before, after):
        push_queue().publish(push, after.receiver_user_id)


def on_im_push(record: QueueMessage) -> None:
    try:
        push = Push.from_message(json.loads(record.body))
    except (ValueError, KeyError, TypeError) as exc:
        raise PermanentFailure(f"malformed push message: {exc}") from exc
    if (pause := holds().pause_of_tenant(push.app_code)) is not None:  # an operator's `confirms pause`
        _hold_push(push, record, pause.scope, lambda: holds().in_force(pause.key))
        return
    try:
        sent = delivery_for()(push.app_code).deliver(push)
    except TenantPaused:  # held off its queue, untried, until the tenant is enabled again
        app_code = push.app_code
        _hold_push(push, record, Held.tenant_scope(app_code), lambda: not tenants().enabled_now(app_code))
        return
    except PermanentDeliveryFailure as exc:
        metrics.add_metric(name="ImPushFailed", unit="Count", value=1)
        count_for_tenant("ImPushFailedByTenant", push.app_code)
        raise PermanentFailure(str(exc)) from exc
    except RetryableDeliveryFailure as exc:  # hidden for a backoff grown by its own attempts, not its receives
        count_for_tenant("ImPushRetriedByTenant", push.app_code)
        raise RetryLater(str(exc), backoff_seconds(exc.attempts)) from exc
    except DeliveryPaced as exc:  # waits for Tencent IM's pace: no attempt counted
        metrics.add_metric(name="ImPushPaced", unit="Count", value=1)
        raise RetryLater(str(exc), exc.delay_ms / 1000) from exc
    metrics.add_metric(name="ImPushDelivered", unit="Count", value=1)
    logger.info("im push done", confirm_id=push.confirm_id, kind=push.kind, already_sent=sent.status == "sent")


def _hold_push(push: Push, record: QueueMessage, scope: str, still_paused: Callable[[], bool]) -> None:
    """The push off its queue, held in `scope` (a disabled tenant's, an operator's pause) until it is resumed."""
    metrics.add_metric(name="ImPushHeld", unit="Count", value=1)
    held = holds().hold(
        lambda now: Held.push(scope, record.body, record.group_id, record.message_id, record.sent_ms, now),
        still_paused,
    )
    logger.info("im push held", confirm_id=push.confirm_id, scope=scope, held=held.key)


def settle_due_confirms() -> int:
    """One janitor pass, inside the invocation's time (the entry point sets `budgets.invocation`)."""
    done = confirms().settle_due()
    for confirm_id, error in done.failed:
        logger.error("janitor could not settle a confirm", confirm_id=confirm_id, error=error)
    if done.settled or done.waiting or done.out_of_time:
        logger.info(
            "janitor pass",
            settled=len(done.settled),
            waiting_on_owner=len(done.waiting),
            failed=len(done.failed),
            out_of_time=done.out_of_time,
        )
    return len(done.settled)
