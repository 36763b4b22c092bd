"""Publishing to an SQS FIFO queue: a JSON body, its message group and its deduplication id."""

from __future__ import annotations

import hashlib
import json
import re
from typing import TYPE_CHECKING, Any

from herald import aws

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


# SQS takes a message group or deduplication id of up to 128 alphanumeric or punctuation characters.
_FIFO_ID = re.compile(r"[!-~]{1,128}")


def fifo_id(value: str) -> str:
    """`value` as a message group or deduplication id: itself when SQS takes it, else a digest of it (the same
    value always gives the same id, so a lane named by a long or non-ASCII target keeps one group)."""
    if _FIFO_ID.fullmatch(value):
        return value
    return "sha256-" + hashlib.sha256(value.encode()).hexdigest()


class FifoQueue:
    def __init__(self, queue_url: str, client: SQSClient | None = None) -> None:
        self._url = queue_url
        self._client = client

    def send(self, body: dict[str, Any], group_id: str, dedup_id: str) -> None:
        self.send_raw(json.dumps(body, separators=(",", ":")), group_id, dedup_id)

    def send_raw(self, body: str, group_id: str, dedup_id: str) -> None:
        """A body already written (a held message going back as it was)."""
        (self._client or aws.sqs()).send_message(
            QueueUrl=self._url,
            MessageBody=body,
            MessageGroupId=fifo_id(group_id),
            MessageDeduplicationId=fifo_id(dedup_id),
        )
