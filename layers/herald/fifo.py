"""Publishing to an SQS FIFO queue: a JSON body, its message group and its deduplication id."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from herald import aws

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


class FifoQueue:
    def __init__(self, queue_url: str, client: SQSClient | None = None) -> None:
        self._url = queue_url
        self._client = client

    def send(self, body: dict[str, Any], group_id: str, dedup_id: str) -> None:
        (self._client or aws.sqs()).send_message(
            QueueUrl=self._url,
            MessageBody=json.dumps(body, separators=(",", ":")),
            MessageGroupId=group_id,
            MessageDeduplicationId=dedup_id,
        )
