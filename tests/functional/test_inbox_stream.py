"""The inbox stream worker: count pushes in version order, TTL removals leave the count once, and
retention hides old items before TTL removes them."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from fastapi.testclient import TestClient
from herald_ops.template import StackTemplate

from herald.auth.models import Principal
from herald.container import current
from herald.inbox.dynamo import DynamoInboxStore
from herald.realtime.service import Realtime
from herald.realtime.wiring import realtime as realtime_part
from tests.functional.test_inbox import USER, _user, count, items, notify
from tests.support.aws import load_function
from tests.support.fakes import InMemoryConnectionRegistry, InMemoryPusher, InMemoryUserAdmission
from tests.support.inbox import insert_past_retention
from tests.support.lambda_context import FakeLambdaContext
from tests.support.pipeline import StreamTap


@pytest.fixture
def pushes(aws: StackTemplate) -> InMemoryPusher:
    registry, pusher = InMemoryConnectionRegistry(), InMemoryPusher()
    realtime = Realtime(registry, pusher, ttl_seconds=60, admission=InMemoryUserAdmission(), admit=lambda _: None)
    realtime.connect("mine-1", Principal(USER, "lalu"))
    realtime.connect("mine-2", Principal(USER, "lalu"))
    realtime.connect("theirs", Principal("10003", "lalu"))
    current().override(realtime_part, realtime)
    return pusher


@pytest.fixture
def outbox(aws: StackTemplate) -> Any:
    tap = StreamTap(aws.get_att("InboxTable", "StreamArn"))
    handler = load_function("inbox_outbox").handler

    def pump() -> list[dict[str, Any]]:
        records = tap.read()
        if records:
            handler({"Records": records}, FakeLambdaContext())
        return records

    return pump


def _messages(pusher: InMemoryPusher, connection: str) -> list[dict[str, Any]]:
    return [json.loads(data) for cid, data in pusher.sent if cid == connection]


def test_every_count_change_reaches_each_connection_of_the_user_in_version_order(
    api: TestClient, producer: dict[str, str], pushes: InMemoryPusher, outbox: Any
) -> None:
    first = notify(api, producer, tail="a")["notification_id"]
    notify(api, producer, tail="b")
    api.post(f"/api/v1/inbox/notifications/{first}/read", headers=_user())
    outbox()
    for connection in ("mine-1", "mine-2"):
        messages = _messages(pushes, connection)
        # The batch is handled after all three writes: each record pushes the committed state, so every
        # push says version 3 with its count; order never goes backwards.
        assert [m["version"] for m in messages] == sorted(m["version"] for m in messages)
        assert messages[-1]["version"] == 3 and messages[-1]["unreadCount"] == 1
        assert all(m["type"] == "inbox_updated" for m in messages)
    assert _messages(pushes, "theirs") == []


def test_a_redelivered_batch_pushes_nothing_new_and_never_double_counts(
    api: TestClient, producer: dict[str, str], pushes: InMemoryPusher, outbox: Any, aws: StackTemplate
) -> None:
    notification_id = notify(api, producer)["notification_id"]
    outbox()
    table = current().settings.inbox_table
    key = {"pk": {"S": f"U#lalu#{USER}"}, "sk": {"S": f"N#{notification_id}"}}
    boto3.client("dynamodb").delete_item(TableName=table, Key=key)  # as TTL does: no one counts it down
    records = outbox()
    assert count(api) == 0
    load_function("inbox_outbox").handler({"Records": records}, FakeLambdaContext())  # Lambda retries the batch
    assert count(api) == 0
    outbox()
    store = DynamoInboxStore(current().settings.inbox_table)
    assert store.counter("lalu", USER) == (0, 2)  # one decrement, however often the record came
    pushed = [(m["version"], m["unreadCount"]) for m in _messages(pushes, "mine-1")]
    assert pushed[0] == (1, 1) and pushed[-1] == (2, 0)
    assert [v for v, _ in pushed] == sorted(v for v, _ in pushed)  # a repeat, never a version out of order


def test_items_past_retention_are_hidden_from_list_and_count_before_ttl_removes_them(
    api: TestClient, producer: dict[str, str], aws: StackTemplate
) -> None:
    old = insert_past_retention(DynamoInboxStore(current().settings.inbox_table), USER)
    notify(api, producer, tail="fresh")
    assert [i["title"] for i in items(api)] == ["A question is waiting"]
    assert count(api) == 1
    assert api.post(f"/api/v1/inbox/notifications/{old.notification_id}/read", headers=_user()).status_code == 404
