"""The confirms tables' items, as PynamoDB models (the stores that write them are `dynamo`).

Confirms table items (`item_type`):
* `confirm` — `pk = CFM#<app>#<confirm_id>`; GSI `by_pair` (`pair_key = <app>#<lo user>#<hi user>`,
  `pair_sort = <created_at_ms>#<confirm_id>`) lists a conversation newest first; sparse GSI `by_due`
  (`due_shard`, `due_at_ms`) holds only open confirms, keyed by when they next need the janitor;
* `confirm_source` — `pk = SRC#<app>#<source_name>#<source_event_id>`, written in one transaction with its
  confirm, so an owner event projected twice creates one confirm;
* `confirm_business` — `pk = BIZ#<app>#<business_type>#<business_id>`, written in the same transaction: one
  confirm per business id, and the way an owner finds it again (cancel by business id).
The table's stream is the IM outbox. Deliveries live in their own table (no stream).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pynamodb.attributes import ListAttribute, MapAttribute, UnicodeAttribute, VersionAttribute
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex
from pynamodb.models import Model

from herald.confirms.models import (
    DEFAULT_BUTTONS,
    Action,
    Button,
    Confirm,
    ConfirmStatus,
    Delivery,
)
from herald.tables import (
    IntAttribute,
)

if TYPE_CHECKING:
    from herald.dynamo import Image


ITEM_TYPE = "confirm"
SOURCE_TYPE = "confirm_source"
BUSINESS_TYPE = "confirm_business"
DUE_SHARDS = 4


class ByPair(GlobalSecondaryIndex["ConfirmRow"]):
    class Meta:
        index_name = "by_pair"
        projection = AllProjection()

    pair_key = UnicodeAttribute(hash_key=True)
    pair_sort = UnicodeAttribute(range_key=True)


class ByDue(GlobalSecondaryIndex["ConfirmRow"]):
    class Meta:
        index_name = "by_due"
        projection = AllProjection()

    due_shard = UnicodeAttribute(hash_key=True)
    due_at_ms = IntAttribute(range_key=True)


class ButtonMap(MapAttribute[str, Any]):
    """A confirm's button as stored (in confirms and in owner registrations)."""

    action = UnicodeAttribute()
    label = UnicodeAttribute()
    style = UnicodeAttribute()

    @classmethod
    def of(cls, button: Button) -> ButtonMap:
        return cls(action=str(button.action), label=button.label, style=button.style)

    def button(self) -> Button:
        return Button(Action(self.action), self.label, self.style)


class ConfirmRow(Model):
    """ConfirmsTable, a confirm: its version guards every transition; in `by_due` while open."""

    pk = UnicodeAttribute(hash_key=True)  # CFM#<app>#<confirm_id>
    item_type = UnicodeAttribute(default=ITEM_TYPE)
    app_code = UnicodeAttribute()
    confirm_id = UnicodeAttribute()
    business_type = UnicodeAttribute()
    business_subtype = UnicodeAttribute(null=True)
    business_id = UnicodeAttribute()
    sender_user_id = UnicodeAttribute()
    receiver_user_id = UnicodeAttribute()
    status = UnicodeAttribute()
    message_text = UnicodeAttribute(null=True)
    buttons = ListAttribute(of=ButtonMap, null=True)
    payload: MapAttribute[str, Any] = MapAttribute(null=True)
    source_name = UnicodeAttribute()
    source_event_id = UnicodeAttribute()
    processing_action = UnicodeAttribute(null=True)
    processing_command_id = UnicodeAttribute(null=True)
    processing_reason = UnicodeAttribute(null=True)
    locked_by = UnicodeAttribute(null=True)
    lock_until_ms = IntAttribute(null=True)
    processed_action = UnicodeAttribute(null=True)
    processed_command_id = UnicodeAttribute(null=True)
    processed_by_user_id = UnicodeAttribute(null=True)
    processed_at_ms = IntAttribute(null=True)
    failure_reason = UnicodeAttribute(null=True)
    created_at_ms = IntAttribute()
    updated_at_ms = IntAttribute()
    expire_at_ms = IntAttribute()
    version = VersionAttribute()
    pair_key = UnicodeAttribute()
    pair_sort = UnicodeAttribute()
    due_shard = UnicodeAttribute(null=True)
    due_at_ms = IntAttribute(null=True)
    by_pair = ByPair()
    by_due = ByDue()

    def confirm(self) -> Confirm:
        return Confirm(
            app_code=self.app_code,
            confirm_id=self.confirm_id,
            business_type=self.business_type,
            business_subtype=self.business_subtype or "",
            business_id=self.business_id,
            sender_user_id=self.sender_user_id,
            receiver_user_id=self.receiver_user_id,
            status=ConfirmStatus(self.status),
            message_text=self.message_text or "",
            buttons=tuple(b.button() for b in self.buttons) if self.buttons else DEFAULT_BUTTONS,
            payload=self.payload.as_dict() if self.payload is not None else {},
            source_name=self.source_name,
            source_event_id=self.source_event_id,
            processing_action=self.processing_action or "",
            processing_command_id=self.processing_command_id or "",
            processing_reason=self.processing_reason or "",
            locked_by=self.locked_by or "",
            lock_until_ms=self.lock_until_ms or 0,
            processed_action=self.processed_action or "",
            processed_command_id=self.processed_command_id or "",
            processed_by_user_id=self.processed_by_user_id or "",
            processed_at_ms=self.processed_at_ms or 0,
            failure_reason=self.failure_reason or "",
            created_at_ms=self.created_at_ms,
            updated_at_ms=self.updated_at_ms,
            expire_at_ms=self.expire_at_ms,
            version=int(self.version),
        )


