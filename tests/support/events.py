"""Drives the external-event workers in process, on moto, as their event source mappings would: the events
table's stream to the outbox function, dispatch messages to the worker (deleting what succeeded)."""

from __future__ import annotations

import threading
from typing import Any

import boto3
from herald_ops.template import StackTemplate

from herald_dev.sqs_source import failed_message_ids, sqs_record
from tests.support.aws import load_function
from tests.support.lambda_context import FakeLambdaContext
from tests.support.pipeline import StreamTap


class EventsPipeline:
    def __init__(self, stack: StackTemplate) -> None:
        self.stream = StreamTap(stack.get_att("ExternalEventsTable", "StreamArn"))
        self.outbox = load_function("events_outbox").handler
        self.worker = load_function("events_worker").handler
        self.queue_url = stack.resolve({"Ref": "EventsQueue"})
        self.queue_arn = stack.get_att("EventsQueue", "Arn")
        self.dlq_url = stack.resolve({"Ref": "EventsDeadLetters"})
        self.sqs = boto3.client("sqs")
        self.received: list[dict[str, Any]] = []  # every dispatch message the worker was given
        self._deferred: list[str] = []
        self._stream_lock = threading.Lock()  # receipt handles of messages the worker handed back for later

    def pump_stream(self) -> int:
        if not self._stream_lock.acquire(blocking=False):  # one reader of the stream, as Lambda has per shard
            return 0
        try:
            records = self.stream.read()
            if records:
                self.outbox({"Records": records}, FakeLambdaContext())
        finally:
            self._stream_lock.release()
        return len(records)

    def pump_queue(self, visibility_timeout: int | None = None) -> int:
        """One receive-invoke-delete round (batch size 1, as the template's mapping)."""
        params: dict[str, Any] = {"QueueUrl": self.queue_url, "MaxNumberOfMessages": 1, "AttributeNames": ["All"]}
        if visibility_timeout is not None:
            params["VisibilityTimeout"] = visibility_timeout
        messages = self.sqs.receive_message(**params).get("Messages", [])
        if not messages:
            return 0
        self.received.extend(dict(message) for message in messages)
        event = {"Records": [sqs_record(m, self.queue_arn, "us-east-1") for m in messages]}
        result = self.worker(event, FakeLambdaContext(remaining_ms=30_000))
        failed = failed_message_ids(result, [m["MessageId"] for m in messages])
        for message in messages:
            if message["MessageId"] in failed:
                self._deferred.append(message["ReceiptHandle"])
            else:
                self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])
        return len(messages)

    def drain(self, rounds: int = 10) -> None:
        """Everything the stream and the queue hold now, and what that causes (deferred messages stay hidden)."""
        for _ in range(rounds):
            moved = self.pump_stream()
            while self.pump_queue():
                moved += 1
            if not moved:
                return

    def release_deferred(self) -> int:
        """Make deferred dispatch messages visible again, as the end of their backoff would."""
        handles, self._deferred = self._deferred, []
        for handle in handles:
            self.sqs.change_message_visibility(QueueUrl=self.queue_url, ReceiptHandle=handle, VisibilityTimeout=0)
        return len(handles)
