"""The local engine's transactions behave as DynamoDB's: a cancelled one leaves no write and no stream record,
and the table's stream goes on for readers that were already following it (see herald_dev.moto_patches)."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from herald_ops.template import StackTemplate

from tests.support.pipeline import StreamTap


def _transaction(table: str, counter: int, new_pk: str) -> list[Any]:
    return [
        {
            "Update": {
                "TableName": table,
                "Key": {"pk": {"S": "HEAD"}, "sk": {"S": "h"}},
                "UpdateExpression": "SET n = :n",
                "ExpressionAttributeValues": {":n": {"N": str(counter)}},
            }
        },
        {
            "Put": {
                "TableName": table,
                "Item": {"pk": {"S": new_pk}, "sk": {"S": "a"}},
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        },
    ]


def test_cancelled_transaction_leaves_no_write_and_the_stream_goes_on(aws: StackTemplate) -> None:
    ddb = boto3.client("dynamodb")
    table = aws.physical_name("ExternalEventsTable")
    tap = StreamTap(aws.get_att("ExternalEventsTable", "StreamArn"))

    def keys() -> list[str]:
        return [record["dynamodb"]["Keys"]["pk"]["S"] for record in tap.read()]

    ddb.put_item(TableName=table, Item={"pk": {"S": "HEAD"}, "sk": {"S": "h"}, "n": {"N": "0"}})
    assert keys() == ["HEAD"]
    ddb.transact_write_items(TransactItems=_transaction(table, 1, "first"))
    assert keys() == ["HEAD", "first"]

    with pytest.raises(ClientError, match="TransactionCanceled"):
        ddb.transact_write_items(TransactItems=_transaction(table, 2, "first"))  # "first" exists: cancelled
    assert keys() == []
    head = ddb.get_item(TableName=table, Key={"pk": {"S": "HEAD"}, "sk": {"S": "h"}})["Item"]
    assert head["n"] == {"N": "1"}

    ddb.transact_write_items(TransactItems=_transaction(table, 3, "second"))
    assert keys() == ["HEAD", "second"]
