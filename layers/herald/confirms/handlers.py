"""Record handlers of the confirm workers (streams, queue, schedule), called by thin entry points."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from herald.confirms.delivery import PermanentDeliveryFailure, Push, RetryableDeliveryFailure, pushes_for
from herald.confirms.dynamo import ITEM_TYPE, confirm_from_item
from herald.confirms.role_invitation import project_invitation_change
from herald.confirms.wiring import confirms, delivery, push_queue
from herald.observability import logger, metrics
from herald.workers import PermanentFailure, RetryLater, backoff_seconds


def on_invitation_change(old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
    project_invitation_change(confirms(), old, new)


def on_confirm_change(old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
    """The confirms table's stream is the IM outbox: each push a change calls for goes on the queue."""
    if new is None or new.get("item_type") != ITEM_TYPE:
        return
    after = confirm_from_item(new)
    before = confirm_from_item(old) if old and old.get("item_type") == ITEM_TYPE else None
    for push in pushes_for(before, after):
        push_queue().publish(push, after.receiver_user_id)


def on_im_push(record: SQSRecord) -> None:
    try:
        push = Push.from_message(json.loads(record.body))
    except (ValueError, KeyError, TypeError) as exc:
        raise PermanentFailure(f"malformed push message: {exc}") from exc
    try:
        sent = delivery().deliver(push)
    except PermanentDeliveryFailure as exc:
        metrics.add_metric(name="ImPushFailed", unit="Count", value=1)
        raise PermanentFailure(str(exc)) from exc
    except RetryableDeliveryFailure as exc:  # hidden for a backoff grown by its own attempts, not its receives
        raise RetryLater(str(exc), backoff_seconds(exc.attempts)) from exc
    metrics.add_metric(name="ImPushDelivered", unit="Count", value=1)
    logger.info("im push done", confirm_id=push.confirm_id, kind=push.kind, already_sent=sent.status == "sent")


def settle_due_confirms() -> int:
    settled = confirms().settle_due()
    if settled:
        logger.info("janitor settled confirms", count=len(settled))
    return len(settled)
