"""Workers answer Lambda's partial batch protocol themselves: which records come back, when, and in what order."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from herald import budgets
from herald.container import Clients
from herald.workers import (
    MAX_BACKOFF_SECONDS,
    SQS_MAX_VISIBILITY_SECONDS,
    PermanentFailure,
    QueueMessage,
    RetryLater,
    process_fifo,
    process_stream,
)
from tests.support.container import reconfigure
from tests.support.lambda_context import FakeLambdaContext
from tests.support.waiting import eventually


class RecordingQueues:
    """Stands in for the SQS client: what the worker hid and what it dead-lettered."""

    def __init__(self) -> None:
        self.hidden: dict[str, int] = {}
        self.dead: list[dict[str, Any]] = []
        self.deleted: list[str] = []

    def change_message_visibility(self, *, QueueUrl: str, ReceiptHandle: str, VisibilityTimeout: int) -> None:
        self.hidden[ReceiptHandle] = VisibilityTimeout

    def send_message(self, **message: Any) -> None:
        self.dead.append(message)

    def delete_message_batch(self, *, QueueUrl: str, Entries: list[dict[str, str]]) -> dict[str, Any]:
        self.deleted += [entry["ReceiptHandle"] for entry in Entries]
        return {"Successful": [{"Id": entry["Id"]} for entry in Entries], "Failed": []}


@pytest.fixture
def queues() -> RecordingQueues:
    recorder = RecordingQueues()
    reconfigure(clients=Clients(sqs=recorder))  # type: ignore[arg-type]
    return recorder


def sqs_record(message_id: str, group: str, receives: int = 1) -> dict[str, Any]:
    attributes = {"MessageGroupId": group, "ApproximateReceiveCount": str(receives), "SentTimestamp": "0"}
    return {"messageId": message_id, "receiptHandle": f"rh-{message_id}", "body": message_id, "attributes": attributes}


def run_fifo(records: list[dict[str, Any]], outcome: dict[str, Exception]) -> tuple[dict[str, Any], list[str]]:
    handled: list[str] = []

    def handle(message: QueueMessage) -> None:
        handled.append(message.body)
        if message.message_id in outcome:
            raise outcome[message.message_id]

    response = process_fifo(
        {"Records": records}, FakeLambdaContext(), handle, queue_url="q", dead_letter_queue_url="dlq", lag_metric="Lag"
    )
    return response, handled


def test_a_failure_holds_back_the_rest_of_its_group_and_only_its_group(queues: RecordingQueues) -> None:
    records = [sqs_record("a1", "a"), sqs_record("b1", "b"), sqs_record("a2", "a"), sqs_record("b2", "b")]
    response, handled = run_fifo(records, {"a1": RuntimeError("provider down")})
    assert handled == ["a1", "b1", "b2"]  # a2 is never tried ahead of a1
    assert response == {"batchItemFailures": [{"itemIdentifier": "a1"}, {"itemIdentifier": "a2"}]}
    assert queues.hidden == {"rh-a1": 2, "rh-a2": 2}  # back together, after a1's backoff


def test_a_failed_record_is_hidden_for_a_backoff_grown_by_its_receives(queues: RecordingQueues) -> None:
    response, _ = run_fifo([sqs_record("m", "g", receives=4)], {"m": RuntimeError("again")})
    assert response["batchItemFailures"] == [{"itemIdentifier": "m"}]
    assert queues.hidden == {"rh-m": 16}
    run_fifo([sqs_record("n", "g", receives=30)], {"n": RuntimeError("again")})
    assert queues.hidden["rh-n"] == MAX_BACKOFF_SECONDS


def test_retry_later_hides_for_the_delay_asked_and_out_of_time_for_none(queues: RecordingQueues) -> None:
    records = [sqs_record("late", "a"), sqs_record("untried", "b")]
    outcome: dict[str, Exception] = {"late": RetryLater("not yet", 2.2), "untried": budgets.OutOfTime("no time")}
    response, _ = run_fifo(records, outcome)
    assert [f["itemIdentifier"] for f in response["batchItemFailures"]] == ["late", "untried"]
    assert queues.hidden == {"rh-late": 3, "rh-untried": 0}


def test_a_permanent_failure_is_dead_lettered_with_its_reason_and_not_returned(queues: RecordingQueues) -> None:
    response, handled = run_fifo([sqs_record("bad", "g"), sqs_record("next", "g")], {"bad": PermanentFailure("no")})
    assert response == {"batchItemFailures": []} and handled == ["bad", "next"]  # the group goes on
    (dead,) = queues.dead
    assert (dead["QueueUrl"], dead["MessageBody"], dead["MessageGroupId"]) == ("dlq", "bad", "g")
    assert dead["MessageAttributes"]["failure_reason"]["StringValue"] == "no"
    assert queues.hidden == {}


def stream_record(sequence: str) -> dict[str, Any]:
    return {"dynamodb": {"SequenceNumber": sequence, "NewImage": {"pk": {"S": sequence}}}}


def test_a_stream_batch_stops_at_its_first_failure_so_the_shard_keeps_its_order() -> None:
    seen: list[str] = []

    def handle(old: Any, new: Any) -> None:
        seen.append(new["pk"]["S"])
        if new["pk"]["S"] == "200":
            raise RuntimeError("boom")

    records = [stream_record(s) for s in ("100", "200", "300")]
    assert process_stream({"Records": records}, FakeLambdaContext(), handle) == {
        "batchItemFailures": [{"itemIdentifier": "200"}]
    }
    assert seen == ["100", "200"]  # 300 runs on the retry from 200, never before it
    assert process_stream({"Records": records[:1]}, FakeLambdaContext(), handle) == {"batchItemFailures": []}


def test_a_batchs_groups_run_side_by_side_each_in_its_order_when_the_worker_allows(queues: RecordingQueues) -> None:
    """Three receivers' pushes: each group waits at a barrier the other groups must reach too, which only groups
    running at once can pass; a group's records still run in order, and a failure holds back only its group."""
    meeting = threading.Barrier(3, timeout=5)
    handled: dict[str, list[str]] = {}

    def handle(message: QueueMessage) -> None:
        handled.setdefault(message.group_id, []).append(message.body)
        assert budgets.spare_ms() != budgets.PROVIDER_CALL_MS  # each group runs inside the invocation's budget
        if message.body.endswith("1"):
            meeting.wait()
        if message.body == "b2":
            raise RuntimeError("Tencent down")

    records = [sqs_record(f"{g}{n}", g) for n in (1, 2, 3) for g in "abc"]
    response = process_fifo(
        {"Records": records}, FakeLambdaContext(), handle, queue_url="q", dead_letter_queue_url="dlq", lag_metric="Lag",
        groups_at_once=3,
    )  # fmt: skip
    assert handled == {"a": ["a1", "a2", "a3"], "b": ["b1", "b2"], "c": ["c1", "c2", "c3"]}
    assert response == {"batchItemFailures": [{"itemIdentifier": "b2"}, {"itemIdentifier": "b3"}]}
    assert queues.hidden == {"rh-b2": 2, "rh-b3": 2}


