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

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from herald.dynamo import from_item, is_transaction_cancelled, to_attr, to_item
from herald.dynamo_table import DynamoTable
from herald.inbox.models import DEFAULT_PREFERENCES, Kind, Notification

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef

BY_UNREAD_INDEX = "by_unread"
COUNTER = "COUNTER"
PREFS = "PREFS"
TOMBSTONE_SECONDS = 7 * 86400
_TX_LIMIT = 100


def user_pk(app_code: str, user_id: str) -> str:
    return f"U#{app_code}#{user_id}"


def notification_sk(notification_id: str) -> str:
    return f"N#{notification_id}"


def _sk_at(ms: int) -> str:
    """The sort key below every notification created at or after `ms`."""
    return f"N#ntf_{max(ms, 0):013d}"


def notification_from_item(item: Mapping[str, Any]) -> Notification:
    return Notification(
        app_code=item["app_code"],
        user_id=item["user_id"],
        notification_id=item["notification_id"],
        kind=Kind(item["kind"]),
        title=item.get("title", ""),
        content=item.get("content", ""),
        session_id=item.get("session_id", ""),
        dedup_key=item["dedup_key"],
        created_at_ms=item["created_at_ms"],
        payload=item.get("payload", {}),
        is_read=bool(item.get("is_read", False)),
        read_at_ms=item.get("read_at_ms", 0),
    )


def is_notification(item: Mapping[str, Any]) -> bool:
    return str(item.get("sk", "")).startswith("N#")


