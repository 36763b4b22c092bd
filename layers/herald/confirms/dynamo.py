"""DynamoDB adapters for confirms and their deliveries.

Confirms table items (`item_type`):
* `confirm` — `pk = CFM#<app>#<confirm_id>`; GSI `by_pair` (`pair_key = <app>#<lo user>#<hi user>`,
  `pair_sort = <created_at_ms>#<confirm_id>`) lists a conversation newest first; sparse GSI `by_due`
  (`due_shard`, `due_at_ms`) holds only open confirms, keyed by when they next need the janitor;
* `confirm_source` — `pk = SRC#<app>#<source_name>#<source_event_id>`, written in one transaction with its
  confirm, so an owner event projected twice creates one confirm.
The table's stream is the IM outbox. Deliveries live in their own table (no stream).
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from herald.confirms.delivery import Delivery
from herald.confirms.models import Confirm, ConfirmStatus
from herald.confirms.service import StaleConfirm
from herald.dynamo import from_item, is_conditional_check_failed, is_transaction_cancelled, to_attr, to_item
from herald.dynamo_table import DynamoTable

if TYPE_CHECKING:
    from herald.providers.tencent_im import SendResult

ITEM_TYPE = "confirm"
DUE_SHARDS = 4
BY_PAIR_INDEX = "by_pair"
BY_DUE_INDEX = "by_due"
BY_FAILURE_INDEX = "by_failure"


def confirm_key(app_code: str, confirm_id: str) -> str:
    return f"CFM#{app_code}#{confirm_id}"


def source_key(app_code: str, source_name: str, source_event_id: str) -> str:
    return f"SRC#{app_code}#{source_name}#{source_event_id}"


def pair_key(app_code: str, user_a: str, user_b: str) -> str:
    low, high = sorted((user_a, user_b))
    return f"{app_code}#{low}#{high}"


def _due_at(confirm: Confirm) -> int | None:
    if confirm.status is ConfirmStatus.PENDING:
        return confirm.expire_at_ms
    if confirm.status is ConfirmStatus.PROCESSING:
        return confirm.lock_until_ms
    return None


def confirm_to_item(confirm: Confirm) -> dict[str, Any]:
    due_at = _due_at(confirm)
    shard = int(hashlib.sha256(confirm.confirm_id.encode()).hexdigest(), 16) % DUE_SHARDS
    return to_item(
        {
            "pk": confirm_key(confirm.app_code, confirm.confirm_id),
            "item_type": ITEM_TYPE,
            "app_code": confirm.app_code,
            "confirm_id": confirm.confirm_id,
            "business_type": confirm.business_type,
            "business_subtype": confirm.business_subtype,
            "business_id": confirm.business_id,
            "sender_user_id": confirm.sender_user_id,
            "receiver_user_id": confirm.receiver_user_id,
            "status": str(confirm.status),
            "message_text": confirm.message_text,
            "actions": list(confirm.actions),
            "payload": confirm.payload,
            "source_name": confirm.source_name,
            "source_event_id": confirm.source_event_id,
            "processing_action": confirm.processing_action,
            "processing_command_id": confirm.processing_command_id,
            "locked_by": confirm.locked_by,
            "lock_until_ms": confirm.lock_until_ms,
            "processed_action": confirm.processed_action,
            "processed_command_id": confirm.processed_command_id,
            "processed_by_user_id": confirm.processed_by_user_id,
            "processed_at_ms": confirm.processed_at_ms,
            "failure_reason": confirm.failure_reason,
            "created_at_ms": confirm.created_at_ms,
            "updated_at_ms": confirm.updated_at_ms,
            "expire_at_ms": confirm.expire_at_ms,
            "version": confirm.version,
            "pair_key": pair_key(confirm.app_code, confirm.sender_user_id, confirm.receiver_user_id),
            "pair_sort": f"{confirm.created_at_ms:013d}#{confirm.confirm_id}",
            "due_shard": str(shard) if due_at is not None else None,
            "due_at_ms": due_at,
        }
    )


def confirm_from_item(item: dict[str, Any]) -> Confirm:
    return Confirm(
        app_code=item["app_code"],
        confirm_id=item["confirm_id"],
        business_type=item["business_type"],
        business_subtype=item.get("business_subtype", ""),
        business_id=item["business_id"],
        sender_user_id=item["sender_user_id"],
        receiver_user_id=item["receiver_user_id"],
        status=ConfirmStatus(item["status"]),
        message_text=item.get("message_text", ""),
        actions=tuple(item.get("actions", ("accept", "reject"))),
        payload=item.get("payload", {}),
        source_name=item["source_name"],
        source_event_id=item["source_event_id"],
        processing_action=item.get("processing_action", ""),
        processing_command_id=item.get("processing_command_id", ""),
        locked_by=item.get("locked_by", ""),
        lock_until_ms=item.get("lock_until_ms", 0),
        processed_action=item.get("processed_action", ""),
        processed_command_id=item.get("processed_command_id", ""),
        processed_by_user_id=item.get("processed_by_user_id", ""),
        processed_at_ms=item.get("processed_at_ms", 0),
        failure_reason=item.get("failure_reason", ""),
        created_at_ms=item["created_at_ms"],
        updated_at_ms=item["updated_at_ms"],
        expire_at_ms=item["expire_at_ms"],
        version=item["version"],
    )


class DynamoConfirmStore(DynamoTable):
    def pair_key(self, app_code: str, user_a: str, user_b: str) -> str:
        return pair_key(app_code, user_a, user_b)

    def create(self, confirm: Confirm) -> Confirm:
        source = source_key(confirm.app_code, confirm.source_name, confirm.source_event_id)
        try:
            self._transact(
                [
                    {
                        "Put": {
                            "TableName": self._table,
                            "Item": confirm_to_item(confirm),
                            "ConditionExpression": "attribute_not_exists(pk)",
                        }
                    },
                    {
                        "Put": {
                            "TableName": self._table,
                            "Item": to_item(
                                {
                                    "pk": source,
                                    "item_type": "confirm_source",
                                    "confirm_id": confirm.confirm_id,
                                }
                            ),
                            "ConditionExpression": "attribute_not_exists(pk)",
                        }
                    },
                ]
            )
        except ClientError as exc:
            if not is_transaction_cancelled(exc):
                raise
            existing = self.by_source(confirm.app_code, confirm.source_name, confirm.source_event_id)
            if existing is None:
                raise
            return existing
        return confirm

    def get(self, app_code: str, confirm_id: str) -> Confirm | None:
        item = self._get_pk(confirm_key(app_code, confirm_id))
        return confirm_from_item(item) if item and item.get("item_type") == ITEM_TYPE else None

    def get_many(self, app_code: str, confirm_ids: list[str]) -> list[Confirm]:
        found: list[Confirm] = []
        for start in range(0, len(confirm_ids), 100):
            keys: list[Any] = [{"pk": {"S": confirm_key(app_code, cid)}} for cid in confirm_ids[start : start + 100]]
            request: dict[str, Any] = {self._table: {"Keys": keys, "ConsistentRead": True}}
            while request:
                response = self._ddb.batch_get_item(RequestItems=request)
                found.extend(
                    confirm_from_item(from_item(raw))
                    for raw in response.get("Responses", {}).get(self._table, [])
                    if raw.get("item_type", {}).get("S") == ITEM_TYPE
                )
                request = dict(response.get("UnprocessedKeys") or {})
        return found

    def by_source(self, app_code: str, source_name: str, source_event_id: str) -> Confirm | None:
        source = self._get_pk(source_key(app_code, source_name, source_event_id))
        return self.get(app_code, source["confirm_id"]) if source else None

    def transition(self, current: Confirm, new: Confirm) -> Confirm:
        try:
            self._ddb.put_item(
                TableName=self._table,
                Item=confirm_to_item(new),
                ConditionExpression="version = :v AND #s = :s",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={":v": to_attr(current.version), ":s": {"S": str(current.status)}},
            )
        except ClientError as exc:
            if is_conditional_check_failed(exc):
                raise StaleConfirm(current.confirm_id) from exc
            raise
        return new

    def between(
        self, app_code: str, user_a: str, user_b: str, limit: int, cursor: dict[str, object] | None
    ) -> tuple[list[Confirm], dict[str, object] | None]:
        params: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": BY_PAIR_INDEX,
            "KeyConditionExpression": "pair_key = :p",
            "ExpressionAttributeValues": {":p": {"S": pair_key(app_code, user_a, user_b)}},
            "ScanIndexForward": False,
            "Limit": limit,
        }
        items, last = self._query_page(params, cursor)
        return [confirm_from_item(item) for item in items], last

    def due(self, now: int, limit: int) -> list[Confirm]:
        confirms: list[Confirm] = []
        for shard in range(DUE_SHARDS):
            response = self._ddb.query(
                TableName=self._table,
                IndexName=BY_DUE_INDEX,
                KeyConditionExpression="due_shard = :s AND due_at_ms <= :now",
                ExpressionAttributeValues={":s": {"S": str(shard)}, ":now": to_attr(now)},
                Limit=limit,
            )
            confirms.extend(confirm_from_item(from_item(raw)) for raw in response.get("Items", []))
        return confirms[:limit]


def _delivery_from_item(item: dict[str, Any]) -> Delivery:
    app_code, _, confirm_id = item["pk"].partition("#")
    return Delivery(
        app_code=app_code,
        confirm_id=confirm_id,
        key=item["sk"],
        msg_random=item["msg_random"],
        status=item["status"],
        attempts=item.get("attempts", 0),
        sent_at_ms=item.get("sent_at_ms", 0),
        last_error=item.get("last_error", ""),
        last_error_at_ms=item.get("last_error_at_ms", 0),
        msg_key=item.get("msg_key", ""),
        sending_since_ms=item.get("sending_since_ms", 0),
    )


class DynamoDeliveryStore(DynamoTable):
    """Deliveries table: `pk = <app>#<confirm_id>`, `sk` = the push (`im_confirm`, `im_confirm_update:<status>`)."""

    def _key(self, app_code: str, confirm_id: str, key: str) -> dict[str, Any]:
        return {"pk": {"S": f"{app_code}#{confirm_id}"}, "sk": {"S": key}}

    def begin(self, app_code: str, confirm_id: str, key: str, msg_random: int, now: int) -> Delivery:
        fresh = {
            "pk": f"{app_code}#{confirm_id}",
            "sk": key,
            "msg_random": msg_random,
            "status": "pending",
            "attempts": 0,
        }
        try:
            self._ddb.put_item(
                TableName=self._table,
                Item=to_item({**fresh, "created_at_ms": now}),
                ConditionExpression="attribute_not_exists(pk)",
            )
            return _delivery_from_item(fresh)
        except ClientError as exc:
            if not is_conditional_check_failed(exc):
                raise
        item = self._get_item(self._key(app_code, confirm_id, key))
        if item is None:  # it existed a moment ago, and deliveries are never deleted
            raise RuntimeError(f"delivery {app_code}#{confirm_id}/{key} vanished")
        return _delivery_from_item(item)

    def sent(self, delivery: Delivery, result: SendResult, now: int) -> None:
        self._ddb.update_item(
            TableName=self._table,
            Key=self._key(delivery.app_code, delivery.confirm_id, delivery.key),
            UpdateExpression=(
                "SET #s = :sent, sent_at_ms = :now, msg_key = :k REMOVE failure, sending_since_ms ADD attempts :one"
            ),
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={
                ":sent": {"S": "sent"},
                ":now": to_attr(now),
                ":k": {"S": result.msg_key},
                ":one": {"N": "1"},
            },
        )

    def sending(self, delivery: Delivery, now: int) -> None:
        self._ddb.update_item(
            TableName=self._table,
            Key=self._key(delivery.app_code, delivery.confirm_id, delivery.key),
            UpdateExpression="SET sending_since_ms = if_not_exists(sending_since_ms, :now)",
            ExpressionAttributeValues={":now": to_attr(now)},
        )

    def failed(self, delivery: Delivery, error: str, permanent: bool, now: int) -> None:
        try:
            self._ddb.update_item(
                TableName=self._table,
                Key=self._key(delivery.app_code, delivery.confirm_id, delivery.key),
                UpdateExpression=(
                    "SET #s = :status, last_error = :e, last_error_at_ms = :now"
                    + (", failure = :status" if permanent else " REMOVE failure")
                    + " ADD attempts :one"
                ),
                ConditionExpression="#s <> :sent",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={
                    ":status": {"S": "failed" if permanent else "pending"},
                    ":e": {"S": error[:500]},
                    ":now": to_attr(now),
                    ":one": {"N": "1"},
                    ":sent": {"S": "sent"},
                },
            )
        except ClientError as exc:
            if not is_conditional_check_failed(exc):
                raise

    def failures(self, limit: int) -> list[Delivery]:
        """Pushes that failed for good, oldest first (the sparse index `by_failure`)."""
        items, _ = self._query_page(
            {
                "TableName": self._table,
                "IndexName": BY_FAILURE_INDEX,
                "KeyConditionExpression": "failure = :failed",
                "ExpressionAttributeValues": {":failed": {"S": "failed"}},
                "Limit": limit,
            },
            None,
        )
        return [_delivery_from_item(item) for item in items]

    def for_confirm(self, app_code: str, confirm_id: str) -> list[Delivery]:
        response = self._ddb.query(
            TableName=self._table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": f"{app_code}#{confirm_id}"}},
            ConsistentRead=True,
        )
        return [_delivery_from_item(from_item(raw)) for raw in response.get("Items", [])]
