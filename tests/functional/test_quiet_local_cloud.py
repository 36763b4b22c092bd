"""An idle local cloud waits instead of asking: its queue pollers long-poll (20 s) and the embedded moto wakes a
waiting FIFO receive when a group is released or a message turns visible; its stream readers sleep until a write
comes. Each wait is long here, so a reader or a receive that was not woken would miss the test's patience; and
stopping waits for the invocations under way, never for a receive still waiting."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
import pytest
from moto import mock_aws

from herald_dev import moto_patches
from herald_dev.sqs_source import SqsEventSource
from herald_dev.stream_source import StreamEventSource, StreamSettings
from herald_dev.write_signal import WriteListener, tell_writes_from_this_process
from tests.functional.test_moto_corrections import table_with_stream
from tests.support.local_cloud import LOCAL_CREDENTIALS, free_port
from tests.support.waiting import eventually

PATIENCE_S = 10.0  # well under each wait below: only a wake brings the answer in time


@pytest.fixture
def aws() -> Iterator[None]:
    moto_patches.install()
    with mock_aws():
        yield


def fifo_queue() -> tuple[Any, str]:
    sqs = boto3.client("sqs", region_name="us-east-1")
    url = sqs.create_queue(
        QueueName="pushes.fifo", Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"}
    )["QueueUrl"]
    return sqs, url


def receive_waiting(sqs: Any, url: str) -> Any:
    """A receive that may wait 20 s, started now; its answer's bodies and how long it took."""

    def receive() -> tuple[list[str], float]:
        started = time.monotonic()
        messages = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=20, VisibilityTimeout=30).get("Messages", [])
        return [m["Body"] for m in messages], time.monotonic() - started

    return ThreadPoolExecutor(max_workers=1).submit(receive)


def test_a_waiting_fifo_receive_wakes_when_a_delete_releases_its_group(aws: None) -> None:
    sqs, url = fifo_queue()
    for body in ("first", "second"):
        sqs.send_message(QueueUrl=url, MessageBody=body, MessageGroupId="chat-1")
    (held,) = sqs.receive_message(QueueUrl=url, VisibilityTimeout=30)["Messages"]
    waiting = receive_waiting(sqs, url)  # the group is in flight: nothing to give yet
    sqs.delete_message(QueueUrl=url, ReceiptHandle=held["ReceiptHandle"])
    bodies, took_s = waiting.result(timeout=PATIENCE_S)
    assert bodies == ["second"] and took_s < moto_patches.RECHECK_S / 2  # woken, not found by a look again


def test_a_waiting_fifo_receive_wakes_when_a_returned_message_turns_visible(aws: None) -> None:
    sqs, url = fifo_queue()
    sqs.send_message(QueueUrl=url, MessageBody="retried", MessageGroupId="chat-1")
    (held,) = sqs.receive_message(QueueUrl=url, VisibilityTimeout=30)["Messages"]
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=held["ReceiptHandle"], VisibilityTimeout=2)
    bodies, took_s = receive_waiting(sqs, url).result(timeout=PATIENCE_S)
    assert bodies == ["retried"] and 1.0 <= took_s < PATIENCE_S  # when its visibility ended, not at once


class RecordingFunction:
    """A local function that records each event it is invoked with."""

    logical_id, region = "Reader", "us-east-1"

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def invoke(self, event: dict[str, Any]) -> None:
        self.events.append(event)


class CountingReads:
    """A streams client counting its GetRecords calls."""

    def __init__(self, real: Any) -> None:
        self._real, self.reads = real, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def get_records(self, **kwargs: Any) -> Any:
        self.reads += 1
        return self._real.get_records(**kwargs)


@pytest.fixture
def moto_server() -> Iterator[dict[str, Any]]:
    """The embedded moto server, as the local cloud runs it (DynamoDB Streams is served by its URL there)."""
    from moto.server import ThreadedMotoServer

    moto_patches.install()
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield {"endpoint_url": f"http://127.0.0.1:{port}", "region_name": "us-east-1", **LOCAL_CREDENTIALS}
    server.stop()