class DynamoInboxStore(DynamoTable):
    # ------------------------------------------------------------------ writes
    def _counter(self, app_code: str, user_id: str, delta: int) -> TransactWriteItemTypeDef:
        return {
            "Update": {
                "TableName": self._table,
                "Key": {"pk": {"S": user_pk(app_code, user_id)}, "sk": {"S": COUNTER}},
                "UpdateExpression": "SET app_code = :a, user_id = :u ADD unread :d, version :one",
                "ExpressionAttributeValues": {
                    ":a": {"S": app_code},
                    ":u": {"S": user_id},
                    ":d": to_attr(delta),
                    ":one": {"N": "1"},
                },
            }
        }

    def insert(self, notification: Notification) -> str | None:
        pk = user_pk(notification.app_code, notification.user_id)
        sk = notification_sk(notification.notification_id)
        expires_at = notification.expire_at_ms // 1000
        item = to_item(
            {
                "pk": pk,
                "sk": sk,
                "unread_pk": pk,
                "unread_sk": sk,
                "app_code": notification.app_code,
                "user_id": notification.user_id,
                "notification_id": notification.notification_id,
                "kind": str(notification.kind),
                "title": notification.title,
                "content": notification.content,
                "session_id": notification.session_id,
                "payload": notification.payload,
                "dedup_key": notification.dedup_key,
                "is_read": False,
                "created_at_ms": notification.created_at_ms,
                "expires_at": expires_at,
            }
        )
        dedup = to_item(
            {
                "pk": f"D#{notification.app_code}#{notification.dedup_key}",
                "sk": "D",
                "notification_pk": pk,
                "notification_sk": sk,
                "notification_id": notification.notification_id,
                "expires_at": expires_at,
            }
        )
        try:
            self._transact(
                [
                    {
                        "Put": {
                            "TableName": self._table,
                            "Item": dedup,
                            "ConditionExpression": "attribute_not_exists(pk)",
                        }
                    },
                    {
                        "Put": {
                            "TableName": self._table,
                            "Item": item,
                            "ConditionExpression": "attribute_not_exists(pk)",
                        }
                    },
                    self._counter(notification.app_code, notification.user_id, 1),
                ]
            )
        except ClientError as exc:
            if not is_transaction_cancelled(exc):
                raise
            existing = self._get_item({"pk": dedup["pk"], "sk": {"S": "D"}})
            if existing is None:
                raise
            return str(existing["notification_id"])
        return None

    def _read_update(self, notification: Notification, now: int) -> TransactWriteItemTypeDef:
        return {
            "Update": {
                "TableName": self._table,
                "Key": {
                    "pk": {"S": user_pk(notification.app_code, notification.user_id)},
                    "sk": {"S": notification_sk(notification.notification_id)},
                },
                "UpdateExpression": "SET is_read = :t, read_at_ms = :now REMOVE unread_pk, unread_sk",
                "ConditionExpression": "attribute_exists(pk) AND is_read = :f",
                "ExpressionAttributeValues": {":t": {"BOOL": True}, ":f": {"BOOL": False}, ":now": to_attr(now)},
            }
        }

    def mark_read(self, notification: Notification, now: int) -> bool:
        try:
            self._transact(
                [
                    self._read_update(notification, now),
                    self._counter(notification.app_code, notification.user_id, -1),
                ]
            )
        except ClientError as exc:
            if is_transaction_cancelled(exc):
                return False  # read (or removed) meanwhile: nothing to count
            raise
        return True

    def mark_all_read(self, app_code: str, user_id: str, up_to_ms: int, now: int) -> int:
        marked = 0
        while True:
            batch = self._unread_batch(app_code, user_id, up_to_ms + 1, _TX_LIMIT - 1)
            if not batch:
                return marked
            try:
                self._transact(
                    [
                        *(self._read_update(n, now) for n in batch),
                        self._counter(app_code, user_id, -len(batch)),
                    ]
                )
                marked += len(batch)
            except ClientError as exc:
                if not is_transaction_cancelled(exc):
                    raise
                # One of them changed under us (read, deleted): go one by one, each exact on its own.
                marked += sum(self.mark_read(n, now) for n in batch)

    def _unread_batch(self, app_code: str, user_id: str, before_ms: int, limit: int) -> list[Notification]:
        """Up to `limit` unread notifications created before `before_ms` (following pages past empty ones)."""
        params: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": BY_UNREAD_INDEX,
            "KeyConditionExpression": "unread_pk = :p AND unread_sk < :upto",
            "ExpressionAttributeValues": {":p": {"S": user_pk(app_code, user_id)}, ":upto": {"S": _sk_at(before_ms)}},
            "Limit": limit,
        }
        while True:
            response = self._ddb.query(**params)
            items = response.get("Items", [])
            if items or "LastEvaluatedKey" not in response:
                return [notification_from_item(from_item(raw)) for raw in items]
            params["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def delete(self, notification: Notification) -> bool:
        tombstone = self._tombstone(notification)
        items: list[TransactWriteItemTypeDef] = [
            {
                "Delete": {
                    "TableName": self._table,
                    "Key": {
                        "pk": {"S": user_pk(notification.app_code, notification.user_id)},
                        "sk": {"S": notification_sk(notification.notification_id)},
                    },
                    "ConditionExpression": "attribute_exists(pk) AND is_read = :seen",
                    "ExpressionAttributeValues": {":seen": {"BOOL": notification.is_read}},
                }
            },
            tombstone,
        ]
        if not notification.is_read:
            items.append(self._counter(notification.app_code, notification.user_id, -1))
        try:
            self._transact(items)
        except ClientError as exc:
            if not is_transaction_cancelled(exc):
                raise
            current = self.get(notification.app_code, notification.user_id, notification.notification_id)
            return self.delete(current) if current is not None else False
        return True

    def _tombstone(self, notification: Notification) -> TransactWriteItemTypeDef:
        return {
            "Put": {
                "TableName": self._table,
                "Item": to_item(
                    {
                        "pk": user_pk(notification.app_code, notification.user_id),
                        "sk": f"T#{notification.notification_id}",
                        "expires_at": notification.expire_at_ms // 1000 + TOMBSTONE_SECONDS,
                    }
                ),
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        }

    def forget_removed(self, notification: Notification) -> None:
        if notification.is_read:
            return
        try:
            self._transact(
                [
                    self._tombstone(notification),
                    self._counter(notification.app_code, notification.user_id, -1),
                ]
            )
        except ClientError as exc:
            if not is_transaction_cancelled(exc):  # cancelled: a tombstone exists, it was counted already
                raise

    # ------------------------------------------------------------------ reads
    def by_dedup(self, app_code: str, key: str) -> Notification | None:
        pointer = self._get_item({"pk": {"S": f"D#{app_code}#{key}"}, "sk": {"S": "D"}})
        if pointer is None:
            return None
        item = self._get_item({"pk": {"S": pointer["notification_pk"]}, "sk": {"S": pointer["notification_sk"]}})
        return notification_from_item(item) if item else None

    def get(self, app_code: str, user_id: str, notification_id: str) -> Notification | None:
        item = self._get_item({"pk": {"S": user_pk(app_code, user_id)}, "sk": {"S": notification_sk(notification_id)}})
        return notification_from_item(item) if item else None

    def counter(self, app_code: str, user_id: str) -> tuple[int, int]:
        """The committed (unread, version) of the user's counter."""
        item = self._get_item({"pk": {"S": user_pk(app_code, user_id)}, "sk": {"S": COUNTER}}) or {}
        return int(item.get("unread", 0)), int(item.get("version", 0))

    def unread_older_than(self, app_code: str, user_id: str, created_before_ms: int) -> int:
        """Unread items past retention that TTL has not removed yet: normally none, so this reads nothing."""
        response = self._ddb.query(
            TableName=self._table,
            IndexName=BY_UNREAD_INDEX,
            KeyConditionExpression="unread_pk = :p AND unread_sk < :cut",
            ExpressionAttributeValues={
                ":p": {"S": user_pk(app_code, user_id)},
                ":cut": {"S": _sk_at(created_before_ms)},
            },
            Select="COUNT",
        )
        return int(response.get("Count", 0))

    def page(
        self, app_code: str, user_id: str, unread_only: bool, since_ms: int, limit: int, cursor: dict[str, Any] | None
    ) -> tuple[list[Notification], dict[str, Any] | None]:
        pk_name, sk_name = ("unread_pk", "unread_sk") if unread_only else ("pk", "sk")
        params: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": f"{pk_name} = :p AND {sk_name} BETWEEN :since AND :last",
            "ExpressionAttributeValues": {
                ":p": {"S": user_pk(app_code, user_id)},
                ":since": {"S": _sk_at(since_ms)},
                ":last": {"S": "N#ntf_~"},
            },
            "ScanIndexForward": False,
            "Limit": limit,
        }
        if unread_only:
            params["IndexName"] = BY_UNREAD_INDEX
        else:
            params["ConsistentRead"] = True
        items, last = self._query_page(params, cursor)
        return [notification_from_item(item) for item in items], last

    def preferences(self, app_code: str, user_id: str) -> dict[str, bool]:
        item = self._get_item({"pk": {"S": user_pk(app_code, user_id)}, "sk": {"S": PREFS}}) or {}
        return {name: bool(item.get(name, default)) for name, default in DEFAULT_PREFERENCES.items()}

    def set_preferences(self, app_code: str, user_id: str, changes: Mapping[str, bool]) -> None:
        if not changes:
            return
        names = {f"#p{i}": name for i, name in enumerate(changes)}
        values = {f":p{i}": {"BOOL": bool(value)} for i, value in enumerate(changes.values())}
        self._ddb.update_item(
            TableName=self._table,
            Key={"pk": {"S": user_pk(app_code, user_id)}, "sk": {"S": PREFS}},
            UpdateExpression="SET " + ", ".join(f"#p{i} = :p{i}" for i in range(len(changes))),
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )
