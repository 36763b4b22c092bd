"""Shared mechanics of stream and queue workers: Lambda's partial batch responses, retries, dead letters.

* Stream records arrive as plain dicts of their old and new images; a record whose handler raises is
  reported, so Lambda retries from it (handlers are idempotent).
* FIFO queue records: a failure skips the rest of its message group in the batch (other groups go on). A
  worker may run a batch's groups side by side (`groups_at_once`), each in its own order; a group that ends
  before the others deletes its done records itself, so no lane waits on another's provider call.
  A failed message is hidden for an exponential backoff before it comes back (or for exactly the delay a
  handler asks for with `RetryLater`); the group members skipped behind it are hidden just as long, so they
  come back with it, in order. A record that can never succeed raises `PermanentFailure`: it is moved to
  the dead-letter queue with its reason at once. A record left without time for its provider call
  (`budgets.OutOfTime`, nothing sent) comes back at once.
* Every invocation runs inside `budgets.invocation`, so each provider call checks the time left first.
"""

from __future__ import annotations

import contextvars
import math
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from herald import aws, budgets
from herald.clock import now_ms
from herald.container import current
from herald.dynamo import Image
from herald.observability import logger, metrics

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

MAX_BACKOFF_SECONDS = 300  # a failure's backoff; a `RetryLater` delay is the handler's own, up to SQS's limit
SQS_MAX_VISIBILITY_SECONDS = 43_200  # ChangeMessageVisibility's maximum (12 hours)

StreamHandler = Callable[[Image | None, Image | None], None]


class PermanentFailure(Exception):
    """This message can never be processed: dead-letter it now, with the reason."""


class RetryLater(Exception):
    """Not now: bring this message back after `delay_s` seconds (at least one)."""

    def __init__(self, message: str, delay_s: float) -> None:
        super().__init__(message)
        self.delay_s = delay_s


@dataclass(frozen=True, slots=True)
class QueueMessage:
    """One SQS record as Lambda delivers it, reduced to what a worker reads."""

    message_id: str
    body: str
    group_id: str
    receipt_handle: str
    receive_count: int
    sent_ms: int

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> QueueMessage:
        attributes = record.get("attributes") or {}
        return cls(
            message_id=str(record["messageId"]),
            body=str(record.get("body", "")),
            group_id=str(attributes.get("MessageGroupId") or ""),
            receipt_handle=str(record.get("receiptHandle", "")),
            receive_count=int(attributes.get("ApproximateReceiveCount") or 1),
            sent_ms=int(attributes.get("SentTimestamp") or 0),
        )


def _failures(identifiers: list[str]) -> dict[str, Any]:
    """Lambda's partial batch response (ReportBatchItemFailures): only these records come back."""
    return {"batchItemFailures": [{"itemIdentifier": identifier} for identifier in identifiers]}


def process_stream(event: dict[str, Any], context: Any, handle: StreamHandler) -> dict[str, Any]:
    """Records in shard order; the first that fails is reported and the rest wait for the retry.

    Lambda resumes a stream batch from the lowest sequence number reported, so stopping there keeps each
    shard's order (the records after it run again on the retry; handlers are idempotent)."""
    for record in event.get("Records", []):
        images = record.get("dynamodb", {})
        old, new = images.get("OldImage"), images.get("NewImage")
        try:
            handle(old or None, new or None)
        except Exception:
            logger.exception("stream record failed", sequence_number=images.get("SequenceNumber"))
            return _failures([str(images.get("SequenceNumber", ""))])
    return _failures([])


def from_queue(event: Mapping[str, Any], queue_url: str) -> bool:
    """Whether the batch came from the queue at `queue_url` (a function mapped to two queues; a queue's ARN ends
    with its name, as its URL does)."""
    records = event.get("Records") or [{}]
    source = str(records[0].get("eventSourceARN", ""))
    return bool(source) and source.rsplit(":", 1)[-1] == queue_url.rstrip("/").rsplit("/", 1)[-1]


def backoff_seconds(receive_count: int) -> int:
    return int(min(2**receive_count, MAX_BACKOFF_SECONDS))


