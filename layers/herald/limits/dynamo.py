"""DynamoDB counter for the rate limiter: one item a window, incremented only while below the limit."""

from __future__ import annotations

from botocore.exceptions import ClientError

from herald.dynamo import is_conditional_check_failed, to_attr
from herald.dynamo_table import DynamoTable


class DynamoCounter(DynamoTable):
    def hit(self, bucket: str, limit: int, expires_at_s: int) -> bool:
        try:
            self._ddb.update_item(
                TableName=self._table,
                Key={"pk": {"S": bucket}},
                UpdateExpression="ADD hits :one SET expires_at = :expires",
                ConditionExpression="attribute_not_exists(hits) OR hits < :limit",
                ExpressionAttributeValues={
                    ":one": to_attr(1),
                    ":limit": to_attr(limit),
                    ":expires": to_attr(expires_at_s),
                },
            )
        except ClientError as exc:
            if is_conditional_check_failed(exc):
                return False
            raise
        return True