def test_an_idle_stream_reader_sleeps_until_a_write_and_then_reads_it(moto_server: dict[str, Any]) -> None:
    dynamodb = boto3.client("dynamodb", **moto_server)
    stream_arn = table_with_stream(dynamodb, "notes")
    function, streams = RecordingFunction(), CountingReads(boto3.client("dynamodbstreams", **moto_server))
    settings = StreamSettings(writes=moto_patches.DYNAMODB_WRITES, idle_wait_seconds=60.0)
    sqs = boto3.client("sqs", **moto_server)
    source = StreamEventSource(function, streams, sqs, stream_arn, settings)  # type: ignore[arg-type]
    stop = threading.Event()
    source.start(stop)
    try:
        eventually(lambda: _read_once(streams), timeout=PATIENCE_S)  # it found the shard empty, and waits
        idle_reads = streams.reads
        dynamodb.put_item(TableName="notes", Item={"pk": {"S": "n-1"}})
        eventually(lambda: _delivered(function, "n-1"), timeout=PATIENCE_S)
        assert streams.reads <= idle_reads + 2  # woken by the write: one read brought it, one found the end
    finally:
        stop.set()
        source.join(timeout=PATIENCE_S)


def test_a_reader_of_tables_elsewhere_sleeps_until_a_function_tells_of_its_write(
    moto_server: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """DynamoDB Local's writes are not the cloud's to see: a function's process tells it of each one."""
    listener = WriteListener()  # the cloud's end; the embedded moto's own signal is not the one waited on
    for variable, value in listener.environment.items():
        monkeypatch.setenv(variable, value)
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)  # a function's process: its own default session
    tell_writes_from_this_process()
    dynamodb = boto3.client("dynamodb", **moto_server)
    stream_arn = table_with_stream(dynamodb, "told-notes")
    function, streams = RecordingFunction(), CountingReads(boto3.client("dynamodbstreams", **moto_server))
    settings = StreamSettings(writes=listener.signal, idle_wait_seconds=60.0)
    source = StreamEventSource(function, streams, boto3.client("sqs", **moto_server), stream_arn, settings)  # type: ignore[arg-type]
    stop = threading.Event()
    source.start(stop)
    try:
        eventually(lambda: _read_once(streams), timeout=PATIENCE_S)
        idle_reads = streams.reads
        dynamodb.put_item(TableName="told-notes", Item={"pk": {"S": "n-1"}})
        eventually(lambda: _delivered(function, "n-1"), timeout=PATIENCE_S)
        assert streams.reads <= idle_reads + 2
    finally:
        stop.set()
        source.join(timeout=PATIENCE_S)


def _read_once(streams: CountingReads) -> None:
    assert streams.reads >= 1


def _delivered(function: RecordingFunction, pk: str) -> None:
    keys = [record["dynamodb"]["Keys"]["pk"]["S"] for event in function.events for record in event["Records"]]
    assert keys == [pk]


class HeldReceives:
    """An SQS client whose receive waits until the test releases it with messages."""

    def __init__(self) -> None:
        self.released = threading.Event()
        self.waiting = threading.Event()
        self.handed_back: list[dict[str, Any]] = []

    def receive_message(self, **_: Any) -> dict[str, Any]:
        self.waiting.set()
        self.released.wait(timeout=PATIENCE_S)
        return {"Messages": [{"MessageId": "m-1", "ReceiptHandle": "r-1", "Body": "{}", "Attributes": {}}]}

    def change_message_visibility_batch(self, **kwargs: Any) -> None:
        self.handed_back.extend(kwargs["Entries"])


def test_stopping_waits_for_no_receive_and_what_one_brings_after_the_stop_goes_back_to_the_queue() -> None:
    sqs, function, stop = HeldReceives(), RecordingFunction(), threading.Event()
    source = SqsEventSource(function, sqs, "url", "arn", batch_size=10, report_batch_item_failures=True, pollers=1)  # type: ignore[arg-type]
    source.start(stop)
    assert sqs.waiting.wait(timeout=PATIENCE_S)
    stop.set()
    started = time.monotonic()
    source.join(timeout=PATIENCE_S)
    assert time.monotonic() - started < PATIENCE_S / 2 and not sqs.released.is_set()  # not waited for
    sqs.released.set()
    eventually(lambda: _handed_back(sqs), timeout=PATIENCE_S)
    assert function.events == []


def _handed_back(sqs: HeldReceives) -> None:
    assert sqs.handed_back == [{"Id": "0", "ReceiptHandle": "r-1", "VisibilityTimeout": 0}]
