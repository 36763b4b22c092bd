"""The IM push queue (SQS FIFO): one message group per receiver, so a receiver's pushes stay in order."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from herald import aws
from herald.confirms.delivery import Push

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


class SqsPushQueue:
    def __init__(self, queue_url: str, client: SQSClient | None = None) -> None:
        self._url = queue_url
        self._client = client

    def publish(self, push: Push, receiver_user_id: str) -> None:
        (self._client or aws.sqs()).send_message(
            QueueUrl=self._url,
            MessageBody=json.dumps(push.to_message(), separators=(",", ":")),
            MessageGroupId=f"{push.app_code}#{receiver_user_id}",
            MessageDeduplicationId=push.dedup_id,
        )
