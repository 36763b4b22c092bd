"""An SQS event source mapping, as Lambda runs one.

Receives up to `BatchSize` (≤ 10) messages with all attributes, invokes the function with the Lambda SQS
event, and deletes what succeeded. With `ReportBatchItemFailures`, only the reported message ids stay on
the queue (an invalid report fails the whole batch, as in Lambda); without it, any error keeps the whole
batch. Kept messages reappear after the queue's visibility timeout; the queue's redrive policy moves them
to the DLQ after `maxReceiveCount` receives. FIFO group order is the queue's job (see moto_patches).

Receives long-poll, as Lambda's pollers do (20 s): an idle queue costs a request per poller every 20 s, not
every second. Stopping waits only for the invocations under way; a poller still waiting on a receive is left
to end with the process, and what such a receive brings after the stop is handed back to the queue at once.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

from herald_dev.runtime import FunctionError, LocalFunction

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef

log = logging.getLogger("local-cloud")


def sqs_record(message: MessageTypeDef, queue_arn: str, region: str) -> dict[str, Any]:
    """One record of the Lambda SQS event, from a ReceiveMessage message."""
    attributes = {
        name: {
            "stringValue": value.get("StringValue"),
            "binaryValue": value.get("BinaryValue"),
            "stringListValues": value.get("StringListValues", []),
            "binaryListValues": value.get("BinaryListValues", []),
            "dataType": value["DataType"],
        }
        for name, value in message.get("MessageAttributes", {}).items()
    }
    record: dict[str, Any] = {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": dict(message.get("Attributes", {})),
        "messageAttributes": attributes,
        "md5OfBody": message["MD5OfBody"],
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }
    if "MD5OfMessageAttributes" in message:
        record["md5OfMessageAttributes"] = message["MD5OfMessageAttributes"]
    return record


def failed_message_ids(response: Any, batch_ids: list[str]) -> set[str]:
    """Lambda's reading of a partial batch response; anything malformed fails the whole batch."""
    if response is None or not isinstance(response, dict) or "batchItemFailures" not in response:
        return set()
    failures = response["batchItemFailures"]
    if failures is None:
        return set()
    if not isinstance(failures, list):
        return set(batch_ids)
    failed: set[str] = set()
    for failure in failures:
        identifier = failure.get("itemIdentifier") if isinstance(failure, dict) else None
        if not isinstance(identifier, str) or identifier not in batch_ids:
            return set(batch_ids)
        failed.add(identifier)
    return failed


class SqsEventSource:
    def __init__(
        self,
        function: LocalFunction,
        sqs: SQSClient,
        queue_url: str,
        queue_arn: str,
        batch_size: int,
        report_batch_item_failures: bool,
        pollers: int = 2,
        wait_seconds: int = 1,
    ) -> None:
        self.function = function
        self._sqs = sqs
        self.queue_url = queue_url
        self.queue_arn = queue_arn
        self.batch_size = max(1, min(batch_size, 10))
        self.report_failures = report_batch_item_failures
        self._pollers = pollers
        self._wait = wait_seconds
        self._invoking = 0
        self._idle = threading.Condition()

    def start(self, stop: threading.Event) -> None:
        for index in range(self._pollers):
            thread = threading.Thread(
                target=self._run, args=(stop,), name=f"sqs-{self.function.logical_id}-{index}", daemon=True
            )
            thread.start()

    def join(self, timeout: float) -> None:
        """Until no invocation is under way (the stop is set): pollers waiting on a receive are not waited for."""
        with self._idle:
            self._idle.wait_for(lambda: self._invoking == 0, timeout)

    def _run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                self.poll_once(stop)
            except Exception:
                if not stop.is_set():
                    log.exception("sqs poller for %s failed; retrying", self.function.logical_id)
                    stop.wait(1.0)

    def poll_once(self, stop: threading.Event | None = None) -> int:
        """One receive-invoke-delete round; returns how many messages were received."""
        response = self._sqs.receive_message(
            QueueUrl=self.queue_url,
            MaxNumberOfMessages=self.batch_size,
            WaitTimeSeconds=self._wait,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
        )
        messages = response.get("Messages", [])
        if not messages:
            return 0
        with self._idle:  # once the stop is set, nothing more is invoked: what join waits for is known
            stopped = stop is not None and stop.is_set()
            if not stopped:
                self._invoking += 1
        if stopped:
            self._hand_back(messages)
            return 0
        try:
            self._invoke(messages)
        finally:
            with self._idle:
                self._invoking -= 1
                self._idle.notify_all()
        return len(messages)

    def _hand_back(self, messages: list[MessageTypeDef]) -> None:
        """Received after the stop: visible again at once, for the next run (or the next cloud) to take."""
        self._sqs.change_message_visibility_batch(
            QueueUrl=self.queue_url,
            Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"], "VisibilityTimeout": 0}
                for i, m in enumerate(messages)
            ],
        )

    def _invoke(self, messages: list[MessageTypeDef]) -> None:
        region = self.function.region
        event = {"Records": [sqs_record(message, self.queue_arn, region) for message in messages]}
        ids = [message["MessageId"] for message in messages]
        try:
            result = self.function.invoke(event)
            failed = failed_message_ids(result, ids) if self.report_failures else set()
        except FunctionError:
            failed = set(ids)
        done = [m for m in messages if m["MessageId"] not in failed]
        for start in range(0, len(done), 10):
            chunk = done[start : start + 10]
            self._sqs.delete_message_batch(
                QueueUrl=self.queue_url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(chunk)],
            )
        if failed:
            log.info(
                "%s: %d of %d messages failed, left for retry",
                self.function.logical_id,
                len(failed),
                len(ids),
            )