def test_a_group_done_while_another_waits_on_its_provider_frees_its_lane_at_once(queues: RecordingQueues) -> None:
    """Lambda deletes a batch's records only when the invocation returns, and a FIFO group with a record in flight
    hands out nothing else: another tenant's lane, side by side in the batch with a hung provider call, waited for
    that call's deadline (B's card 10.8 s while A's Feishu app hung). A group that ends before the others deletes
    its done records and hides its returned ones itself; the last group to end leaves its records to Lambda."""
    provider_answers = threading.Event()

    def handle(message: QueueMessage) -> None:
        if message.group_id == "hung":
            assert provider_answers.wait(timeout=5)
        if message.body == "failing1":
            raise RuntimeError("provider down")

    records = [sqs_record("hung1", "hung"), sqs_record("quick1", "quick"), sqs_record("quick2", "quick")]
    records.append(sqs_record("failing1", "failing"))
    outcome: dict[str, Any] = {}

    def invoke() -> None:
        response = process_fifo(
            {"Records": records}, FakeLambdaContext(), handle, queue_url="q", dead_letter_queue_url="dlq",
            lag_metric="Lag", groups_at_once=3,
        )  # fmt: skip
        outcome.update(response)

    invocation = threading.Thread(target=invoke)
    invocation.start()
    try:
        eventually(lambda: _freed(queues), timeout=5)  # while the hung group still waits
    finally:
        provider_answers.set()
        invocation.join(timeout=5)
    assert outcome == {"batchItemFailures": [{"itemIdentifier": "failing1"}]}
    assert queues.deleted == ["rh-quick1", "rh-quick2"]  # the hung group, ending last, is Lambda's to delete


