"""AuditTable: the records in one partition, in time order (an operator's acts are few; a listing reads one
range of it). Each expires RETENTION_DAYS after its act (TTL)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pynamodb.attributes import MapAttribute, TTLAttribute, UnicodeAttribute
from pynamodb.exceptions import UpdateError
from pynamodb.models import Model

from herald.audit.models import BEGUN, AuditRecord
from herald.tables import Database, IntAttribute, condition_failed, ttl

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

LOG = "audit"


class AuditRow(Model):
    log = UnicodeAttribute(hash_key=True)  # LOG
    record_id = UnicodeAttribute(range_key=True)  # AT_MS (13 digits)-RANDOM: time order
    at_ms = IntAttribute()
    actor = UnicodeAttribute()
    verb = UnicodeAttribute()
    target = UnicodeAttribute()
    arguments: MapAttribute[str, Any] = MapAttribute()
    outcome = UnicodeAttribute()
    finished_at_ms = IntAttribute(null=True)
    expires_at = TTLAttribute()

    def record(self) -> AuditRecord:
        return AuditRecord(
            self.record_id,
            self.at_ms,
            self.actor,
            self.verb,
            self.target,
            {str(k): str(v) for k, v in self.arguments.as_dict().items()},
            self.outcome,
            self.finished_at_ms,
        )


class DynamoAuditStore:
    def __init__(self, table_name: str, client: DynamoDBClient | None = None) -> None:
        self._rows = Database(client).bind(AuditRow, table_name)

    def add(self, record: AuditRecord) -> None:
        rows = self._rows
        row = rows(
            LOG,
            record.record_id,
            at_ms=record.at_ms,
            actor=record.actor,
            verb=record.verb,
            target=record.target,
            arguments=record.arguments,
            outcome=record.outcome,
            expires_at=ttl(record.expires_at_s),
        )
        row.save(condition=rows.record_id.does_not_exist())

    def finish(self, record: AuditRecord) -> bool:
        rows = self._rows
        try:
            rows(LOG, record.record_id).update(
                actions=[
                    rows.outcome.set(record.outcome),
                    rows.finished_at_ms.set(record.finished_at_ms or record.at_ms),
                ],
                condition=rows.outcome == BEGUN,
            )
        except UpdateError as error:
            if condition_failed(error):
                return False
            raise
        return True

    def since(self, since_ms: int, limit: int) -> list[AuditRecord]:
        rows = self._rows
        found = rows.query(
            LOG, rows.record_id >= f"{since_ms:013d}", scan_index_forward=False, limit=limit, consistent_read=True
        )
        return [row.record() for row in found]
