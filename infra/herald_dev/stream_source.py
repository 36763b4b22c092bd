"""A DynamoDB Streams event source mapping, as Lambda runs one.

One reader per shard, parents before children. A batch is up to `BatchSize` records in the Lambda event
shape (`eventSourceARN` added, attribute values as JSON). Success advances past the batch. With
`ReportBatchItemFailures`, a reported sequence number is the checkpoint: processing resumes from it. A
function error retries the batch, halving it first when `BisectBatchOnFunctionError` (a split does not
count as a retry); after `MaximumRetryAttempts` the batch's description goes to the `OnFailure`
destination queue and the reader moves on, as Lambda does. A record this emulator cannot shape is
delivered all the same (keys only), so it takes that path instead of stopping the shard.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import logging
import threading
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from herald_dev.runtime import FunctionError, LocalFunction
from herald_dev.write_signal import WriteSignal

if TYPE_CHECKING:
    from mypy_boto3_dynamodbstreams import DynamoDBStreamsClient
    from mypy_boto3_sqs import SQSClient

log = logging.getLogger("local-cloud")


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, dt.datetime):
        return int(value.timestamp())
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | set | tuple):
        return [_jsonable(v) for v in value]
    return value


def _repair_value(value: Any) -> Any:
    """DynamoDB Local streams an empty map as `{}` where DynamoDB sends `{"M": {}}`."""
    if value == {}:
        return {"M": {}}
    if isinstance(value, dict) and "M" in value:
        return {"M": {k: _repair_value(v) for k, v in value["M"].items()}}
    if isinstance(value, dict) and "L" in value:
        return {"L": [_repair_value(v) for v in value["L"]]}
    return value


def stream_record(record: Any, stream_arn: str, region: str) -> dict[str, Any]:
    """A GetRecords record as Lambda delivers it: JSON-ready, with the stream's ARN, and with DynamoDB
    Local's quirks (its placeholder region "ddblocal", empty maps as `{}`) made as DynamoDB has them."""
    shaped: dict[str, Any] = _jsonable(dict(record))
    shaped["eventSourceARN"] = stream_arn
    shaped["awsRegion"] = region
    images = shaped.get("dynamodb", {})
    for image in ("Keys", "NewImage", "OldImage"):
        if image in images:
            images[image] = {name: _repair_value(value) for name, value in images[image].items()}
    return shaped


def delivered_record(record: Any, stream_arn: str, region: str) -> dict[str, Any]:
    """The record as Lambda would deliver it; one this emulator cannot shape is still delivered, with its
    keys and sequence number only, so the function decides (and a poison record takes the OnFailure path
    and the shard moves on) instead of the reader retrying the same read forever."""
    try:
        return stream_record(record, stream_arn, region)
    except Exception:
        log.exception("stream record %s could not be shaped; delivering its keys only", record.get("eventID"))
        images = record.get("dynamodb", {})
        return {
            "eventID": record.get("eventID"),
            "eventName": record.get("eventName"),
            "eventSource": "aws:dynamodb",
            "eventSourceARN": stream_arn,
            "awsRegion": region,
            "dynamodb": {
                "Keys": _jsonable(images.get("Keys", {})),
                "SequenceNumber": images["SequenceNumber"],
                "SizeBytes": images.get("SizeBytes", 0),
                "StreamViewType": images.get("StreamViewType"),
            },
        }


def failed_sequence(response: Any, sequence_numbers: list[str]) -> str | None:
    """The earliest reported failure; a malformed report fails from the first record, as in Lambda."""
    if not isinstance(response, dict) or not response.get("batchItemFailures"):
        return None
    failures = response["batchItemFailures"]
    if not isinstance(failures, list):
        return sequence_numbers[0]
    reported = []
    for failure in failures:
        identifier = failure.get("itemIdentifier") if isinstance(failure, dict) else None
        if identifier not in sequence_numbers:
            return sequence_numbers[0]
        reported.append(sequence_numbers.index(identifier))
    return sequence_numbers[min(reported)]


