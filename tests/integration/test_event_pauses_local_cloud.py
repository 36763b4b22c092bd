"""Issue 48, item 1, on the local cloud (moto, and DynamoDB Local + fauxqs): an operator pauses a partner service
with `herald-ops events pause`, the partner's events are accepted and held (`events paused` counts the lane),
nothing reaches the fake Feishu over a bounded wait, and `events resume` delivers them in order within seconds."""

from __future__ import annotations

import secrets
import time

import httpx
import pytest

from herald.auth.dynamo import DynamoServiceKeyStore
from herald.auth.service_keys import ServiceKeys
from tests.support.local_cloud import LocalCloudProcess
from tests.support.tenants import ops
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration


def _cards(cloud: LocalCloudProcess, chat: str) -> list[str]:
    log = httpx.get(f"{cloud.fake_url('feishu')}/__fake/messages", timeout=30).json()
    return [entry["title"] for entry in log if entry["receive_id"] == chat]


def test_a_paused_service_is_held_while_its_events_are_accepted_and_delivered_in_order_on_resume(
    cloud: LocalCloudProcess,
) -> None:
    service, chat = f"paused-{secrets.token_hex(3)}", f"oc_pause_{secrets.token_hex(3)}"
    keys = ServiceKeys(DynamoServiceKeyStore(cloud.resource("ServiceKeysTable"), cloud.client("dynamodb")))
    key, _ = keys.create_key(service, ["/events/external"], targets=[f"chat_id:{chat}"])
    (paused,) = ops(cloud, "events", "pause", "--service", service, "--note", "chat migration")
    assert paused["paused"] == f"service#{service}"
    target = {"receive_id": chat, "receive_id_type": "chat_id"}
    for n in (1, 2, 3):
        body = {"event_id": f"e{n}", "event_type": "build", "data": {"title": f"build {n}", "status": "ok",
                                                                      "target": target}}  # fmt: skip
        answer = httpx.post(f"{cloud.http_url}/events/external", json=body,
                            headers={"Authorization": f"Bearer {key}"}, timeout=30)  # fmt: skip
        assert answer.status_code == 202, answer.text

    def held() -> int:
        (row,) = [row for row in ops(cloud, "events", "paused") if row["paused"] == f"service#{service}"]
        assert row["held"] == 1, row
        return int(row["held"])

    eventually(held, timeout=60)
    assert _cards(cloud, chat) == []  # held: the worker met the lane and sent nothing
    started = time.monotonic()
    (resumed,) = ops(cloud, "events", "resume", "--service", service)
    assert resumed["released"] == 1
    eventually(lambda: _all_three(_cards(cloud, chat)), timeout=10)
    print(f"held events delivered {time.monotonic() - started:.1f} s after resume")


def _all_three(titles: list[str]) -> None:
    assert titles == ["build 1", "build 2", "build 3"], titles
