"""Issue 48 on the local cloud (moto, and DynamoDB Local + fauxqs): an operator pauses a partner service with
`herald-ops events pause`, the partner's events are accepted and held (`events paused` counts the lane, the
partner's status API says `held`), nothing reaches the fake Feishu over a bounded wait, and `events resume`
delivers them in order within seconds; `find` finds the event and the audit log has both acts. A tenant's pause
holds every service of it; a bulk resolution plans and then resolves two blocked lanes."""

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
    assert [_status(cloud, key, f"e{n}") for n in (1, 2, 3)] == ["held"] * 3
    started = time.monotonic()
    (resumed,) = ops(cloud, "events", "resume", "--service", service)
    assert resumed["released"] == 1
    eventually(lambda: _all_three(_cards(cloud, chat)), timeout=10)
    print(f"held events delivered {time.monotonic() - started:.1f} s after resume")
    eventually(lambda: _succeeded(cloud, key, "e3"), timeout=10)
    record, job = ops(cloud, "find", "e2", "--service", service)  # DynamoDB's own reads, by key
    assert (record["kind"], job["kind"], job["status"]) == ("event record", "event job", "succeeded")
    assert any(moment["what"].startswith("send call: done") for moment in job["timeline"])
    assert [found["kind"] for found in ops(cloud, "find", str(job["message_id"]))] == ["event job"]  # a scan
    acts = [(r["verb"], r["target"], r["outcome"]) for r in ops(cloud, "audit", "--limit", "50")]
    assert ("events pause", service, "ok") in acts and ("events resume", service, "ok released=1") in acts


def _all_three(titles: list[str]) -> None:
    assert titles == ["build 1", "build 2", "build 3"], titles


def _status(cloud: LocalCloudProcess, key: str, event_id: str) -> str:
    answer = httpx.get(
        f"{cloud.http_url}/events/external/{event_id}", headers={"Authorization": f"Bearer {key}"}, timeout=30
    )
    assert answer.status_code == 200, answer.text
    return str(answer.json()["data"]["status"])


def _succeeded(cloud: LocalCloudProcess, key: str, event_id: str) -> None:
    assert _status(cloud, key, event_id) == "succeeded"


def _post(cloud: LocalCloudProcess, key: str, event_id: str, chat: str) -> None:
    target = {"receive_id": chat, "receive_id_type": "chat_id"}
    body = {"event_id": event_id, "event_type": "build", "data": {"title": event_id, "status": "ok", "target": target}}
    answer = httpx.post(
        f"{cloud.http_url}/events/external", json=body, headers={"Authorization": f"Bearer {key}"}, timeout=30
    )
    assert answer.status_code == 202, answer.text


def test_a_tenants_pause_holds_each_of_its_services_and_its_resume_delivers_them(cloud: LocalCloudProcess) -> None:
    app, chat = f"tp{secrets.token_hex(3)}", f"oc_tp_{secrets.token_hex(3)}"
    ops(cloud, "tenants", "set", app)
    keys = ServiceKeys(DynamoServiceKeyStore(cloud.resource("ServiceKeysTable"), cloud.client("dynamodb")))
    partners = [
        keys.create_key(f"{app}-{name}", ["/events/external"], [app], targets=[f"chat_id:{chat}"])[0]
        for name in ("a", "b")
    ]
    ops(cloud, "events", "pause", "--tenant", app)
    for n, key in enumerate(partners):
        _post(cloud, key, f"t{n}", chat)

    def both_held() -> None:
        (row,) = [row for row in ops(cloud, "events", "paused") if row["paused"] == f"events-tenant#{app}"]
        assert row["held"] == 2, row

    eventually(both_held, timeout=60)
    assert _cards(cloud, chat) == [] and _status(cloud, partners[0], "t0") == "held"
    assert ops(cloud, "events", "resume", "--tenant", app)[0]["released"] == 2
    eventually(lambda: _both(_cards(cloud, chat)), timeout=10)


def _both(titles: list[str]) -> None:
    assert sorted(titles) == ["t0", "t1"], titles


def test_a_bulk_resolution_plans_two_blocked_lanes_and_then_requeues_exactly_them(cloud: LocalCloudProcess) -> None:
    service = f"bulk-{secrets.token_hex(3)}"
    chats = [f"oc_bulk_{secrets.token_hex(3)}" for _ in range(2)]
    keys = ServiceKeys(DynamoServiceKeyStore(cloud.resource("ServiceKeysTable"), cloud.client("dynamodb")))
    key, _ = keys.create_key(service, ["/events/external"], targets=[f"chat_id:{c}" for c in chats], order="target")
    faults = [{"op": "send", "code": 230002, "status": 400, "receive_id": chat} for chat in chats]
    httpx.post(f"{cloud.fake_url('feishu')}/__fake/faults", json=faults, timeout=30)
    for n, chat in enumerate(chats):
        _post(cloud, key, f"b{n}", chat)

    def both_blocked() -> list[dict[str, object]]:
        blocked = ops(cloud, "events", "blocked", "--service", service)
        assert len(blocked) == 2, blocked
        return blocked

    eventually(both_blocked, timeout=60)
    plan = ops(cloud, "events", "resolve", "--service", service, "--status", "failed", "--requeue")
    assert sorted(row["lane"] for row in plan) == sorted(f"{service}/chat_id:{c}" for c in chats)
    assert len(ops(cloud, "events", "blocked", "--service", service)) == 2  # a plan changes nothing
    done = ops(cloud, "events", "resolve", "--service", service, "--status", "failed", "--requeue", "--execute")
    assert [row["job_id"] for row in done] == [row["job_id"] for row in plan]
    eventually(lambda: _both_sent(cloud, chats), timeout=30)


def _both_sent(cloud: LocalCloudProcess, chats: list[str]) -> None:
    assert [_cards(cloud, chat) for chat in chats] == [["b0"], ["b1"]]
