"""DynamoDB counter for the rate limiter: one item a window, incremented only while below the limit, and read
(strongly) once closed, for the sliding window's estimate."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pynamodb.attributes import TTLAttribute, UnicodeAttribute
from pynamodb.exceptions import UpdateError
from pynamodb.models import Model

from herald.tables import Database, IntAttribute, condition_failed, ttl

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class WindowRow(Model):
    """RateLimitsTable: requests counted in one fixed window of one bucket (user, key or target)."""

    pk = UnicodeAttribute(hash_key=True)
    hits = IntAttribute(null=True)
    expires_at = TTLAttribute(null=True)


class DynamoCounter:
    def __init__(self, table_name: str, client: DynamoDBClient | None = None) -> None:
        self._rows = Database(client).bind(WindowRow, table_name)

    def hit(self, bucket: str, limit: int, expires_at_s: int) -> bool:
        row = self._rows(pk=bucket)
        try:
            row.update(
                actions=[
                    self._rows.hits.add(1),
                    self._rows.expires_at.set(ttl(expires_at_s)),
                ],
                condition=self._rows.hits.does_not_exist() | (self._rows.hits < limit),
            )
        except UpdateError as error:
            if condition_failed(error):
                return False
            raise
        return True

    def count(self, bucket: str) -> int:
        try:
            return int(self._rows.get(bucket, consistent_read=True).hits or 0)
        except self._rows.DoesNotExist:
            return 0
