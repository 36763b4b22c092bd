"""The inbox stream worker: count pushes in version order, TTL removals leave the count once, and
retention hides old items before TTL removes them."""

from __future__ import annotations

import json
from typing import Any

import boto3
from fastapi.testclient import TestClient
from herald_ops.template import StackTemplate

from herald.container import current
from herald.inbox.dynamo import DynamoInboxStore
from tests.functional.test_inbox import USER, _user, count, items, notify
from tests.support.aws import load_function
from tests.support.fakes import InMemoryPusher
from tests.support.inbox import insert_past_retention
from tests.support.lambda_context import FakeLambdaContext


def messages_to(pusher: InMemoryPusher, connection: str) -> list[dict[str, Any]]:
    return [json.loads(data) for cid, data in pusher.sent if cid == connection]


def test_every_count_change_reaches_each_connection_of_the_user_in_version_order(
    api: TestClient, producer: dict[str, str], pushes: InMemoryPusher, inbox_outbox: Any
) -> None:
    first = notify(api, producer, tail="a")["notification_id"]
    notify(api, producer, tail="b")
    api.post(f"/api/v1/inbox/notifications/{first}/read", headers=_user())
    inbox_outbox()
    for connection in ("mine-1", "mine-2"):
        messages = messages_to(pushes, connection)
        # The batch is handled after all three writes: each record pushes the committed state, so every
        # push says version 3 with its count; order never goes backwards.
        assert [m["version"] for m in messages] == sorted(m["version"] for m in messages)
        assert messages[-1]["version"] == 3 and messages[-1]["unreadCount"] == 1
        assert all(m["type"] == "inbox_updated" for m in messages)
    assert messages_to(pushes, "theirs") == []


def test_a_redelivered_batch_pushes_nothing_new_and_never_double_counts(
    api: TestClient, producer: dict[str, str], pushes: InMemoryPusher, inbox_outbox: Any, aws: StackTemplate
) -> None:
    notification_id = notify(api, producer)["notification_id"]
    inbox_outbox()
    table = current().settings.inbox_table
    key = {"pk": {"S": f"U#lalu#{USER}"}, "sk": {"S": f"N#{notification_id}"}}
    boto3.client("dynamodb").delete_item(TableName=table, Key=key)  # as TTL does: no one counts it down
    records = inbox_outbox()
    assert count(api) == 0
    load_function("inbox_outbox").handler({"Records": records}, FakeLambdaContext())  # Lambda retries the batch
    assert count(api) == 0
    inbox_outbox()
    store = DynamoInboxStore(current().settings.inbox_table)
    assert store.counter("lalu", USER) == (0, 2)  # one decrement, however often the record came
    pushed = [(m["version"], m["unreadCount"]) for m in messages_to(pushes, "mine-1")]
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
