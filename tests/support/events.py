"""Drives the external-event workers in process, on moto, as their event source mappings would: the events
table's stream to the outbox function, dispatch messages to the worker and status notices to the webhooks function
(deleting what succeeded)."""

from __future__ import annotations

import threading
from typing import Any

import boto3
from herald_ops.template import StackTemplate

from herald_dev.sqs_source import failed_message_ids, sqs_record
from tests.support.aws import load_function
from tests.support.lambda_context import FakeLambdaContext
from tests.support.pipeline import StreamTap

DEFERRED_S = 600  # a message handed back stays hidden this long, or until `release_deferred`


class EventsPipeline:
    def __init__(self, stack: StackTemplate) -> None:
        self.stream = StreamTap(stack.get_att("ExternalEventsTable", "StreamArn"))
        self.outbox = load_function("events_outbox").handler
        self.worker = load_function("events_worker").handler
        self.poster = load_function("event_webhooks").handler
        self.notices_url = stack.resolve({"Ref": "EventWebhooksQueue"})
        self.notices_arn = stack.get_att("EventWebhooksQueue", "Arn")
        self.queue_url = stack.resolve({"Ref": "EventsQueue"})
        self.queue_arn = stack.get_att("EventsQueue", "Arn")
        self.dlq_url = stack.resolve({"Ref": "EventsDeadLetters"})
        self.waiting_url = stack.resolve({"Ref": "EventsWaitingQueue"})
        self.waiting_arn = stack.get_att("EventsWaitingQueue", "Arn")
        self.sqs = boto3.client("sqs")
        self.received: list[dict[str, Any]] = []  # every dispatch message the worker was given
        self.notices: list[dict[str, Any]] = []  # every status notice the webhooks function was given
        # Whether `drain` posts status notices too (the webhooks' tests): each is an invocation, and the time they
        # take between rounds would let a message handed back for a second come back within the same drain.
        self.posts_notices = False
        self._deferred: list[tuple[str, str]] = []  # (queue, receipt handle) of messages handed back for later
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
        """One receive-invoke-delete round of the dispatch queue, or else of the waiting queue (batch size 1, as
        the template's mappings)."""
        return self._pump(self.queue_url, self.queue_arn, self.worker, visibility_timeout, self.received) or self._pump(
            self.waiting_url, self.waiting_arn, self.worker, visibility_timeout, self.received
        )

    def pump_notices(self) -> int:
        """One round of the status webhooks queue: a notice posted (or handed back for later)."""
        return self._pump(self.notices_url, self.notices_arn, self.poster, None, self.notices)

    def _pump(
        self, url: str, arn: str, function: Any, visibility_timeout: int | None, seen: list[dict[str, Any]]
    ) -> int:
        params: dict[str, Any] = {"QueueUrl": url, "MaxNumberOfMessages": 1, "AttributeNames": ["All"]}
        if visibility_timeout is not None:
            params["VisibilityTimeout"] = visibility_timeout
        messages = self.sqs.receive_message(**params).get("Messages", [])
        if not messages:
            return 0
        seen.extend(dict(message) for message in messages)
        event = {"Records": [sqs_record(m, arn, "us-east-1") for m in messages]}
        result = function(event, FakeLambdaContext(remaining_ms=30_000))
        failed = failed_message_ids(result, [m["MessageId"] for m in messages])
        for message in messages:
            if message["MessageId"] in failed:
                # Hidden until released, however long the drain takes: the handler's own delay (a second at
                # least) can pass within one drain on a loaded machine, and the message would come back in it.
                self.sqs.change_message_visibility(
                    QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=DEFERRED_S
                )
                self._deferred.append((url, message["ReceiptHandle"]))
            else:
                self.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        return len(messages)

    def drain(self, rounds: int = 10) -> None:
        """Everything the stream and the queue hold now, and what that causes (deferred messages stay hidden)."""
        for _ in range(rounds):
            moved = self.pump_stream()
            while self.pump_queue():
                moved += 1
            while self.posts_notices and self.pump_notices():
                moved += 1
            if not moved:
                return

    def release_deferred(self) -> int:
        """Make deferred messages (dispatch, notices) visible again, as the end of their backoff would."""
        handles, self._deferred = self._deferred, []
        for url, handle in handles:
            self.sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=handle, VisibilityTimeout=0)
        return len(handles)
