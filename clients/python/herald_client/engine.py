"""An agent engine's side of the turn queue: turns read from the engine's SQS queue (events/turns/
turn.schema.json), each finished (or suspended, resumed) through Herald. The SQS client is the engine's own
(boto3 or any object with receive_message/delete_message), so the SDK does not depend on an AWS SDK."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from herald_client.clients import ServiceClient, Step


class TurnReader:
    def __init__(self, herald: ServiceClient, sqs: Any, queue_url: str, visibility_s: int = 120) -> None:
        self._herald = herald
        self._sqs = sqs
        self._queue_url = queue_url
        self._visibility_s = visibility_s

    def turns(self, wait_s: int = 1) -> Iterator[tuple[dict[str, Any], str]]:
        """The turn queue's messages waiting now, each with its receipt: turns (`"type": "turn"`), for `end` once the
        engine has ended them, and approvals' decisions (`"type": "approval.decided"`), to delete once read."""
        messages = self._sqs.receive_message(
            QueueUrl=self._queue_url,
            MaxNumberOfMessages=10,
            WaitTimeSeconds=wait_s,
            VisibilityTimeout=self._visibility_s,
        ).get("Messages", [])
        for message in messages:
            yield json.loads(message["Body"]), message["ReceiptHandle"]

    def ack(self, receipt: str) -> None:
        """Take a message off the queue without a step: an approval's decision once read, or a turn that now waits
        for an approval (its decision comes after it in the same message group, so the turn must not hold it)."""
        self._sqs.delete_message(QueueUrl=self._queue_url, ReceiptHandle=receipt)

    def end(self, turn: dict[str, Any], receipt: str, step: Step = "finish") -> dict[str, Any]:
        """Finish (or suspend) the turn at Herald, then take it off the queue; a repeated finish is answered."""
        state = self._herald.turn(turn["session_id"], turn["agent"], turn["turn_id"], step, app_code=turn["app_code"])
        self._sqs.delete_message(QueueUrl=self._queue_url, ReceiptHandle=receipt)
        return state