def process_fifo(
    event: dict[str, Any],
    context: Any,
    handle: Callable[[QueueMessage], None],
    *,
    queue_url: str,
    dead_letter_queue_url: str,
    lag_metric: str,
    groups_at_once: int = 1,
) -> dict[str, Any]:
    """`lag_metric` receives, per record, how long it waited in the queue (ms since it was first sent). With
    `groups_at_once` > 1 the batch's message groups run side by side (a provider's answer time then bounds each
    group, not the whole batch), each group's records in their order."""
    messages = [QueueMessage.from_record(record) for record in event.get("Records", [])]
    groups: dict[str, list[QueueMessage]] = {}
    for message in messages:
        groups.setdefault(message.group_id, []).append(message)

    def run(group: list[QueueMessage]) -> list[QueueMessage]:
        """The group's records that come back, hidden at once: a group's first failed record sets how long, and
        the records behind it in the batch come back with it, in order."""
        for index, message in enumerate(group):
            delay = _handle_one(message, handle, dead_letter_queue_url, lag_metric)
            if delay is not None:
                for returned in group[index:]:
                    _hide(returned, delay, queue_url)
                return group[index:]
        return []

    with budgets.invocation(context.get_remaining_time_in_millis):
        if groups_at_once > 1 and len(groups) > 1:
            running = _RunningGroups(len(groups))

            def run_beside(group: list[QueueMessage]) -> list[QueueMessage]:
                returned = run(group)
                if running.end_one():  # others still run: Lambda would hold this group's lane until they end
                    _delete(group[: len(group) - len(returned)], queue_url)
                return returned

            runs = [(contextvars.copy_context(), group) for group in groups.values()]  # each with the time budget
            with ThreadPoolExecutor(max_workers=min(groups_at_once, len(runs))) as pool:
                outcomes = list(pool.map(lambda job: job[0].run(run_beside, job[1]), runs))
        else:
            outcomes = [run(group) for group in groups.values()]
    returned = {message.message_id for failed in outcomes for message in failed}
    return _failures([message.message_id for message in messages if message.message_id in returned])


class _RunningGroups:
    """How many of a batch's groups still run side by side. Lambda deletes a batch's records only when the
    invocation returns, and a FIFO group with a record in flight hands out nothing else: a group that ends while
    another still waits on its provider deletes its own done records, so its lane goes on at once."""

    def __init__(self, count: int) -> None:
        self._count = count
        self._lock = threading.Lock()

    def end_one(self) -> bool:
        """One group ended; whether any other still runs."""
        with self._lock:
            self._count -= 1
            return self._count > 0


def _handle_one(
    message: QueueMessage, handle: Callable[[QueueMessage], None], dead_letter_queue_url: str, lag_metric: str
) -> int | None:
    """Runs one record; returns None when it is done with, or the seconds to hide it before it comes back."""
    if message.sent_ms:
        metrics.add_metric(name=lag_metric, unit="Milliseconds", value=max(0, now_ms() - message.sent_ms))
    try:
        handle(message)
    except PermanentFailure as exc:
        try:
            _dead_letter(message, str(exc), dead_letter_queue_url)
        except Exception:  # not lost: it comes back, and is dead-lettered then
            logger.warning("dead letter not sent; the message comes back", message_id=message.message_id, exc_info=True)
            return backoff_seconds(message.receive_count)
    except budgets.OutOfTime as exc:
        logger.info("queue message returned untried", message_id=message.message_id, reason=str(exc))
        return 0
    except RetryLater as exc:
        logger.info("queue message deferred", message_id=message.message_id, reason=str(exc), delay_s=exc.delay_s)
        return min(SQS_MAX_VISIBILITY_SECONDS, max(1, math.ceil(exc.delay_s)))
    except Exception:
        logger.warning("queue message failed; it will be retried", message_id=message.message_id, exc_info=True)
        return backoff_seconds(message.receive_count)
    return None


def _hide(message: QueueMessage, delay_s: int, queue_url: str) -> None:
    """Hide a returned record for `delay_s`. A failure is this record's alone: it comes back when the visibility
    it was received with ends. Raised, it would fail the whole invocation, and every record of the batch, done or
    not, would come back only then, holding up each of their groups."""
    try:
        _sqs().change_message_visibility(
            QueueUrl=queue_url, ReceiptHandle=message.receipt_handle, VisibilityTimeout=delay_s
        )
    except Exception:
        logger.warning(
            "visibility not changed; it comes back at the queue's", message_id=message.message_id, exc_info=True
        )


def _delete(done: list[QueueMessage], queue_url: str) -> None:
    """Delete records already done (at most a batch: ten). A failure costs nothing: Lambda deletes them again when
    the invocation returns (a second delete of a deleted record succeeds, as SQS documents)."""
    if not done:
        return
    entries = [{"Id": str(index), "ReceiptHandle": message.receipt_handle} for index, message in enumerate(done)]
    try:
        _sqs().delete_message_batch(QueueUrl=queue_url, Entries=entries)  # type: ignore[arg-type]
    except Exception:
        logger.warning("done records not deleted early; Lambda deletes them", exc_info=True)


def _sqs() -> SQSClient:
    """The process container's SQS client (a test's own, or the process's)."""
    return current().clients.sqs or aws.sqs()


def _dead_letter(message: QueueMessage, reason: str, queue_url: str) -> None:
    logger.error("message dead-lettered", message_id=message.message_id, reason=reason)
    _sqs().send_message(
        QueueUrl=queue_url,
        MessageBody=message.body,
        MessageGroupId=message.group_id or "default",
        MessageDeduplicationId=message.message_id,
        MessageAttributes={
            "failure_reason": {"DataType": "String", "StringValue": reason[:1000]},
            "source_message_id": {"DataType": "String", "StringValue": message.message_id},
        },
    )
