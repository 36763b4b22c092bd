"""Issue 50, item 3, for every write of the four flows: each flow runs once as it should, counting the DynamoDB
writes it makes (routes, stream outboxes and queue workers alike); then once per write, the reply of that one write
lost: DynamoDB executed it, and the SDK sends it again (`ConditionalCheckFailed` for a conditional write that
landed, the same `ClientRequestToken` for a transaction). Every run must end as the clean one did: the same
answers, the same effects, counted once. The list of writes each flow makes is printed (`-s`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient

from herald import aws as herald_aws
from herald.auth.service_keys import ServiceKeys
from herald.confirms.delivery import IM_CONFIRM
from herald.container import Clients, current
from herald_dev.fakes.feishu import FakeFeishu
from herald_dev.fakes.tencent_im import FakeTencentIm
from tests.functional.test_confirms_flow import accept, invite, reject
from tests.functional.test_events import Partner
from tests.functional.test_inbox import count, notify
from tests.support.container import reconfigure
from tests.support.events import EventsPipeline
from tests.support.pipeline import ConfirmPipeline
from tests.support.tokens import make_token
from tests.support.turns import TurnsHarness

WRITES = {"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"}


class NthWriteLost:
    """The process-wide DynamoDB client, counting writes; the one numbered `lose` runs twice (the write whose
    reply was lost, then the SDK's resend of it) and answers as the resend did."""

    def __init__(self, real: Any, lose: int | None) -> None:
        self._real, self._lose = real, lose
        self.writes: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def _make_api_call(self, operation: str, params: dict[str, Any]) -> Any:
        if operation not in WRITES:
            return self._real._make_api_call(operation, params)
        self.writes.append(describe(operation, params))
        if len(self.writes) - 1 == self._lose:
            self._real._make_api_call(operation, params)  # executed; its reply never arrives
        return self._real._make_api_call(operation, params)


def describe(operation: str, params: dict[str, Any]) -> str:
    """`Operation table (condition)`, for the list of writes and a failure's message."""
    if operation == "TransactWriteItems":
        parts = [f"{kind} {body['TableName'].removeprefix('test-')}"
                 for item in params["TransactItems"] for kind, body in item.items()]  # fmt: skip
        return f"TransactWriteItems [{', '.join(parts)}]"
    table = params.get("TableName") or ",".join(params.get("RequestItems", {}))
    conditional = " conditional" if "ConditionExpression" in params else ""
    return f"{operation} {table.removeprefix('test-')}{conditional}"


def sweep(flow: Callable[[int], object], real: Any = None) -> list[str]:
    """Runs `flow` clean, then once per write it makes with that write's reply lost; the writes, in order."""
    real = real or herald_aws.dynamodb()
    counting = NthWriteLost(real, lose=None)
    reconfigure(clients=Clients(dynamodb=counting))  # type: ignore[arg-type]
    clean = flow(0)
    writes = counting.writes
    for lost in range(len(writes)):
        reconfigure(clients=Clients(dynamodb=NthWriteLost(real, lose=lost)))  # type: ignore[arg-type]
        assert flow(lost + 1) == clean, f"the reply of write {lost} was lost: {writes[lost]}"
    print(f"\n{len(writes)} writes:", *(f"  {n:2}. {write}" for n, write in enumerate(writes)), sep="\n")
    return writes


def app() -> TestClient:
    from herald.api.app import create_app

    return TestClient(create_app())


@pytest.mark.parametrize("act", [accept, reject], ids=["accept", "reject"])
def test_an_invitation_pushed_and_decided_ends_the_same_whichever_writes_reply_is_lost(
    pipeline: ConfirmPipeline, fake_im: FakeTencentIm, act: Any
) -> None:
    def invited_and_decided(_: int) -> object:
        api, seen = app(), len(fake_im.messages)
        invitation = invite(api)
        pipeline.drain()
        (confirm_id,) = [m["data"]["confirm_id"] for m in fake_im.messages[seen:] if m["data"]["type"] == IM_CONFIRM]
        answer = act(app(), confirm_id)
        pipeline.drain()
        again = act(app(), confirm_id)  # a repeated click changes nothing
        pushed = Counter(message["data"]["type"] for message in fake_im.messages[seen:])
        data = answer.json()["data"]
        return invitation["status"], answer.status_code, data["status"], again.json()["data"]["status"], pushed

    assert len(sweep(invited_and_decided)) >= 5


def test_a_notification_created_and_read_ends_the_same_whichever_writes_reply_is_lost(
    producer: dict[str, str],
) -> None:
    user = {"Authorization": f"Bearer {make_token('10002')}"}

    def notified_and_read(run: int) -> object:
        api = app()
        before = count(api)
        created = notify(api, producer, tail=f"r{run}")
        again = notify(api, producer, tail=f"r{run}")  # its producer's retry: the same dedup key
        after_create = count(api)
        read = api.post(f"/api/v1/inbox/notifications/{created['notification_id']}/read", headers=user)
        return created["created"], again["created"], after_create - before, read.status_code, count(api) - before

    assert len(sweep(notified_and_read)) >= 3


@pytest.fixture
def partner(api: TestClient, service_keys: ServiceKeys) -> Partner:
    return Partner(api, service_keys, "scheduler", ["chat_id:oc_ops"])


def test_an_external_event_and_its_revision_end_the_same_whichever_writes_reply_is_lost(
    events: EventsPipeline, feishu: FakeFeishu, partner: Partner
) -> None:
    def posted_and_revised(run: int) -> object:
        partner.api, seen = app(), len(feishu.log)
        first = partner.post(f"e{run}-1", event_id=f"job-{run}", revision=1, title="running")
        events.drain()
        second = partner.post(f"e{run}-2", event_id=f"job-{run}", revision=2, title="failed")
        again = partner.post(f"e{run}-2", event_id=f"job-{run}", revision=2, title="failed")  # its retry
        events.drain()
        status = partner.api.get(f"/events/external/e{run}-2", headers=partner.headers).json()["data"]["status"]
        calls = [(entry["op"], entry["title"]) for entry in feishu.log[seen:]]
        return first.status_code, second.status_code, again.json()["data"]["duplicate"], status, calls

    assert len(sweep(posted_and_revised)) >= 5


def test_a_turns_messages_queued_cancelled_and_delivered_end_the_same_whichever_writes_reply_is_lost(
    turns: TurnsHarness,
) -> None:
    def queued_cancelled_delivered(run: int) -> object:
        turns.api = app()
        session = f"s{run}"
        assert turns.session(session).status_code == 200
        started = turns.post("alice", "start", session_id=session)
        (turn,) = turns.next_turns()
        kept = turns.post("alice", "kept", session_id=session).json()["data"]
        dropped = turns.post("bob", "dropped", session_id=session).json()["data"]
        cancelled = turns.cancel("bob", dropped["message_id"], session_id=session)
        finished = turns.step(turn["turn_id"], session_id=session)
        (next_turn,) = turns.next_turns()
        answers = started.status_code, kept["position"], cancelled.status_code, finished.status_code
        return answers, next_turn["text"], next_turn["message_ids"] == [kept["message_id"]]

    assert len(sweep(queued_cancelled_delivered)) >= 8


def test_the_sweep_sees_a_write_counted_twice(aws: object) -> None:
    """The sweep itself can fail: a write whose resend changes the outcome is caught."""
    hits: list[int] = []

    class Adding:
        def _make_api_call(self, operation: str, params: dict[str, Any]) -> Any:
            hits.append(1)
            return {}

    def counted(_: int) -> object:
        hits.clear()
        current().clients.dynamodb._make_api_call("UpdateItem", {"TableName": "t"})  # type: ignore[union-attr]
        return len(hits)

    with pytest.raises(AssertionError, match="the reply of write 0 was lost: UpdateItem t"):
        sweep(counted, real=Adding())
