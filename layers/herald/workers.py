"""Shared mechanics of stream and queue workers (Powertools batch processing, partial failures).

* Stream records arrive as plain dicts of their old and new images; a record whose handler raises is
  reported, so Lambda retries from it (handlers are idempotent).
* FIFO queue records: a failure skips the rest of its message group in the batch (other groups go on).
  A failed message is hidden for an exponential backoff before it comes back (or for exactly the delay a
  handler asks for with `RetryLater`); the group members skipped behind it are hidden just as long, so they
  come back with it, in order. A record that can never succeed raises `PermanentFailure`: it is moved to
  the dead-letter queue with its reason at once. A record left without time for its provider call
  (`budgets.OutOfTime`, nothing sent) comes back at once.
* Every invocation runs inside `budgets.invocation`, so each provider call checks the time left first.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    SqsFifoPartialProcessor,
    process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from herald import aws, budgets
from herald.clock import now_ms
from herald.dynamo import Image
from herald.observability import logger, metrics

MAX_BACKOFF_SECONDS = 300

StreamHandler = Callable[[Image | None, Image | None], None]


class PermanentFailure(Exception):
    """This message can never be processed: dead-letter it now, with the reason."""


class RetryLater(Exception):
    """Not now: bring this message back after `delay_s` seconds (at least one)."""

    def __init__(self, message: str, delay_s: float) -> None:
        super().__init__(message)
        self.delay_s = delay_s


def process_stream(event: dict[str, Any], context: Any, handle: StreamHandler) -> dict[str, Any]:
    def record_handler(record: DynamoDBRecord) -> None:
        images = record.raw_event.get("dynamodb", {})
        old, new = images.get("OldImage"), images.get("NewImage")
        try:
            handle(old or None, new or None)
        except Exception:
            logger.exception("stream record failed", sequence_number=images.get("SequenceNumber"))
            raise

    processor = BatchProcessor(event_type=EventType.DynamoDBStreams, raise_on_entire_batch_failure=False)
    return dict(
        process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)
    )


def backoff_seconds(receive_count: int) -> int:
    return int(min(2**receive_count, MAX_BACKOFF_SECONDS))


def process_fifo(
    event: dict[str, Any],
    context: Any,
    handle: Callable[[SQSRecord], None],
    *,
    queue_url: str,
    dead_letter_queue_url: str,
    lag_metric: str,
) -> dict[str, Any]:
    """`lag_metric` receives, per record, how long it waited in the queue (ms since it was first sent)."""
    records = {r["messageId"]: r for r in event.get("Records", [])}
    hidden_for: dict[str, int] = {}  # message id -> seconds, for each record whose handler failed
    group_hidden_for: dict[str, int] = {}  # message group -> seconds, set by its first failed record

    def hide(record: SQSRecord, seconds: int) -> None:
        hidden_for[record.message_id] = seconds
        group_hidden_for.setdefault(record.attributes.message_group_id or "", seconds)

    def record_handler(record: SQSRecord) -> None:
        sent_ms = int(record.attributes.sent_timestamp or 0)
        if sent_ms:
            metrics.add_metric(name=lag_metric, unit="Milliseconds", value=max(0, now_ms() - sent_ms))
        try:
            handle(record)
        except PermanentFailure as exc:
            _dead_letter(record, str(exc), dead_letter_queue_url)
        except budgets.OutOfTime as exc:
            logger.info("queue message returned untried", message_id=record.message_id, reason=str(exc))
            hide(record, 0)
            raise
        except RetryLater as exc:
            logger.info("queue message deferred", message_id=record.message_id, reason=str(exc), delay_s=exc.delay_s)
            hide(record, min(MAX_BACKOFF_SECONDS, max(1, math.ceil(exc.delay_s))))
            raise
        except Exception:
            logger.warning("queue message failed; it will be retried", message_id=record.message_id, exc_info=True)
            hide(record, backoff_seconds(int(record.attributes.approximate_receive_count or 1)))
            raise

    processor = SqsFifoPartialProcessor(skip_group_on_error=True)
    processor.raise_on_entire_batch_failure = False  # report every failure, so each gets its backoff
    with budgets.invocation(context.get_remaining_time_in_millis):
        response: dict[str, Any] = dict(
            process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)
        )
    failures: list[dict[str, str]] = response.get("batchItemFailures", [])
    for failure in failures:
        raw = records[failure["itemIdentifier"]]
        delay = hidden_for.get(raw["messageId"])
        if delay is None:  # skipped behind a failure in its group: back together with it
            delay = group_hidden_for.get(raw["attributes"].get("MessageGroupId", ""), 0)
        aws.sqs().change_message_visibility(
            QueueUrl=queue_url, ReceiptHandle=raw["receiptHandle"], VisibilityTimeout=delay
        )
    return response


def _dead_letter(record: SQSRecord, reason: str, queue_url: str) -> None:
    logger.error("message dead-lettered", message_id=record.message_id, reason=reason)
    aws.sqs().send_message(
        QueueUrl=queue_url,
        MessageBody=record.body,
        MessageGroupId=record.attributes.message_group_id or "default",
        MessageDeduplicationId=record.message_id,
        MessageAttributes={
            "failure_reason": {"DataType": "String", "StringValue": reason[:1000]},
            "source_message_id": {"DataType": "String", "StringValue": record.message_id},
        },
    )
