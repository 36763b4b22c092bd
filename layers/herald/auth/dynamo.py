"""DynamoDB adapter for service keys: one table, `pk` = `KEY#<key_id>` or `SERVICE#<service_id>`."""

from __future__ import annotations

from herald.auth.models import ServiceKeyRecord, ServiceRecord
from herald.dynamo import to_item
from herald.dynamo_table import DynamoTable


class DynamoServiceKeyStore(DynamoTable):
    def get_key(self, key_id: str) -> ServiceKeyRecord | None:
        item = self._get_pk(f"KEY#{key_id}")
        if item is None:
            return None
        return ServiceKeyRecord(
            key_id=item["key_id"],
            service_id=item["service_id"],
            secret_hash=item["secret_hash"],
            created_at_ms=item["created_at_ms"],
            revoked_at_ms=item.get("revoked_at_ms"),
        )

    def get_service(self, service_id: str) -> ServiceRecord | None:
        item = self._get_pk(f"SERVICE#{service_id}")
        if item is None:
            return None
        return ServiceRecord(
            service_id=item["service_id"],
            capabilities=frozenset(item.get("capabilities", ())),
            created_at_ms=item["created_at_ms"],
            allowed_targets=frozenset(item.get("allowed_targets", ())),
        )

    def put_service(self, service: ServiceRecord) -> None:
        self._ddb.put_item(
            TableName=self._table,
            Item=to_item(
                {
                    "pk": f"SERVICE#{service.service_id}",
                    "service_id": service.service_id,
                    "capabilities": sorted(service.capabilities),
                    "allowed_targets": sorted(service.allowed_targets),
                    "created_at_ms": service.created_at_ms,
                }
            ),
        )

    def put_key(self, key: ServiceKeyRecord) -> None:
        self._ddb.put_item(
            TableName=self._table,
            Item=to_item(
                {
                    "pk": f"KEY#{key.key_id}",
                    "key_id": key.key_id,
                    "service_id": key.service_id,
                    "secret_hash": key.secret_hash,
                    "created_at_ms": key.created_at_ms,
                    "revoked_at_ms": key.revoked_at_ms,
                }
            ),
            ConditionExpression="attribute_not_exists(pk)",
        )
