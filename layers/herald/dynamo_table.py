"""The base of every DynamoDB adapter: one table, and a client given or the process-wide one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from herald import aws
from herald.dynamo import from_item

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class DynamoTable:
    def __init__(self, table_name: str, client: DynamoDBClient | None = None) -> None:
        self._table = table_name
        self._client = client

    @property
    def _ddb(self) -> DynamoDBClient:
        return self._client or aws.dynamodb()

    def _get_item(self, key: dict[str, Any]) -> dict[str, Any] | None:
        """A strongly consistent read, as plain values (None when absent)."""
        item = self._ddb.get_item(TableName=self._table, Key=key, ConsistentRead=True).get("Item")
        return from_item(item) if item else None

    def _get_pk(self, pk: str) -> dict[str, Any] | None:
        return self._get_item({"pk": {"S": pk}})
