"""HoldsTable: one item a held message, under its scope (what is paused)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pynamodb.attributes import UnicodeAttribute
from pynamodb.exceptions import DeleteError, PutError
from pynamodb.models import Model

from herald.holds.models import PAUSES_SCOPE, Held, HeldQueue, Pause
from herald.tables import Database, IntAttribute, condition_failed

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class HeldRow(Model):
    scope = UnicodeAttribute(hash_key=True)
    held_key = UnicodeAttribute(range_key=True)
    queue = UnicodeAttribute()
    body = UnicodeAttribute()
    group_id = UnicodeAttribute()
    held_at_ms = IntAttribute()

    def held(self) -> Held:
        return Held(self.scope, self.held_key, HeldQueue(self.queue), self.body, self.group_id, self.held_at_ms)


class PauseRow(Model):
    scope = UnicodeAttribute(hash_key=True)  # PAUSES_SCOPE
    held_key = UnicodeAttribute(range_key=True)  # the pause's key
    paused_by = UnicodeAttribute()
    note = UnicodeAttribute()
    since_ms = IntAttribute()


class DynamoHoldStore:
    def __init__(self, table_name: str, client: DynamoDBClient | None = None) -> None:
        database = Database(client)
        self._rows = database.bind(HeldRow, table_name)
        self._pauses = database.bind(PauseRow, table_name)

    def put(self, held: Held) -> None:
        self._rows(
            held.scope,
            held.key,
            queue=str(held.queue),
            body=held.body,
            group_id=held.group_id,
            held_at_ms=held.held_at_ms,
        ).save()

    def in_scope(self, scope: str) -> list[Held]:
        return [row.held() for row in self._rows.query(scope, consistent_read=True)]

    def delete(self, held: Held) -> None:
        self._rows(held.scope, held.key).delete()

    def put_pause(self, pause: Pause) -> bool:
        rows = self._pauses
        row = rows(PAUSES_SCOPE, pause.key, paused_by=pause.by, note=pause.note, since_ms=pause.since_ms)
        try:
            row.save(condition=rows.held_key.does_not_exist())
        except PutError as error:
            if condition_failed(error):
                return False
            raise
        return True

    def pauses(self) -> list[Pause]:
        rows = self._pauses.query(PAUSES_SCOPE, consistent_read=True)
        return [Pause(row.held_key, row.paused_by, row.note, row.since_ms) for row in rows]

    def delete_pause(self, key: str) -> bool:
        rows = self._pauses
        try:
            rows(PAUSES_SCOPE, key).delete(condition=rows.held_key.exists())
        except DeleteError as error:
            if condition_failed(error):
                return False
            raise
        return True