class ConfirmSourceRow(Model):
    """ConfirmsTable, an owner event already projected: written with its confirm, so it makes only one."""

    pk = UnicodeAttribute(hash_key=True)  # SRC#<app>#<source_name>#<source_event_id>
    item_type = UnicodeAttribute(default=SOURCE_TYPE)
    confirm_id = UnicodeAttribute()


class ConfirmBusinessRow(Model):
    """ConfirmsTable, the business id a confirm asks about: written with its confirm, so it has only one."""

    pk = UnicodeAttribute(hash_key=True)  # BIZ#<app>#<business_type>#<business_id>
    item_type = UnicodeAttribute(default=BUSINESS_TYPE)
    confirm_id = UnicodeAttribute()


def confirm_key(app_code: str, confirm_id: str) -> str:
    return f"CFM#{app_code}#{confirm_id}"


def source_key(app_code: str, source_name: str, source_event_id: str) -> str:
    return f"SRC#{app_code}#{source_name}#{source_event_id}"


def business_key(app_code: str, business_type: str, business_id: str) -> str:
    return f"BIZ#{app_code}#{business_type}#{business_id}"


def pair_key(app_code: str, user_a: str, user_b: str) -> str:
    low, high = sorted((user_a, user_b))
    return f"{app_code}#{low}#{high}"


def janitor_due_at(confirm: Confirm) -> int | None:
    if confirm.status is ConfirmStatus.PENDING:
        return confirm.expire_at_ms
    if confirm.status is ConfirmStatus.PROCESSING:
        return confirm.lock_until_ms
    return None


def confirm_from_image(image: Image) -> Confirm | None:
    """The confirm a stream image shows (None for a source record)."""
    if image.get("item_type", {}).get("S") != ITEM_TYPE:
        return None
    return ConfirmRow.from_raw_data(image).confirm()


class ByFailure(GlobalSecondaryIndex["DeliveryRow"]):
    class Meta:
        index_name = "by_failure"
        projection = AllProjection()

    failure = UnicodeAttribute(hash_key=True)
    last_error_at_ms = IntAttribute(range_key=True)


class DeliveryRow(Model):
    """DeliveriesTable: one push of one confirm; in the sparse `by_failure` once it failed for good."""

    pk = UnicodeAttribute(hash_key=True)  # <app>#<confirm_id>
    sk = UnicodeAttribute(range_key=True)  # the push: im_confirm, im_confirm_update:<status>
    msg_random = IntAttribute()
    status = UnicodeAttribute()
    attempts = IntAttribute(null=True)
    created_at_ms = IntAttribute(null=True)
    sent_at_ms = IntAttribute(null=True)
    msg_key = UnicodeAttribute(null=True)
    sending_since_ms = IntAttribute(null=True)
    last_error = UnicodeAttribute(null=True)
    last_error_at_ms = IntAttribute(null=True)
    failure = UnicodeAttribute(null=True)
    by_failure = ByFailure()

    def delivery(self) -> Delivery:
        app_code, _, confirm_id = self.pk.partition("#")
        return Delivery(
            app_code=app_code,
            confirm_id=confirm_id,
            key=self.sk,
            msg_random=self.msg_random,
            status=self.status,
            attempts=self.attempts or 0,
            sent_at_ms=self.sent_at_ms or 0,
            last_error=self.last_error or "",
            last_error_at_ms=self.last_error_at_ms or 0,
            msg_key=self.msg_key or "",
            sending_since_ms=self.sending_since_ms or 0,
        )