def _freed(queues: RecordingQueues) -> None:
    assert queues.deleted == ["rh-quick1", "rh-quick2"] and queues.hidden == {"rh-failing1": 2}


def test_retry_later_hides_for_the_whole_delay_asked_beyond_the_failure_backoffs_cap_up_to_sqs_limit(
    queues: RecordingQueues,
) -> None:
    """A status notice's retry asks for up to fifteen minutes; clipping it to the failure backoff's five minutes
    would spend its queue's receives three times as fast as README states."""
    outcome: dict[str, Exception] = {"wait": RetryLater("webhook endpoint down", 900), "far": RetryLater("far", 10**6)}
    run_fifo([sqs_record("wait", "a"), sqs_record("far", "b")], outcome)
    assert queues.hidden == {"rh-wait": 900, "rh-far": SQS_MAX_VISIBILITY_SECONDS}


class FailingQueues(RecordingQueues):
    """SQS failing every call for the receipt handles and dead letters named (an error outlasting the SDK's retries)."""

    def __init__(self, refuse: set[str]) -> None:
        super().__init__()
        self.refuse = refuse

    def change_message_visibility(self, *, QueueUrl: str, ReceiptHandle: str, VisibilityTimeout: int) -> None:
        if ReceiptHandle in self.refuse:
            raise ConnectionError("SQS did not answer")
        super().change_message_visibility(
            QueueUrl=QueueUrl, ReceiptHandle=ReceiptHandle, VisibilityTimeout=VisibilityTimeout
        )

    def send_message(self, **message: Any) -> None:
        if message["MessageBody"] in self.refuse:
            raise ConnectionError("SQS did not answer")
        super().send_message(**message)


def test_a_visibility_change_that_fails_costs_only_its_own_record_not_the_batch() -> None:
    """Issue 50's chaos soak: a failed visibility change raised out of the handler, so Lambda took the whole batch
    as failed and every group in it, done or not, waited the queue's visibility timeout (180 s) to come back."""
    queues = FailingQueues({"rh-a1"})
    reconfigure(clients=Clients(sqs=queues))  # type: ignore[arg-type]
    records = [sqs_record("a1", "a"), sqs_record("b1", "b")]
    response, handled = run_fifo(records, {"a1": RuntimeError("provider down"), "b1": RuntimeError("down too")})
    assert handled == ["a1", "b1"]
    assert response == {"batchItemFailures": [{"itemIdentifier": "a1"}, {"itemIdentifier": "b1"}]}
    assert queues.hidden == {"rh-b1": 2}  # a1 comes back when its visibility ends; b1 after its backoff


def test_a_dead_letter_that_cannot_be_sent_is_returned_to_be_tried_again_not_lost() -> None:
    queues = FailingQueues({"bad"})
    reconfigure(clients=Clients(sqs=queues))  # type: ignore[arg-type]
    response, handled = run_fifo([sqs_record("bad", "g"), sqs_record("next", "g")], {"bad": PermanentFailure("no")})
    assert handled == ["bad"]  # the group waits behind it
    assert response == {"batchItemFailures": [{"itemIdentifier": "bad"}, {"itemIdentifier": "next"}]}
    assert queues.dead == [] and queues.hidden == {"rh-bad": 2, "rh-next": 2}
