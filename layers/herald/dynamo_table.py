"""The base of every DynamoDB adapter: one table, and a client given or the process-wide one."""

from __future__ import annotations

import random
import time
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from herald import aws
from herald.dynamo import cancellation_reasons, from_item, to_attr
from herald.errors import InvalidArgument

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef

_CONFLICT_RETRIES = 8


def _worth_retrying(exc: ClientError) -> bool:
    """Cancelled only because another transaction held one of the items, or DynamoDB throttled it: worth
    trying again as it is (a failed condition never is)."""
    reasons = set(cancellation_reasons(exc))
    return bool({"TransactionConflict", "ThrottlingError"} & reasons) and "ConditionalCheckFailed" not in reasons


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

    def _transact(self, items: list[TransactWriteItemTypeDef]) -> None:
        """TransactWriteItems, retried (jittered) while it only lost a race for an item with another one or
        was throttled; a failed condition is raised to the caller as TransactionCanceledException."""
        for attempt in range(_CONFLICT_RETRIES):
            try:
                self._ddb.transact_write_items(TransactItems=items)
                return
            except ClientError as exc:
                if not _worth_retrying(exc) or attempt == _CONFLICT_RETRIES - 1:
                    raise
                time.sleep(random.uniform(0, 0.01 * 2**attempt))  # noqa: S311 - jitter, not secrecy

    def _query_page(
        self, params: dict[str, Any], cursor: dict[str, Any] | None
    ) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        """One page of a Query, as plain values, starting after `cursor` (a previous page's last key).
        A cursor DynamoDB refuses (a tampered page token) is the caller's error, not a fault."""
        if cursor:
            params = {**params, "ExclusiveStartKey": {k: to_attr(v) for k, v in cursor.items()}}
        try:
            response = self._ddb.query(**params)
        except ClientError as exc:
            if cursor and exc.response.get("Error", {}).get("Code") == "ValidationException":
                raise InvalidArgument("page_token is malformed") from exc
            raise
        last = response.get("LastEvaluatedKey")
        return [from_item(raw) for raw in response.get("Items", [])], (from_item(last) if last else None)

    def _query_all(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        """Every page of a Query, as plain values."""
        items: list[dict[str, Any]] = []
        cursor: dict[str, Any] | None = None
        while True:
            page, cursor = self._query_page(params, cursor)
            items.extend(page)
            if cursor is None:
                return items

    def _get_pk(self, pk: str) -> dict[str, Any] | None:
        return self._get_item({"pk": {"S": pk}})
