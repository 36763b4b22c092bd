"""DynamoDB adapter for service keys: one item a key (`pk` = `KEY#<key_id>`), found by service through
the `by_service` index. The secret itself is never stored, only its hash."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from herald.auth.models import ServiceKeyRecord
from herald.dynamo import from_item, is_conditional_check_failed, to_attr, to_item
from herald.dynamo_table import DynamoTable
from herald.errors import NotFound

BY_SERVICE_INDEX = "by_service"


def _key(key_id: str) -> dict[str, Any]:
    return {"pk": {"S": f"KEY#{key_id}"}}


def _record(item: dict[str, Any]) -> ServiceKeyRecord:
    return ServiceKeyRecord(
        key_id=item["key_id"],
        service_id=item["service_id"],
        secret_hash=item["secret_hash"],
        created_at_ms=item["created_at_ms"],
        capabilities=frozenset(item.get("capabilities", ())),
        app_codes=frozenset(item.get("app_codes", ())),
        targets=frozenset(item.get("targets", ())),
        allow_markdown=bool(item.get("allow_markdown", False)),
        expires_at_ms=item.get("expires_at_ms"),
        revoked_at_ms=item.get("revoked_at_ms"),
        last_used_at_ms=item.get("last_used_at_ms"),
        rotated_from=item.get("rotated_from"),
    )


class DynamoServiceKeyStore(DynamoTable):
    def get_key(self, key_id: str) -> ServiceKeyRecord | None:
        item = self._get_item(_key(key_id))
        return _record(item) if item else None

    def put_key(self, key: ServiceKeyRecord) -> None:
        item: dict[str, Any] = {
            "pk": f"KEY#{key.key_id}",
            "key_id": key.key_id,
            "service_id": key.service_id,
            "secret_hash": key.secret_hash,
            "created_at_ms": key.created_at_ms,
            "capabilities": sorted(key.capabilities),
            "app_codes": sorted(key.app_codes),
            "targets": sorted(key.targets),
            "allow_markdown": key.allow_markdown,
            "expires_at_ms": key.expires_at_ms,
            "revoked_at_ms": key.revoked_at_ms,
            "rotated_from": key.rotated_from,
        }
        self._ddb.put_item(
            TableName=self._table,
            Item=to_item({name: value for name, value in item.items() if value is not None}),
            ConditionExpression="attribute_not_exists(pk)",
        )

    def keys_of(self, service_id: str) -> list[ServiceKeyRecord]:
        items = self._query_all(
            {
                "TableName": self._table,
                "IndexName": BY_SERVICE_INDEX,
                "KeyConditionExpression": "service_id = :service",
                "ExpressionAttributeValues": {":service": {"S": service_id}},
            }
        )
        return [_record(item) for item in items if "key_id" in item]  # not a service record of an older release

    def all_keys(self) -> list[ServiceKeyRecord]:
        """Every key (an operator's listing: a small table)."""
        records: list[ServiceKeyRecord] = []
        params: dict[str, Any] = {"TableName": self._table}
        while True:
            response = self._ddb.scan(**params)
            records.extend(_record(from_item(raw)) for raw in response.get("Items", []) if "key_id" in raw)  # as above
            if "LastEvaluatedKey" not in response:
                return records
            params["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def revoke(self, key_id: str, at_ms: int) -> ServiceKeyRecord:
        """Set when the key stops working; an earlier revocation already set stands."""
        try:
            item = self._ddb.update_item(
                TableName=self._table,
                Key=_key(key_id),
                UpdateExpression="SET revoked_at_ms = :at",
                ConditionExpression=(
                    "attribute_exists(pk) AND (attribute_not_exists(revoked_at_ms) OR revoked_at_ms > :at)"
                ),
                ExpressionAttributeValues={":at": to_attr(at_ms)},
                ReturnValues="ALL_NEW",
            )["Attributes"]
        except ClientError as exc:
            if not is_conditional_check_failed(exc):
                raise
            record = self.get_key(key_id)
            if record is None:
                raise NotFound(f"no key {key_id}") from exc
            return record
        return _record(from_item(item))

    def touch(self, key_id: str, at_ms: int) -> None:
        self._ddb.update_item(
            TableName=self._table,
            Key=_key(key_id),
            UpdateExpression="SET last_used_at_ms = :at",
            ConditionExpression="attribute_exists(pk)",
            ExpressionAttributeValues={":at": to_attr(at_ms)},
        )
