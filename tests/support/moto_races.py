"""`python tests/support/moto_races.py SCENARIO [patched]`: one interleaving of two concurrent requests, run
in-process on moto as released or with the local cloud's corrections (herald_dev.moto_patches); prints what
each request got as JSON.

moto serves concurrent requests on threads; the races below need one request paused at a chosen point in
moto's own code while the other runs. The pause waits for the other request to finish, or gives up after
`PATIENCE` seconds when a correction makes the other request wait for this one (then the other runs after).
"""

from __future__ import annotations

import json
import sys
import threading
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

import boto3
from moto import mock_aws

PATIENCE = 2.0
CREDENTIALS = {"region_name": "us-east-1", "aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


class Interleaving:
    """Request A pauses at its first `pause()`; request B then runs to its end; then A goes on."""

    def __init__(self) -> None:
        self.paused = threading.Event()
        self.other_done = threading.Event()
        self._taken = False
        self._lock = threading.Lock()

    def pause(self) -> None:
        if threading.current_thread().name != "A":
            return
        with self._lock:
            if self._taken:
                return
            self._taken = True
        self.paused.set()
        self.other_done.wait(PATIENCE)

    def run(self, first: Callable[[], Any], second: Callable[[], Any]) -> dict[str, Any]:
        results: dict[str, Any] = {}

        def call(name: str, request: Callable[[], Any]) -> None:
            try:
                results[name] = request()
            except Exception as error:  # the error is the observation
                results[name] = f"error: {type(error).__name__}"
            if name == "B":
                self.other_done.set()

        a = threading.Thread(target=call, args=("A", first), name="A")
        a.start()
        if not self.paused.wait(PATIENCE * 2):
            raise RuntimeError("request A never reached its pause point")
        b = threading.Thread(target=call, args=("B", second), name="B")
        b.start()
        a.join()
        b.join()
        return results


def fifo_receive_while_another_receive_marks_the_head() -> dict[str, Any]:
    """A receives the head of group g and pauses just before marking it in flight; B receives then.
    AWS (SQS developer guide, FIFO delivery logic): while a message of a group is in flight, no message of that
    group is returned to anyone."""
    from moto.sqs import models as sqs_models

    interleaving = Interleaving()
    original = sqs_models.Message.mark_received

    def mark_received(self: Any, visibility_timeout: int | None = None) -> None:
        interleaving.pause()
        original(self, visibility_timeout=visibility_timeout)

    sqs_models.Message.mark_received = mark_received  # type: ignore[method-assign]
    sqs = boto3.client("sqs", **CREDENTIALS)  # type: ignore[call-overload]
    url = sqs.create_queue(QueueName="race.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    for body in ("m1", "m2"):
        sqs.send_message(QueueUrl=url, MessageBody=body, MessageGroupId="g", MessageDeduplicationId=body)

    def receive() -> list[str]:
        return [m["Body"] for m in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1).get("Messages", [])]

    return interleaving.run(receive, receive)


class _PausingItems(defaultdict):  # type: ignore[type-arg]
    """A table's item map whose iteration stops for the interleaving after its first item."""

    interleaving: Interleaving

    def values(self) -> Iterator[Any]:  # type: ignore[override]
        for index, value in enumerate(super().values()):
            yield value
            if index == 0:
                self.interleaving.pause()


def put_while_a_scan_reads_the_table() -> dict[str, Any]:
    """A scans a table and pauses after its first item; B puts a new item then.
    AWS: concurrent requests each succeed (a Scan is eventually consistent; it is never an error because
    another client wrote)."""
    from moto.dynamodb.models import dynamodb_backends

    dynamodb = boto3.client("dynamodb", **CREDENTIALS)  # type: ignore[call-overload]
    dynamodb.create_table(
        TableName="t",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    for key in ("a", "b"):
        dynamodb.put_item(TableName="t", Item={"pk": {"S": key}})
    table = dynamodb_backends["123456789012"]["us-east-1"].tables["t"]
    items = _PausingItems(dict, table.items)
    items.interleaving = interleaving = Interleaving()
    table.items = items

    def scan() -> list[str]:
        return sorted(item["pk"]["S"] for item in dynamodb.scan(TableName="t")["Items"])

    def put() -> str:
        dynamodb.put_item(TableName="t", Item={"pk": {"S": "c"}})
        return "put"

    return interleaving.run(scan, put)


SCENARIOS = {
    "fifo-receive": fifo_receive_while_another_receive_marks_the_head,
    "put-during-scan": put_while_a_scan_reads_the_table,
}


def main(scenario: str, patched: bool) -> None:
    if patched:
        from herald_dev import moto_patches

        moto_patches.install()
    with mock_aws():
        print(json.dumps(SCENARIOS[scenario]()))


if __name__ == "__main__":
    main(sys.argv[1], len(sys.argv) > 2 and sys.argv[2] == "patched")
