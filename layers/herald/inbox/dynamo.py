"""DynamoDB adapter for the inbox. One table; a user's items share `pk = U#<app>#<user>`:

* `sk = N#<notification_id>` — a notification (ids sort by creation time); while unread it also carries
  `unread_pk`/`unread_sk`, the keys of the sparse GSI `by_unread`;
* `sk = COUNTER` — `unread` and `version`, changed in the same transaction as any read state;
* `sk = PREFS` — the user's switches;
* `sk = T#<notification_id>` — a tombstone: this removed notification is already accounted for.
Dedup keys are their own items (`pk = D#<app>#<dedup_key>`), written with their notification.
Notifications, dedup keys and tombstones expire by TTL (`expires_at`, epoch seconds).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pynamodb.attributes import BooleanAttribute, MapAttribute, TTLAttribute, UnicodeAttribute
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex
from pynamodb.models import Model
from pynamodb.pagination import ResultIterator

from herald.inbox.models import DEFAULT_PREFERENCES, Kind, Notification
from herald.tables import Cancelled, Database, IntAttribute, Transaction, key_names, page, ttl

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from herald.dynamo import Image

COUNTER = "COUNTER"
PREFS = "PREFS"
DEDUP = "D"
TOMBSTONE_SECONDS = 7 * 86400
_TX_LIMIT = 100


class ByUnread(GlobalSecondaryIndex["NotificationRow"]):
    class Meta:
        index_name = "by_unread"
        projection = AllProjection()

    unread_pk = UnicodeAttribute(hash_key=True)
    unread_sk = UnicodeAttribute(range_key=True)


class NotificationRow(Model):
    """InboxTable, a notification: in `by_unread` (sparse) while unread."""

    pk = UnicodeAttribute(hash_key=True)  # U#<app>#<user>
    sk = UnicodeAttribute(range_key=True)  # N#<notification_id>
    unread_pk = UnicodeAttribute(null=True)
    unread_sk = UnicodeAttribute(null=True)
    app_code = UnicodeAttribute()
    user_id = UnicodeAttribute()
    notification_id = UnicodeAttribute()
    kind = UnicodeAttribute()
    title = UnicodeAttribute(null=True)
    content = UnicodeAttribute(null=True)
    session_id = UnicodeAttribute(null=True)
    payload: MapAttribute[str, Any] = MapAttribute(null=True)
    dedup_key = UnicodeAttribute()
    producer = UnicodeAttribute(null=True)  # absent on notifications stored before producers were recorded
    is_read = BooleanAttribute(default=False)
    read_at_ms = IntAttribute(null=True)
    created_at_ms = IntAttribute()
    expires_at = TTLAttribute()
    by_unread = ByUnread()

    def notification(self) -> Notification:
        return Notification(
            app_code=self.app_code,
            user_id=self.user_id,
            notification_id=self.notification_id,
            kind=Kind(self.kind),
            title=self.title or "",
            content=self.content or "",
            session_id=self.session_id or "",
            dedup_key=self.dedup_key,
            created_at_ms=self.created_at_ms,
            payload=self.payload.as_dict() if self.payload is not None else {},
            is_read=bool(self.is_read),
            read_at_ms=self.read_at_ms or 0,
            producer=self.producer or "",
        )


class CounterRow(Model):
    """InboxTable, a user's unread count; `version` grows with every change (the pushes' order)."""

    pk = UnicodeAttribute(hash_key=True)  # U#<app>#<user>
    sk = UnicodeAttribute(range_key=True, default=COUNTER)
    app_code = UnicodeAttribute(null=True)
    user_id = UnicodeAttribute(null=True)
    unread = IntAttribute(null=True)
    version = IntAttribute(null=True)


class PreferencesRow(Model):
    """InboxTable, a user's switches (absent: the default)."""

    pk = UnicodeAttribute(hash_key=True)  # U#<app>#<user>
    sk = UnicodeAttribute(range_key=True, default=PREFS)
    task_completed = BooleanAttribute(null=True)
    question_pending = BooleanAttribute(null=True)
    approval_pending = BooleanAttribute(null=True)
    subagent_done = BooleanAttribute(null=True)
    system_notify = BooleanAttribute(null=True)


class TombstoneRow(Model):
    """InboxTable, a removed notification already taken off the count."""

    pk = UnicodeAttribute(hash_key=True)  # U#<app>#<user>
    sk = UnicodeAttribute(range_key=True)  # T#<notification_id>
    expires_at = TTLAttribute()


class DedupRow(Model):
    """InboxTable, a dedup key: which notification it made."""

    pk = UnicodeAttribute(hash_key=True)  # D#<app>#<dedup_key>
    sk = UnicodeAttribute(range_key=True, default=DEDUP)
    notification_pk = UnicodeAttribute()
    notification_sk = UnicodeAttribute()
    notification_id = UnicodeAttribute()
    expires_at = TTLAttribute()


