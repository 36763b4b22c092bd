"""`herald-ops dlq` mechanics on moto: which queues are DLQs (from template.yaml), peek leaves messages in
place, and a redrive keeps each group's order and sends nothing twice however it is interrupted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from herald_ops.dlq import DeadLetterQueue, Journal, Redrive, dead_letter_queues, peek, plan
from herald_ops.template import StackTemplate

from tests.support.waiting import eventually

ORDER = [("a", 1), ("a", 2), ("b", 1), ("a", 3), ("b", 2), ("c", 1)]


class Crash(Exception):
    """The operator's machine died here."""


class CrashingSqs:
    """An SQS client that dies once, at a chosen step: before or after the call itself takes effect."""

    def __init__(self, sqs: Any, operation: str, after_call: bool, on_call: int = 1) -> None:
        self._sqs, self._operation, self._after, self._left = sqs, operation, after_call, on_call

    def __getattr__(self, name: str) -> Any:
        call = getattr(self._sqs, name)
        if name != self._operation:
            return call

        def maybe_crash(**params: Any) -> Any:
            self._left -= 1
            if self._left == 0 and not self._after:
                raise Crash(name)
            result = call(**params)
            if self._left == 0:
                raise Crash(name)
            return result

        return maybe_crash


@pytest.fixture
def events_dlq(aws: StackTemplate) -> DeadLetterQueue:
    urls = {logical_id: str(attributes["Ref"]) for logical_id, attributes in aws.attributes.items()}
    (dlq,) = [q for q in dead_letter_queues(aws, urls) if q.logical_id == "EventsDeadLetters"]
    sqs = boto3.client("sqs")
    for group, n in ORDER:
        sqs.send_message(
            QueueUrl=dlq.url,
            MessageBody=json.dumps({"group": group, "n": n}),
            MessageGroupId=group,
            MessageDeduplicationId=f"{group}{n}",
            MessageAttributes={"failure_reason": {"DataType": "String", "StringValue": "boom"}},
        )
    return dlq


def drain(url: str) -> list[tuple[str, int]]:
    """Everything in the source queue, as its consumer would take it (deleting as it goes)."""
    sqs = boto3.client("sqs")
    taken: list[tuple[str, int]] = []
    while messages := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        for message in messages:
            body = json.loads(message["Body"])
            taken.append((body["group"], body["n"]))
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return taken


def per_group(taken: list[tuple[str, int]]) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = {}
    for group, n in taken:
        groups.setdefault(group, []).append(n)
    return groups


EXPECTED = {"a": [1, 2, 3], "b": [1, 2], "c": [1]}


def test_template_names_every_dlq_and_its_source(aws: StackTemplate) -> None:
    urls = {logical_id: str(attributes["Ref"]) for logical_id, attributes in aws.attributes.items()}
    found = {q.logical_id: (q.source_logical_id, q.kind) for q in dead_letter_queues(aws, urls)}
    assert found == {
        "EventsDeadLetters": ("EventsQueue", "queue"),
        "EventsWaitingDeadLetters": ("EventsWaitingQueue", "queue"),
        "EventWebhooksDeadLetters": ("EventWebhooksQueue", "queue"),
        "ImPushDeadLetters": ("ImPushQueue", "queue"),
        "TurnsDeadLetters": ("TurnsQueue", "queue"),
        "StreamFailures": (None, "stream failures"),
    }


def test_peek_and_plan_leave_every_message_in_place(events_dlq: DeadLetterQueue) -> None:
    sqs = boto3.client("sqs")
    seen = peek(sqs, events_dlq, 100).messages
    assert [json.loads(m["Body"])["n"] for m in seen if m["Attributes"]["MessageGroupId"] == "a"] == [1, 2, 3]
    assert seen[0]["MessageAttributes"]["failure_reason"]["StringValue"] == "boom"
    proposal = plan(sqs, events_dlq, 100)
    assert proposal["messages"] == 6 and sorted(proposal["groups"]) == ["a", "b", "c"]
    assert len(peek(sqs, events_dlq, 100).messages) == 6


def test_redrive_moves_each_message_once_in_group_order_without_the_failure_reason(
    events_dlq: DeadLetterQueue, tmp_path: Path
) -> None:
    sqs = boto3.client("sqs")
    report = Redrive(sqs, events_dlq, Journal.open(tmp_path / "j.json"), rate_per_s=0).run(100)
    assert report.sent == 6 and report.groups == {"a": 3, "b": 2, "c": 1}
    assert per_group(drain(str(events_dlq.source_url))) == EXPECTED
    assert peek(sqs, events_dlq, 100).messages == []
    assert Journal.open(tmp_path / "j.json").entries == {}


