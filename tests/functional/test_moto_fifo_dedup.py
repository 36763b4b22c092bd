"""The local SQS deduplicates a FIFO send for five minutes from the first, as SQS does, even after a consumer
took and deleted the first copy (see herald_dev.moto_patches); messages moved to a DLQ are not sends. A
receive waiting behind a group in flight waits rather than spins."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from herald_ops.template import StackTemplate

from herald_dev import moto_patches


def test_a_resend_with_the_same_deduplication_id_is_dropped_after_the_first_was_consumed(aws: StackTemplate) -> None:
    sqs = boto3.client("sqs")
    url = aws.resolve({"Ref": "TurnsQueue"})
    sqs.send_message(QueueUrl=url, MessageBody="first", MessageGroupId="g", MessageDeduplicationId="d1")
    (taken,) = sqs.receive_message(QueueUrl=url)["Messages"]
    sqs.delete_message(QueueUrl=url, ReceiptHandle=taken["ReceiptHandle"])
    sqs.send_message(QueueUrl=url, MessageBody="again", MessageGroupId="g", MessageDeduplicationId="d1")
    sqs.send_message(QueueUrl=url, MessageBody="other", MessageGroupId="g", MessageDeduplicationId="d2")
    assert [m["Body"] for m in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]] == ["other"]


def test_a_receive_waiting_on_a_group_in_flight_looks_again_now_and_then_instead_of_spinning(
    aws: StackTemplate, monkeypatch: pytest.MonkeyPatch
) -> None:
    """moto's wait for messages returns at once while any message is visible, even one of a group with a
    message in flight: a long-polling receive then scanned the queue without pause for its whole wait (ten
    events-worker pollers on one busy lane held a core). It now looks again every 50 ms, or on a new message."""
    sqs = boto3.client("sqs")
    url = aws.resolve({"Ref": "EventsQueue"})
    for body in ("m1", "m2"):
        sqs.send_message(QueueUrl=url, MessageBody=body, MessageGroupId="lane", MessageDeduplicationId=body)
    assert [m["Body"] for m in sqs.receive_message(QueueUrl=url)["Messages"]] == ["m1"]  # m2 is behind it
    passes: list[int] = []
    real = moto_patches._fifo_receive

    def counted(*args: Any) -> list[Any]:
        passes.append(1)
        return real(*args)

    monkeypatch.setattr(moto_patches, "_fifo_receive", counted)
    assert sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1).get("Messages", []) == []
    assert 2 <= len(passes) <= 1 / 0.05 + 3  # a pass every 50 ms or so; spinning made thousands
