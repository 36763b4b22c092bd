"""The console's server on the local cloud: its page polls the dead-letter queues every second (a poll reads
them, holding what it read for a moment), so an operator's peek, plan or redrive of the same queue must not
read while a poll holds its messages, or it sees an empty queue."""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from fastapi.testclient import TestClient
from herald_ops.stack import DEFAULT_TEMPLATE, Stack

from herald_dev.console.app import PAGE_HEADER, create_console
from tests.support.local_cloud import LocalCloudProcess

pytestmark = pytest.mark.integration

CONSOLE = "http://127.0.0.1:8093"


class PollHoldsItsRead:
    """An SQS client whose first read that finds messages holds them until another read has received, or a
    second has passed: the moment a poll and a click meet, made to happen every time."""

    def __init__(self, sqs: Any, holding: threading.Event, other_read: threading.Event) -> None:
        self._sqs, self._holding, self._other_read = sqs, holding, other_read

    def receive_message(self, **kwargs: Any) -> Any:
        answer = self._sqs.receive_message(**kwargs)
        if answer.get("Messages") and not self._holding.is_set():
            self._holding.set()
            self._other_read.wait(1.0)
        else:
            self._other_read.set()
        return answer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sqs, name)


@dataclass(frozen=True)
class PolledStack(Stack):
    """The local cloud's stack whose SQS clients meet as a poll and a click do."""

    holding: threading.Event = field(default_factory=threading.Event)
    other_read: threading.Event = field(default_factory=threading.Event)

    def client(self, service: str, endpoint_url: str | None = None) -> Any:
        real = super().client(service, endpoint_url)
        return PollHoldsItsRead(real, self.holding, self.other_read) if service == "sqs" else real


@pytest.fixture
def dead_letter(cloud: LocalCloudProcess) -> Iterator[str]:
    """A message in TurnsDeadLetters (its body), taken out again afterwards: the cloud is the session's, and other
    tests count that queue."""
    sqs, marker = cloud.client("sqs"), f"turn-{secrets.token_hex(4)}"
    dlq, body = cloud.resource("TurnsDeadLetters"), f'{{"turn_id":"{marker}"}}'
    sqs.send_message(QueueUrl=dlq, MessageBody=body, MessageGroupId="g", MessageDeduplicationId=marker)
    yield body
    seen = sqs.receive_message(QueueUrl=dlq, MaxNumberOfMessages=10, WaitTimeSeconds=2, VisibilityTimeout=0)
    for message in seen.get("Messages", []):  # others' messages are left visible
        if message["Body"] == body:
            sqs.delete_message(QueueUrl=dlq, ReceiptHandle=message["ReceiptHandle"])


def test_a_peek_clicked_while_the_page_polls_the_same_dead_letter_queue_still_shows_its_message(
    cloud: LocalCloudProcess, dead_letter: str
) -> None:
    body = dead_letter
    stack = PolledStack(None, None, None, cloud.state_file, DEFAULT_TEMPLATE)
    client = TestClient(create_console(stack), base_url=CONSOLE)
    client.headers[PAGE_HEADER] = client.get("/console/config").json()["page_token"]
    polled: dict[str, Any] = {}
    poll = threading.Thread(target=lambda: polled.update(client.get("/console/operate").json()))
    poll.start()
    assert stack.holding.wait(30), "the poll never read the dead letter"
    peeked = client.post("/console/dlq/TurnsDeadLetters/peek", json={})
    poll.join(30)
    assert peeked.status_code == 200, peeked.text
    assert [m["body"] for m in peeked.json()["messages"]] == [body]
    assert next(q for q in polled["dlqs"] if q["dlq"] == "TurnsDeadLetters")["depth"] == 1