def _none_in_flight(sqs: Any, url: str) -> None:
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessagesNotVisible"])
    assert attributes["Attributes"]["ApproximateNumberOfMessagesNotVisible"] == "0"


@pytest.mark.parametrize(
    ("operation", "after_call", "on_call"),
    [
        ("send_message", False, 3),  # died before the third send reached SQS
        ("send_message", True, 3),  # the third send landed, the journal never heard
        ("delete_message", False, 2),  # sent and recorded, died before deleting it from the DLQ
        ("delete_message", True, 4),  # deleted, died before forgetting it
    ],
)
def test_interrupted_redrive_resumed_later_sends_nothing_twice_and_keeps_group_order(
    events_dlq: DeadLetterQueue, tmp_path: Path, operation: str, after_call: bool, on_call: int
) -> None:
    sqs = boto3.client("sqs")
    journal_path = tmp_path / "journal.json"
    crashing = Redrive(CrashingSqs(sqs, operation, after_call, on_call), events_dlq, Journal.open(journal_path), 0, 1)
    with pytest.raises(Crash):
        crashing.run(100)
    taken = drain(str(events_dlq.source_url))  # the consumer goes on meanwhile
    eventually(lambda: _none_in_flight(sqs, str(events_dlq.url)))  # the interrupted batch's hold (1 s) ran out
    Redrive(sqs, events_dlq, Journal.open(journal_path), rate_per_s=0).run(100)
    taken += drain(str(events_dlq.source_url))
    assert sorted(taken) == sorted(ORDER), f"sent twice or lost: {taken}"
    assert per_group(taken) == EXPECTED
    assert peek(sqs, events_dlq, 100).messages == []
    assert Journal.open(journal_path).entries == {}  # a drained DLQ leaves nothing to remember


def test_a_run_that_finds_messages_still_held_by_an_interrupted_one_keeps_their_journal(
    events_dlq: DeadLetterQueue, tmp_path: Path
) -> None:
    sqs = boto3.client("sqs")
    journal_path = tmp_path / "journal.json"
    crashing = Redrive(CrashingSqs(sqs, "delete_message", False, 1), events_dlq, Journal.open(journal_path), 0, 30)
    with pytest.raises(Crash):
        crashing.run(100)
    held = dict(Journal.open(journal_path).entries)
    assert list(held.values()) == ["sent"]
    Redrive(sqs, events_dlq, Journal.open(journal_path), rate_per_s=0).run(100)  # the held batch is invisible
    assert Journal.open(journal_path).entries == held  # not forgotten: it would be sent again later


class ReceiveRecorder:
    """The SQS client, remembering how each receive was asked for."""

    def __init__(self, sqs: Any) -> None:
        self._sqs = sqs
        self.receives: list[dict[str, Any]] = []

    def __getattr__(self, name: str) -> Any:
        call = getattr(self._sqs, name)
        if name != "receive_message":
            return call

        def recorded(**params: Any) -> Any:
            self.receives.append(params)
            return call(**params)

        return recorded


def test_a_fifo_group_deeper_than_one_receive_is_peeked_in_order_counted_and_redriven_whole(
    aws: StackTemplate, tmp_path: Path
) -> None:
    urls = {logical_id: str(attributes["Ref"]) for logical_id, attributes in aws.attributes.items()}
    (dlq,) = [q for q in dead_letter_queues(aws, urls) if q.logical_id == "ImPushDeadLetters"]
    sqs = boto3.client("sqs")
    for group, n in [("deep", n) for n in range(1, 16)] + [("other", 1)]:
        body = json.dumps({"group": group, "n": n})
        sqs.send_message(QueueUrl=dlq.url, MessageBody=body, MessageGroupId=group, MessageDeduplicationId=f"{group}{n}")
    recorder = ReceiveRecorder(sqs)

    seen = peek(recorder, dlq, 100, wait_s=1)
    deep = [json.loads(m["Body"])["n"] for m in seen.messages if m["Attributes"]["MessageGroupId"] == "deep"]
    assert deep == list(range(1, 11))  # one receive's worth of the group, oldest first
    assert (seen.depth, len(seen.messages), seen.not_shown) == (16, 11, 5)
    assert recorder.receives and all(r["WaitTimeSeconds"] == 1 for r in recorder.receives)  # long polling

    proposal = plan(sqs, dlq, 100, wait_s=1)
    assert (proposal["messages"], proposal["listed"], proposal["not_listed"]) == (16, 11, 5)
    assert len(proposal["groups"]["deep"]) == 10

    report = Redrive(sqs, dlq, Journal.open(tmp_path / "j.json"), rate_per_s=0, wait_s=1).run(100)
    assert report.sent == 16 and report.groups == {"deep": 15, "other": 1}
    assert per_group(drain(str(dlq.source_url))) == {"deep": list(range(1, 16)), "other": [1]}
