"""DynamoDB adapter for service keys: one item a key (`pk` = `KEY#<key_id>`), found by service through
the `by_service` index. The secret itself is never stored, only its hash."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pynamodb.attributes import BooleanAttribute, UnicodeAttribute
from pynamodb.exceptions import UpdateError
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex
from pynamodb.models import Model

from herald.auth.models import ServiceKeyRecord
from herald.errors import NotFound
from herald.tables import Database, IntAttribute, condition_failed, string_list
from herald.targets import SERVICE_ORDER

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class ByService(GlobalSecondaryIndex["ServiceKeyRow"]):
    class Meta:
        index_name = "by_service"
        projection = AllProjection()

    service_id = UnicodeAttribute(hash_key=True)


class ServiceKeyRow(Model):
    """ServiceKeysTable: one item a key."""

    pk = UnicodeAttribute(hash_key=True)  # "KEY#<key_id>"
    key_id = UnicodeAttribute(null=True)  # absent on a service record of an older release
    service_id = UnicodeAttribute()
    secret_hash = UnicodeAttribute()
    created_at_ms = IntAttribute()
    capabilities = string_list(null=True)
    app_codes = string_list(null=True)
    targets = string_list(null=True)
    allow_markdown = BooleanAttribute(null=True)
    target_rate = IntAttribute(null=True)
    event_order = UnicodeAttribute(null=True)  # absent: the service's own order
    share_weight = IntAttribute(null=True)  # absent: 1
    expires_at_ms = IntAttribute(null=True)
    revoked_at_ms = IntAttribute(null=True)
    last_used_at_ms = IntAttribute(null=True)
    rotated_from = UnicodeAttribute(null=True)
    by_service = ByService()

    def record(self) -> ServiceKeyRecord:
        return ServiceKeyRecord(
            key_id=self.key_id or "",
            service_id=self.service_id,
            secret_hash=self.secret_hash,
            created_at_ms=self.created_at_ms,
            capabilities=frozenset(self.capabilities or ()),
            app_codes=frozenset(self.app_codes or ()),
            targets=frozenset(self.targets or ()),
            allow_markdown=bool(self.allow_markdown),
            target_rate=self.target_rate,
            order=self.event_order or SERVICE_ORDER,
            weight=self.share_weight or 1,
            expires_at_ms=self.expires_at_ms,
            revoked_at_ms=self.revoked_at_ms,
            last_used_at_ms=self.last_used_at_ms,
            rotated_from=self.rotated_from,
        )


def _pk(key_id: str) -> str:
    return f"KEY#{key_id}"


class DynamoServiceKeyStore:
    def __init__(self, table_name: str, client: DynamoDBClient | None = None) -> None:
        self._rows = Database(client).bind(ServiceKeyRow, table_name)

    def get_key(self, key_id: str) -> ServiceKeyRecord | None:
        try:
            row = self._rows.get(_pk(key_id), consistent_read=True)
        except self._rows.DoesNotExist:
            return None
        return row.record() if row.key_id else None

    def put_key(self, key: ServiceKeyRecord) -> None:
        self._rows(
            pk=_pk(key.key_id),
            key_id=key.key_id,
            service_id=key.service_id,
            secret_hash=key.secret_hash,
            created_at_ms=key.created_at_ms,
            capabilities=sorted(key.capabilities),
            app_codes=sorted(key.app_codes),
            targets=sorted(key.targets),
            allow_markdown=key.allow_markdown,
            target_rate=key.target_rate,
            event_order=None if key.order == SERVICE_ORDER else key.order,
            share_weight=None if key.weight == 1 else key.weight,
            expires_at_ms=key.expires_at_ms,
            revoked_at_ms=key.revoked_at_ms,
            rotated_from=key.rotated_from,
        ).save(condition=self._rows.pk.does_not_exist())

    def keys_of(self, service_id: str) -> list[ServiceKeyRecord]:
        return [row.record() for row in self._rows.by_service.query(service_id) if row.key_id]

    def all_keys(self) -> list[ServiceKeyRecord]:
        """Every key (an operator's listing: a small table)."""
        return [row.record() for row in self._rows.scan() if row.key_id]

    def revoke(self, key_id: str, at_ms: int) -> ServiceKeyRecord:
        """Set when the key stops working; an earlier revocation already set stands."""
        row = self._rows(pk=_pk(key_id))
        try:
            row.update(
                actions=[self._rows.revoked_at_ms.set(at_ms)],
                condition=self._rows.pk.exists()
                & (self._rows.revoked_at_ms.does_not_exist() | (self._rows.revoked_at_ms > at_ms)),
            )
        except UpdateError as error:
            if not condition_failed(error):
                raise
            record = self.get_key(key_id)
            if record is None:
                raise NotFound(f"no key {key_id}") from error
            return record
        return row.record()

    def touch(self, key_id: str, at_ms: int) -> None:
        self._rows(pk=_pk(key_id)).update(
            actions=[self._rows.last_used_at_ms.set(at_ms)], condition=self._rows.pk.exists()
        )