@dataclass
class StreamSettings:
    batch_size: int = 100
    starting_position: str = "TRIM_HORIZON"
    report_batch_item_failures: bool = False
    maximum_retry_attempts: int = -1
    bisect_on_error: bool = False
    on_failure_queue_url: str | None = None
    # The DynamoDB writes seen (the embedded moto's own, or those the functions tell: `write_signal`): an idle
    # reader waits for the next one, at most `idle_wait_seconds` (a write nobody told of), instead of polling.
    writes: WriteSignal = field(default_factory=WriteSignal)
    idle_wait_seconds: float = 2.0


class StreamEventSource:
    def __init__(
        self,
        function: LocalFunction,
        streams: DynamoDBStreamsClient,
        sqs: SQSClient,
        stream_arn: str,
        settings: StreamSettings,
    ) -> None:
        self.function = function
        self._streams = streams
        self._sqs = sqs
        self.stream_arn = stream_arn
        self.settings = settings
        self._started_shards: set[str] = set()
        self._finished_shards: set[str] = set()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    def start(self, stop: threading.Event) -> None:
        thread = threading.Thread(
            target=self._discover, args=(stop,), name=f"stream-{self.function.logical_id}", daemon=True
        )
        thread.start()
        self._threads.append(thread)

    def join(self, timeout: float) -> None:
        self.settings.writes.wake()  # readers waiting for a write see the stop now
        for thread in list(self._threads):
            thread.join(timeout)

    def _discover(self, stop: threading.Event) -> None:
        """Start a reader for every shard whose parent is done (or unknown), re-checking for new shards."""
        first = True
        while not stop.is_set():
            try:
                shards = self._streams.describe_stream(StreamArn=self.stream_arn)["StreamDescription"]["Shards"]
                known = {shard["ShardId"] for shard in shards}
                for shard in shards:
                    shard_id = shard["ShardId"]
                    parent = shard.get("ParentShardId")
                    with self._lock:
                        ready = parent is None or parent not in known or parent in self._finished_shards
                        if shard_id in self._started_shards or not ready:
                            continue
                        self._started_shards.add(shard_id)
                    position = self.settings.starting_position if first or parent is None else "TRIM_HORIZON"
                    thread = threading.Thread(
                        target=self._read_shard,
                        args=(shard_id, position, stop),
                        name=f"stream-{self.function.logical_id}-{shard_id[-8:]}",
                        daemon=True,
                    )
                    thread.start()
                    self._threads.append(thread)
                first = False
            except Exception:
                log.exception("describing stream %s failed", self.stream_arn)
            stop.wait(2.0)

    def _iterator(self, shard_id: str, position: str, after: str | None) -> str | None:
        kwargs: dict[str, Any] = {"StreamArn": self.stream_arn, "ShardId": shard_id}
        if after is not None:
            kwargs.update(ShardIteratorType="AFTER_SEQUENCE_NUMBER", SequenceNumber=after)
        else:
            kwargs["ShardIteratorType"] = position
        return self._streams.get_shard_iterator(**kwargs)["ShardIterator"]

    def _read_shard(self, shard_id: str, position: str, stop: threading.Event) -> None:
        """Read one shard to its end. A failed read (an expired iterator, DynamoDB Local's spurious
        TrimmedDataAccessException) resumes after the last record read, never skipping one."""
        last_read: str | None = None
        iterator: str | None = None
        buffer: list[dict[str, Any]] = []
        fresh = True
        while not stop.is_set():
            generation = self.settings.writes.generation
            try:
                if fresh:
                    iterator, fresh = self._iterator(shard_id, position, last_read), False
                if iterator is not None and len(buffer) < self.settings.batch_size:
                    response = self._streams.get_records(ShardIterator=iterator, Limit=1000)
                    records = [
                        delivered_record(r, self.stream_arn, self.function.region) for r in response.get("Records", [])
                    ]
                    if records:
                        last_read = records[-1]["dynamodb"]["SequenceNumber"]
                    buffer.extend(records)
                    iterator = response.get("NextShardIterator")
            except Exception as exc:
                log.warning("reading %s shard %s failed (%s); resuming", self.function.logical_id, shard_id[-8:], exc)
                fresh = True
                stop.wait(0.5)
                continue
            if not buffer:
                if iterator is None:
                    break
                self._idle(generation)
                continue
            buffer = self._deliver(shard_id, buffer, stop)
        with self._lock:
            self._finished_shards.add(shard_id)

    def _idle(self, generation: int) -> None:
        """Nothing new in the shard since `generation`: wait for a write (or the cloud's stop, which wakes it)."""
        self.settings.writes.wait_after(generation, self.settings.idle_wait_seconds)

    def _deliver(self, shard_id: str, buffer: list[dict[str, Any]], stop: threading.Event) -> list[dict[str, Any]]:
        """Deliver the head of the buffer until it succeeds or is given up; returns what remains."""
        limit = self.settings.batch_size
        attempts = 0
        while not stop.is_set():
            batch = buffer[:limit]
            sequence_numbers = [r["dynamodb"]["SequenceNumber"] for r in batch]
            try:
                response = self.function.invoke({"Records": batch})
                failed_at = (
                    failed_sequence(response, sequence_numbers) if self.settings.report_batch_item_failures else None
                )
            except FunctionError as exc:
                if self.settings.bisect_on_error and len(batch) > 1:
                    limit = (len(batch) + 1) // 2  # splitting a batch does not count towards the retry quota
                    continue
                attempts += 1
                if self._exhausted(attempts):
                    self._give_up(shard_id, batch, attempts, str(exc))
                    return buffer[len(batch) :]
                stop.wait(min(2.0, 0.1 * 2**attempts))
                continue
            if failed_at is None:
                return buffer[len(batch) :]
            buffer = buffer[sequence_numbers.index(failed_at) :]
            attempts += 1
            if self._exhausted(attempts):
                self._give_up(shard_id, buffer[:limit], attempts, "batch item failure")
                return buffer[limit:]
            stop.wait(min(2.0, 0.1 * 2**attempts))
        return buffer

    def _exhausted(self, attempts: int) -> bool:
        maximum = self.settings.maximum_retry_attempts
        return maximum >= 0 and attempts > maximum

    def _give_up(self, shard_id: str, batch: list[dict[str, Any]], attempts: int, error: str) -> None:
        log.error(
            "%s: giving up on %d stream records after %d attempts",
            self.function.logical_id,
            len(batch),
            attempts,
        )
        if not self.settings.on_failure_queue_url:
            return
        body = {
            "requestContext": {
                "requestId": str(uuid.uuid4()),
                "functionArn": self.function.properties.get("Arn", self.function.name),
                "condition": "RetryAttemptsExhausted",
                "approximateInvokeCount": attempts,
            },
            "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": error},
            "version": "1.0",
            "timestamp": dt.datetime.now(dt.UTC).isoformat(),
            "DDBStreamBatchInfo": {
                "shardId": shard_id,
                "startSequenceNumber": batch[0]["dynamodb"]["SequenceNumber"],
                "endSequenceNumber": batch[-1]["dynamodb"]["SequenceNumber"],
                "approximateArrivalOfFirstRecord": batch[0]["dynamodb"].get("ApproximateCreationDateTime"),
                "approximateArrivalOfLastRecord": batch[-1]["dynamodb"].get("ApproximateCreationDateTime"),
                "batchSize": len(batch),
                "streamArn": self.stream_arn,
            },
        }
        params: dict[str, Any] = {"QueueUrl": self.on_failure_queue_url, "MessageBody": json.dumps(body)}
        if self.on_failure_queue_url.endswith(".fifo"):
            params["MessageGroupId"] = shard_id
            params["MessageDeduplicationId"] = body["requestContext"]["requestId"]  # type: ignore[index]
        self._sqs.send_message(**params)

    @property
    def on_failure_queue_url(self) -> str:
        return self.settings.on_failure_queue_url or ""