def user_pk(app_code: str, user_id: str) -> str:
    return f"U#{app_code}#{user_id}"


def notification_sk(notification_id: str) -> str:
    return f"N#{notification_id}"


def _sk_at(ms: int) -> str:
    """The sort key below every notification created at or after `ms`."""
    return f"N#ntf_{max(ms, 0):013d}"


_LAST_SK = "N#ntf_~"


def counter_version(image: Image) -> int | None:
    """The version a stream image of a counter shows (None for any other item)."""
    if image.get("sk", {}).get("S") != COUNTER:
        return None
    return CounterRow.from_raw_data(image).version


def removed_notification(image: Image) -> Notification | None:
    """The notification a stream image shows (None for any other item)."""
    if not str(image.get("sk", {}).get("S", "")).startswith("N#"):
        return None
    return NotificationRow.from_raw_data(image).notification()


class DynamoInboxStore:
    def __init__(self, table_name: str, client: DynamoDBClient | None = None) -> None:
        self._database = database = Database(client)
        self._notifications = database.bind(NotificationRow, table_name)
        self._counters = database.bind(CounterRow, table_name)
        self._preferences = database.bind(PreferencesRow, table_name)
        self._tombstones = database.bind(TombstoneRow, table_name)
        self._dedups = database.bind(DedupRow, table_name)

    # ------------------------------------------------------------------ writes
    def _count(self, transaction: Transaction, app_code: str, user_id: str, delta: int) -> None:
        counters = self._counters
        transaction.update(
            counters(pk=user_pk(app_code, user_id)),
            [
                counters.app_code.set(app_code),
                counters.user_id.set(user_id),
                counters.unread.add(delta),
                counters.version.add(1),
            ],
        )

    def insert(self, notification: Notification) -> str | None:
        pk = user_pk(notification.app_code, notification.user_id)
        sk = notification_sk(notification.notification_id)
        expires_at = ttl(notification.expire_at_ms // 1000)
        row = self._notifications(
            pk=pk,
            sk=sk,
            unread_pk=pk,
            unread_sk=sk,
            app_code=notification.app_code,
            user_id=notification.user_id,
            notification_id=notification.notification_id,
            kind=str(notification.kind),
            title=notification.title,
            content=notification.content,
            session_id=notification.session_id,
            payload=notification.payload,
            dedup_key=notification.dedup_key,
            producer=notification.producer,
            is_read=False,
            created_at_ms=notification.created_at_ms,
            expires_at=expires_at,
        )
        dedup = self._dedups(
            pk=f"D#{notification.app_code}#{notification.dedup_key}",
            notification_pk=pk,
            notification_sk=sk,
            notification_id=notification.notification_id,
            expires_at=expires_at,
        )

        def write(transaction: Transaction) -> None:
            transaction.put(dedup, self._dedups.pk.does_not_exist(), label="dedup")
            transaction.put(row, self._notifications.pk.does_not_exist())
            self._count(transaction, notification.app_code, notification.user_id, 1)

        try:
            self._database.transact(write)
        except Cancelled as cancelled:
            existing = self._dedups.get(dedup.pk, DEDUP, consistent_read=True) if "dedup" in cancelled.failed else None
            if existing is None:
                raise
            return existing.notification_id
        return None

    def _row_of(self, notification: Notification) -> NotificationRow:
        """The notification's key, as a row to write to."""
        pk, sk = user_pk(notification.app_code, notification.user_id), notification_sk(notification.notification_id)
        return self._notifications(pk=pk, sk=sk)

    def _read(self, transaction: Transaction, notification: Notification, now: int) -> None:
        rows = self._notifications
        transaction.update(
            self._row_of(notification),
            [rows.is_read.set(True), rows.read_at_ms.set(now), rows.unread_pk.remove(), rows.unread_sk.remove()],
            rows.pk.exists() & (rows.is_read == False),  # noqa: E712 - a condition expression, not a comparison
        )

    def mark_read(self, notification: Notification, now: int) -> bool:
        def write(transaction: Transaction) -> None:
            self._read(transaction, notification, now)
            self._count(transaction, notification.app_code, notification.user_id, -1)

        try:
            self._database.transact(write)
        except Cancelled:
            return False  # read (or removed) meanwhile: nothing to count
        return True

    def mark_all_read(self, app_code: str, user_id: str, up_to_ms: int, now: int) -> int:
        marked = 0
        while True:
            batch = self._unread_batch(app_code, user_id, up_to_ms + 1, _TX_LIMIT - 1)
            if not batch:
                return marked

            def write(transaction: Transaction, batch: list[Notification] = batch) -> None:
                for notification in batch:
                    self._read(transaction, notification, now)
                self._count(transaction, app_code, user_id, -len(batch))

            try:
                self._database.transact(write)
                marked += len(batch)
            except Cancelled:
                # One of them changed under us (read, deleted): go one by one, each exact on its own.
                marked += sum(self.mark_read(n, now) for n in batch)

    def _unread_batch(self, app_code: str, user_id: str, before_ms: int, limit: int) -> list[Notification]:
        """Up to `limit` unread notifications created before `before_ms` (following pages past empty ones)."""
        rows = self._notifications.by_unread.query(
            user_pk(app_code, user_id), self._notifications.unread_sk < _sk_at(before_ms), limit=limit, page_size=limit
        )
        return [row.notification() for row in rows]

    def delete(self, notification: Notification) -> bool:
        rows = self._notifications

        def write(transaction: Transaction) -> None:
            transaction.delete(self._row_of(notification), rows.pk.exists() & (rows.is_read == notification.is_read))
            self._tombstone(transaction, notification)
            if not notification.is_read:
                self._count(transaction, notification.app_code, notification.user_id, -1)

        try:
            self._database.transact(write)
        except Cancelled:
            current = self.get(notification.app_code, notification.user_id, notification.notification_id)
            return self.delete(current) if current is not None else False
        return True

    def _tombstone(self, transaction: Transaction, notification: Notification) -> None:
        tombstone = self._tombstones(
            pk=user_pk(notification.app_code, notification.user_id),
            sk=f"T#{notification.notification_id}",
            expires_at=ttl(notification.expire_at_ms // 1000 + TOMBSTONE_SECONDS),
        )
        transaction.put(tombstone, self._tombstones.pk.does_not_exist())

    def forget_removed(self, notification: Notification) -> None:
        if notification.is_read:
            return

        def write(transaction: Transaction) -> None:
            self._tombstone(transaction, notification)
            self._count(transaction, notification.app_code, notification.user_id, -1)

        with contextlib.suppress(Cancelled):  # cancelled: a tombstone exists, it was counted already
            self._database.transact(write)

    # ------------------------------------------------------------------ reads
    def by_dedup(self, app_code: str, key: str) -> Notification | None:
        try:
            pointer = self._dedups.get(f"D#{app_code}#{key}", DEDUP, consistent_read=True)
            row = self._notifications.get(pointer.notification_pk, pointer.notification_sk, consistent_read=True)
        except Model.DoesNotExist:
            return None
        return row.notification()

    def get(self, app_code: str, user_id: str, notification_id: str) -> Notification | None:
        try:
            row = self._notifications.get(
                user_pk(app_code, user_id), notification_sk(notification_id), consistent_read=True
            )
        except self._notifications.DoesNotExist:
            return None
        return row.notification()

    def counter(self, app_code: str, user_id: str) -> tuple[int, int]:
        """The committed (unread, version) of the user's counter."""
        try:
            row = self._counters.get(user_pk(app_code, user_id), COUNTER, consistent_read=True)
        except self._counters.DoesNotExist:
            return 0, 0
        return row.unread or 0, row.version or 0

    def unread_older_than(self, app_code: str, user_id: str, created_before_ms: int) -> int:
        """Unread items past retention that TTL has not removed yet: normally none, so this reads nothing."""
        return self._notifications.by_unread.count(
            user_pk(app_code, user_id), self._notifications.unread_sk < _sk_at(created_before_ms)
        )

    def page(
        self, app_code: str, user_id: str, unread_only: bool, since_ms: int, limit: int, page_token: str
    ) -> tuple[list[Notification], str]:
        rows = self._notifications
        pk = user_pk(app_code, user_id)
        window = (_sk_at(since_ms), _LAST_SK)
        scope: dict[str, str | int] = {"user": f"{app_code}#{user_id}", "unread": int(unread_only)}

        def query(start: dict[str, Any] | None) -> ResultIterator[NotificationRow]:
            if unread_only:
                return rows.by_unread.query(
                    pk, rows.unread_sk.between(*window), scan_index_forward=False, limit=limit, page_size=limit,
                    last_evaluated_key=start,
                )  # fmt: skip
            return rows.query(
                pk, rows.sk.between(*window), scan_index_forward=False, consistent_read=True, limit=limit,
                page_size=limit, last_evaluated_key=start,
            )  # fmt: skip

        keys = key_names(rows, rows.by_unread if unread_only else None)
        found, next_token = page(query, page_token, scope, keys)
        return [row.notification() for row in found], next_token

    def preferences(self, app_code: str, user_id: str) -> dict[str, bool]:
        try:
            row = self._preferences.get(user_pk(app_code, user_id), PREFS, consistent_read=True)
        except self._preferences.DoesNotExist:
            return dict(DEFAULT_PREFERENCES)
        stored = row.attribute_values
        return {name: bool(stored.get(name, default)) for name, default in DEFAULT_PREFERENCES.items()}

    def set_preferences(self, app_code: str, user_id: str, changes: Mapping[str, bool]) -> None:
        if not changes:
            return
        switches = self._preferences.get_attributes()
        self._preferences(pk=user_pk(app_code, user_id)).update(
            actions=[switches[name].set(bool(value)) for name, value in changes.items()]
        )
