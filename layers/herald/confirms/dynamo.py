"""DynamoDB stores for confirms and their deliveries: every change a conditional write or a transaction over
the rows of `rows`. The confirms table's stream is the IM outbox; deliveries live in their own table (no
stream)."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from pynamodb.exceptions import PutError, UpdateError

from herald.confirms.models import (
    BusinessTaken,
    Confirm,
    Delivery,
    SendResult,
    StaleConfirm,
)
from herald.tables import (
    Cancelled,
    Database,
    Transaction,
    condition_failed,
    key_names,
    page,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


from herald.confirms.rows import (
    DUE_SHARDS,
    ButtonMap,
    ConfirmBusinessRow,
    ConfirmRow,
    ConfirmSourceRow,
    DeliveryRow,
    business_key,
    confirm_key,
    janitor_due_at,
    pair_key,
    source_key,
)


class DynamoConfirmStore:
    def __init__(self, table_name: str, client: DynamoDBClient | None = None) -> None:
        self._database = Database(client)
        self._rows = self._database.bind(ConfirmRow, table_name)
        self._sources = self._database.bind(ConfirmSourceRow, table_name)
        self._businesses = self._database.bind(ConfirmBusinessRow, table_name)

    def _row(self, confirm: Confirm, stored_version: int | None) -> ConfirmRow:
        """`confirm` as a row to put over the stored version `stored_version` (None: a new confirm)."""
        due_at = janitor_due_at(confirm)
        shard = int(hashlib.sha256(confirm.confirm_id.encode()).hexdigest(), 16) % DUE_SHARDS
        row = self._rows(
            pk=confirm_key(confirm.app_code, confirm.confirm_id),
            app_code=confirm.app_code,
            confirm_id=confirm.confirm_id,
            business_type=confirm.business_type,
            business_subtype=confirm.business_subtype,
            business_id=confirm.business_id,
            sender_user_id=confirm.sender_user_id,
            receiver_user_id=confirm.receiver_user_id,
            status=str(confirm.status),
            message_text=confirm.message_text,
            buttons=[ButtonMap.of(b) for b in confirm.buttons],
            payload=confirm.payload,
            source_name=confirm.source_name,
            source_event_id=confirm.source_event_id,
            processing_action=confirm.processing_action,
            processing_command_id=confirm.processing_command_id,
            processing_reason=confirm.processing_reason or None,
            locked_by=confirm.locked_by,
            lock_until_ms=confirm.lock_until_ms,
            processed_action=confirm.processed_action,
            processed_command_id=confirm.processed_command_id,
            processed_by_user_id=confirm.processed_by_user_id,
            processed_at_ms=confirm.processed_at_ms,
            failure_reason=confirm.failure_reason,
            created_at_ms=confirm.created_at_ms,
            updated_at_ms=confirm.updated_at_ms,
            expire_at_ms=confirm.expire_at_ms,
            pair_key=pair_key(confirm.app_code, confirm.sender_user_id, confirm.receiver_user_id),
            pair_sort=f"{confirm.created_at_ms:013d}#{confirm.confirm_id}",
            due_shard=str(shard) if due_at is not None else None,
            due_at_ms=due_at,
        )
        if stored_version is not None:
            row.version = stored_version
        return row

    def create(self, confirm: Confirm) -> Confirm:
        source = self._sources(
            pk=source_key(confirm.app_code, confirm.source_name, confirm.source_event_id), confirm_id=confirm.confirm_id
        )

        business = self._businesses(
            pk=business_key(confirm.app_code, confirm.business_type, confirm.business_id),
            confirm_id=confirm.confirm_id,
        )

        def write(transaction: Transaction) -> None:
            transaction.put(self._row(confirm, None), self._rows.pk.does_not_exist())
            transaction.put(source, self._sources.pk.does_not_exist())
            transaction.put(business, self._businesses.pk.does_not_exist())

        try:
            self._database.transact(write)
        except Cancelled:
            existing = self.by_source(confirm.app_code, confirm.source_name, confirm.source_event_id)
            if existing is not None:
                return existing
            if self.by_business(confirm.app_code, confirm.business_type, confirm.business_id) is not None:
                raise BusinessTaken(confirm.business_id) from None
            raise
        return confirm

    def get(self, app_code: str, confirm_id: str) -> Confirm | None:
        try:
            return self._rows.get(confirm_key(app_code, confirm_id), consistent_read=True).confirm()
        except self._rows.DoesNotExist:
            return None

    def get_many(self, app_code: str, confirm_ids: list[str]) -> list[Confirm]:
        keys = [confirm_key(app_code, confirm_id) for confirm_id in confirm_ids]
        return [row.confirm() for row in self._rows.batch_get(keys, consistent_read=True)]

    def by_source(self, app_code: str, source_name: str, source_event_id: str) -> Confirm | None:
        try:
            source = self._sources.get(source_key(app_code, source_name, source_event_id), consistent_read=True)
        except self._sources.DoesNotExist:
            return None
        return self.get(app_code, source.confirm_id)

    def by_business(self, app_code: str, business_type: str, business_id: str) -> Confirm | None:
        try:
            marker = self._businesses.get(business_key(app_code, business_type, business_id), consistent_read=True)
        except self._businesses.DoesNotExist:
            return None
        return self.get(app_code, marker.confirm_id)

    def transition(self, current: Confirm, new: Confirm) -> Confirm:
        """`new` over `current`, if the stored confirm still has its version (PynamoDB checks it and stores
        the next) and its status."""
        try:
            self._row(new, current.version).save(condition=self._rows.status == str(current.status))
        except PutError as error:
            if condition_failed(error):
                raise StaleConfirm(current.confirm_id) from error
            raise
        return new

    def between(
        self, app_code: str, user_a: str, user_b: str, limit: int, page_token: str
    ) -> tuple[list[Confirm], str]:
        pair = pair_key(app_code, user_a, user_b)
        rows, next_token = page(
            lambda start: self._rows.by_pair.query(
                pair, scan_index_forward=False, limit=limit, page_size=limit, last_evaluated_key=start
            ),
            page_token,
            {"pair": pair},
            key_names(self._rows, self._rows.by_pair),
        )
        return [row.confirm() for row in rows], next_token

    def due(self, now: int, limit: int) -> list[Confirm]:
        confirms: list[Confirm] = []
        for shard in range(DUE_SHARDS):
            rows = self._rows.by_due.query(str(shard), self._rows.due_at_ms <= now, limit=limit, page_size=limit)
            confirms.extend(row.confirm() for row in rows)
        return confirms[:limit]


class DynamoDeliveryStore:
    def __init__(self, table_name: str, client: DynamoDBClient | None = None) -> None:
        self._rows = Database(client).bind(DeliveryRow, table_name)

    def _row(self, delivery: Delivery) -> DeliveryRow:
        return self._rows(pk=f"{delivery.app_code}#{delivery.confirm_id}", sk=delivery.key)

    def begin(self, app_code: str, confirm_id: str, key: str, msg_random: int, now: int) -> Delivery:
        fresh = self._rows(
            pk=f"{app_code}#{confirm_id}",
            sk=key,
            msg_random=msg_random,
            status="pending",
            attempts=0,
            created_at_ms=now,
        )
        try:
            fresh.save(condition=self._rows.pk.does_not_exist())
            return fresh.delivery()
        except PutError as error:
            if not condition_failed(error):
                raise
        # it exists, and deliveries are never deleted
        return self._rows.get(fresh.pk, key, consistent_read=True).delivery()

    def sent(self, delivery: Delivery, result: SendResult, now: int) -> None:
        rows = self._rows
        self._row(delivery).update(
            actions=[
                rows.status.set("sent"),
                rows.sent_at_ms.set(now),
                rows.msg_key.set(result.msg_key),
                rows.failure.remove(),
                rows.sending_since_ms.remove(),
                rows.attempts.set(delivery.attempts + 1),  # absolute: a resent update counts once
            ]
        )

    def sending(self, delivery: Delivery, now: int) -> None:
        rows = self._rows
        self._row(delivery).update(actions=[rows.sending_since_ms.set(rows.sending_since_ms | now)])

    def failed(self, delivery: Delivery, error: str, permanent: bool, now: int) -> None:
        rows = self._rows
        status = "failed" if permanent else "pending"
        try:
            self._row(delivery).update(
                actions=[
                    rows.status.set(status),
                    rows.last_error.set(error[:500]),
                    rows.last_error_at_ms.set(now),
                    rows.failure.set(status) if permanent else rows.failure.remove(),
                    rows.attempts.set(delivery.attempts + 1),  # absolute: a resent update counts once
                ],
                condition=rows.status != "sent",
            )
        except UpdateError as update_error:
            if not condition_failed(update_error):
                raise

    def failures(self, limit: int) -> list[Delivery]:
        """Pushes that failed for good, oldest first (the sparse index `by_failure`)."""
        return [row.delivery() for row in self._rows.by_failure.query("failed", limit=limit, page_size=limit)]

    def for_confirm(self, app_code: str, confirm_id: str) -> list[Delivery]:
        return [row.delivery() for row in self._rows.query(f"{app_code}#{confirm_id}", consistent_read=True)]
