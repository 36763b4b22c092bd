"""The local cloud's pollers feed functions exactly as Lambda's event source mappings would."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.local_cloud import REPO, LocalCloudProcess
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration
FIXTURE = REPO / "tests" / "integration" / "fixtures" / "pollers" / "template.yaml"


@pytest.fixture(scope="module")
def sink(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sink") / "sink.jsonl"
    path.touch()
    return path


@pytest.fixture(scope="module")
def poller_cloud(
    tmp_path_factory: pytest.TempPathFactory, dynamodb_endpoint: str | None, sqs_endpoint: str | None, sink: Path
) -> Iterator[LocalCloudProcess]:
    process = LocalCloudProcess(
        tmp_path_factory.mktemp("pollers"),
        template=FIXTURE,
        dynamodb_endpoint=dynamodb_endpoint,
        sqs_endpoint=sqs_endpoint,
        parameters={"SinkPath": str(sink)},
    ).start()
    yield process
    process.stop()


def _entries(sink: Path, kind: str) -> list[dict[str, Any]]:
    return [entry for line in sink.read_text().splitlines() if (entry := json.loads(line))["kind"] == kind]


def test_table_write_reaches_the_stream_handler_in_the_lambda_event_shape(
    poller_cloud: LocalCloudProcess, sink: Path
) -> None:
    table = poller_cloud.resource("ItemsTable")
    stream_arn = poller_cloud.resource("ItemsTable", "StreamArn")
    ddb = poller_cloud.client("dynamodb")
    ddb.put_item(TableName=table, Item={"pk": {"S": "shape-1"}, "n": {"N": "7"}, "b": {"B": b"\x00\x01"}})
    ddb.update_item(
        TableName=table,
        Key={"pk": {"S": "shape-1"}},
        UpdateExpression="SET n = :n",
        ExpressionAttributeValues={":n": {"N": "8"}},
    )

    def delivered() -> list[dict[str, Any]]:
        records = [
            e["record"] for e in _entries(sink, "stream") if e["record"]["dynamodb"]["Keys"]["pk"]["S"] == "shape-1"
        ]
        assert len(records) >= 2
        return records

    insert, modify = eventually(delivered)[:2]
    assert insert["eventName"] == "INSERT" and modify["eventName"] == "MODIFY"
    assert insert["eventSource"] == "aws:dynamodb" and insert["eventSourceARN"] == stream_arn
    assert insert["awsRegion"] == "us-east-1" and insert["eventID"]
    image = insert["dynamodb"]
    assert image["Keys"] == {"pk": {"S": "shape-1"}}
    assert image["NewImage"]["n"] == {"N": "7"} and image["NewImage"]["b"] == {"B": "AAE="}
    assert image["StreamViewType"] == "NEW_AND_OLD_IMAGES" and image["SequenceNumber"] and image["SizeBytes"] > 0
    assert isinstance(image["ApproximateCreationDateTime"], int | float)
    assert modify["dynamodb"]["OldImage"]["n"] == {"N": "7"} and modify["dynamodb"]["NewImage"]["n"] == {"N": "8"}
    assert int(insert["dynamodb"]["SequenceNumber"]) < int(modify["dynamodb"]["SequenceNumber"])


def test_failing_stream_record_is_retried_then_sent_to_the_on_failure_destination(
    poller_cloud: LocalCloudProcess, sink: Path
) -> None:
    table = poller_cloud.resource("ItemsTable")
    ddb = poller_cloud.client("dynamodb")
    ddb.put_item(TableName=table, Item={"pk": {"S": "poison-1"}, "poison": {"BOOL": True}})
    ddb.put_item(TableName=table, Item={"pk": {"S": "after-poison"}})
    sqs = poller_cloud.client("sqs")
    failures_url = poller_cloud.resource("ItemsFailures")

    def given_up() -> dict[str, Any]:
        messages = sqs.receive_message(QueueUrl=failures_url, MaxNumberOfMessages=10, WaitTimeSeconds=1).get(
            "Messages", []
        )
        assert messages
        return json.loads(messages[0]["Body"])  # type: ignore[no-any-return]

    failure = eventually(given_up)
    assert failure["requestContext"]["condition"] == "RetryAttemptsExhausted"
    assert failure["DDBStreamBatchInfo"]["streamArn"] == poller_cloud.resource("ItemsTable", "StreamArn")
    attempts = [e for e in _entries(sink, "stream") if e["record"]["dynamodb"]["Keys"]["pk"]["S"] == "poison-1"]
    assert len(attempts) == 3  # the first try and MaximumRetryAttempts=2 retries

    def later_record_delivered() -> None:
        keys = [e["record"]["dynamodb"]["Keys"]["pk"]["S"] for e in _entries(sink, "stream") if e["outcome"] == "ok"]
        assert "after-poison" in keys

    eventually(later_record_delivered)


def test_record_that_fails_the_whole_invocation_is_bisected_out_given_up_and_later_records_flow(
    poller_cloud: LocalCloudProcess, sink: Path
) -> None:
    """A poison record that crashes the function (not a partial failure): the batch is halved until the
    record stands alone, retried MaximumRetryAttempts times, sent to OnFailure, and the shard moves on."""
    table = poller_cloud.resource("ItemsTable")
    ddb = poller_cloud.client("dynamodb")
    for key, poisoned in (("before-crash", False), ("crash-1", True), ("after-crash", False)):
        item = {"pk": {"S": key}, **({"crash": {"BOOL": True}} if poisoned else {})}
        ddb.put_item(TableName=table, Item=item)

    def shard_moved_on() -> None:
        delivered = [e["record"]["dynamodb"]["Keys"]["pk"]["S"] for e in _entries(sink, "stream")]
        assert "before-crash" in delivered and "after-crash" in delivered
        alone = [e for e in _entries(sink, "crash") if e["keys"] == ["crash-1"]]
        assert len(alone) == 3  # the first try of the record alone and MaximumRetryAttempts=2 retries

    eventually(shard_moved_on)
    assert "crash-1" not in [e["record"]["dynamodb"]["Keys"]["pk"]["S"] for e in _entries(sink, "stream")]


def test_fifo_failure_retries_only_that_record_keeps_group_order_and_dead_letters_after_max_receives(
    poller_cloud: LocalCloudProcess, sink: Path
) -> None:
    sqs = poller_cloud.client("sqs")
    queue_url = poller_cloud.resource("JobsQueue")
    jobs = [
        ("A", {"id": "a1"}),
        ("A", {"id": "a2", "fail_times": 1}),
        ("A", {"id": "a3"}),
        ("B", {"id": "b1"}),
        ("B", {"id": "b2"}),
        ("B", {"id": "b3"}),
        ("C", {"id": "c1", "poison": True}),
    ]
    sqs.send_message_batch(
        QueueUrl=queue_url,
        Entries=[
            {"Id": str(i), "MessageBody": json.dumps(job), "MessageGroupId": g} for i, (g, job) in enumerate(jobs)
        ],
    )

    def all_settled() -> list[dict[str, Any]]:
        entries = _entries(sink, "sqs")
        assert {e["id"] for e in entries if e["outcome"] == "ok"} == {"a1", "a2", "a3", "b1", "b2", "b3"}
        assert len([e for e in entries if e["id"] == "c1"]) == 3
        return entries

    entries = eventually(all_settled)
    ok = [e["id"] for e in entries if e["outcome"] == "ok"]
    by_group = {g: [i for i in ok if i[0] == g.lower()] for g in "ABC"}
    assert by_group == {"A": ["a1", "a2", "a3"], "B": ["b1", "b2", "b3"], "C": []}
    assert ok.count("a1") == 1 and all(ok.count(f"b{i}") == 1 for i in (1, 2, 3)), "only the failed record is retried"
    # a3 never ran before a2 succeeded: later records of the group do not overtake the failed one.
    first_a3 = next(i for i, e in enumerate(entries) if e["id"] == "a3")
    a2_ok = next(i for i, e in enumerate(entries) if e["id"] == "a2" and e["outcome"] == "ok")
    assert first_a3 > a2_ok
    # Group B went on while A waited for its retry.
    assert ok.index("b3") < ok.index("a2")
    assert [e["attempt"] for e in entries if e["id"] == "c1"] == [1, 2, 3]
    assert all(e["event_source_arn"] == poller_cloud.resource("JobsQueue", "Arn") for e in entries)

    dlq = poller_cloud.resource("JobsDeadLetters")

    def dead_lettered() -> None:
        dead = sqs.receive_message(QueueUrl=dlq, MaxNumberOfMessages=10, WaitTimeSeconds=1).get("Messages", [])
        assert [json.loads(m["Body"])["id"] for m in dead] == ["c1"]

    eventually(dead_lettered)
    # Once the poison message left, its group is not blocked: a later message of C runs.
    sqs.send_message(QueueUrl=queue_url, MessageBody=json.dumps({"id": "c2"}), MessageGroupId="C")

    def c2_ran() -> None:
        assert [e["outcome"] for e in _entries(sink, "sqs") if e["id"] == "c2"] == ["ok"]

    eventually(c2_ran)


def _probes(sink: Path, phase: str) -> list[dict[str, Any]]:
    return [entry for entry in _entries(sink, "probe") if entry["phase"] == phase]


def test_an_invocation_past_its_timeout_is_killed_with_its_process_and_retried_in_a_new_one(
    poller_cloud: LocalCloudProcess, sink: Path
) -> None:
    sqs = poller_cloud.client("sqs")
    sent_at = time.monotonic()
    sqs.send_message(
        QueueUrl=poller_cloud.resource("ProbeQueue"), MessageBody=json.dumps({"id": "slow-1", "sleep_first_try": 6})
    )

    def retried() -> list[dict[str, Any]]:
        ended = [e for e in _probes(sink, "end") if e["id"] == "slow-1"]
        assert [e["attempt"] for e in ended] == [2]
        return [e for e in _probes(sink, "start") if e["id"] == "slow-1"]

    first, second = eventually(retried)
    assert (first["attempt"], second["attempt"]) == (1, 2)
    assert first["remaining_ms"] <= 2000  # the function's Timeout, 2 s
    assert second["pid"] != first["pid"]  # the timed-out environment was killed, not reused
    # the sleep is the behaviour: nothing more may come once the first try would have ended (7 s after the send)
    time.sleep(max(0.0, 7.0 - (time.monotonic() - sent_at)))
    assert [e["attempt"] for e in _probes(sink, "end") if e["id"] == "slow-1"] == [2]


def test_each_instance_is_a_process_with_its_own_module_state_and_environment(
    poller_cloud: LocalCloudProcess, sink: Path
) -> None:
    sqs = poller_cloud.client("sqs")
    ids = [f"state-{n}" for n in range(8)]
    for job_id in ids:
        sqs.send_message(
            QueueUrl=poller_cloud.resource("ProbeQueue"), MessageBody=json.dumps({"id": job_id, "sleep_first_try": 0.5})
        )

    def all_ended() -> None:
        assert {e["id"] for e in _probes(sink, "end")} >= set(ids)

    eventually(all_ended)
    by_process: dict[int, list[dict[str, Any]]] = {}
    for entry in _probes(sink, "start"):
        by_process.setdefault(entry["pid"], []).append(entry)
    assert len({pid for pid, entries in by_process.items() if any(e["id"] in ids for e in entries)}) >= 2
    for entries in by_process.values():
        entries.sort(key=lambda e: e["invocations"])
        assert [e["invocations"] for e in entries] == list(range(1, len(entries) + 1))  # its own module state
        assert [e["seen_marker"] for e in entries] == [None] + [e["id"] for e in entries[:-1]]  # its own os.environ
        assert {e["service"] for e in entries} == {"instance-probe"}  # the function's own variables
