"""Status webhooks end to end on moto (issue 46, item 4): a partner registers its endpoint with the key it posts
with; each event that reaches a status it asked for is posted there, signed (verified here with the official
`standardwebhooks` library), through the events table's stream and the webhooks queue; an endpoint that fails or
hangs is tried again later and holds up neither card delivery nor another service's webhook."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from standardwebhooks.webhooks import Webhook

from herald.auth.service_keys import ServiceKeys
from herald.events.wiring import operations
from herald_dev.fakes.feishu import FakeFeishu
from herald_dev.webhook_receiver import WebhookReceiver
from tests.functional.test_events import Partner, titles
from tests.support.container import reconfigure
from tests.support.events import EventsPipeline

BILLING_CHAT = {"receive_id": "oc_billing", "receive_id_type": "chat_id"}


class Subscriber(Partner):
    """A partner with a status webhook on the receiver at `path`."""

    def subscribe(self, receiver: WebhookReceiver, path: str, statuses: list[str] | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"url": f"{receiver.url}{path}"}
        if statuses is not None:
            body["statuses"] = statuses
        answer = self.api.put("/events/external/webhook", json=body, headers=self.headers)
        assert answer.status_code == 200, answer.text
        return answer.json()["data"]  # type: ignore[no-any-return]


@pytest.fixture(autouse=True)
def notices_posted(events: EventsPipeline) -> None:
    events.posts_notices = True


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    server = WebhookReceiver().start()
    yield server
    server.stop()


@pytest.fixture
def scheduler(api: TestClient, service_keys: ServiceKeys) -> Subscriber:
    return Subscriber(api, service_keys, "scheduler", ["chat_id:oc_ops"])


@pytest.fixture
def billing(api: TestClient, service_keys: ServiceKeys) -> Subscriber:
    return Subscriber(api, service_keys, "billing", ["chat_id:oc_billing"])


def test_a_failed_event_is_posted_signed_with_its_fate_and_verifies_with_the_official_library(
    scheduler: Subscriber, receiver: WebhookReceiver, events: EventsPipeline, feishu: FakeFeishu
) -> None:
    registered = scheduler.subscribe(receiver, "/hooks")
    receiver.secret = registered["secret"]
    assert registered["secret"].startswith("whsec_") and registered["statuses"] == ["failed", "rejected", "unknown"]
    feishu.queue_faults({"op": "send", "code": 230001, "status": 400})
    scheduler.accept("e1")
    scheduler.accept("e2")  # behind the failed one: still queued, nothing to tell
    events.drain()
    (document,) = receiver.documents()
    assert document["type"] == "event.failed" and document["timestamp"].endswith("Z")
    assert document["data"] == scheduler.api.get("/events/external/e1", headers=scheduler.headers).json()["data"]
    assert document["data"]["blocked"] is True and document["data"]["attempts"][0]["code"] == 230001
    (notice,) = events.notices
    assert receiver.refused == [] and len(receiver.received) == 1
    assert receiver.received[0]["webhook_id"].startswith("evt_") and notice["Body"]


def test_the_signature_checks_out_with_standard_webhooks_and_a_tampered_body_does_not(
    scheduler: Subscriber, receiver: WebhookReceiver, events: EventsPipeline, feishu: FakeFeishu
) -> None:
    """The receiver keeps each post as it arrived: the official verifier is given exactly that."""
    secret = scheduler.subscribe(receiver, "/hooks", ["succeeded"])["secret"]
    receiver.secret = secret
    scheduler.accept("e1")
    events.drain()
    ((headers, body),) = [(entry["headers"], entry["body"]) for entry in receiver.received]
    assert Webhook(secret).verify(body, headers)["type"] == "event.succeeded"
    with pytest.raises(Exception, match="No matching signature found"):
        Webhook(secret).verify(body.replace(b"succeeded", b"failed"), headers)


def test_only_the_statuses_asked_for_are_posted_and_a_change_of_statuses_keeps_the_secret(
    scheduler: Subscriber, receiver: WebhookReceiver, events: EventsPipeline
) -> None:
    first = scheduler.subscribe(receiver, "/hooks")  # the default: failed, unknown, rejected
    receiver.secret = first["secret"]
    scheduler.accept("e1")
    events.drain()
    assert receiver.documents() == []  # succeeded was not asked for
    changed = scheduler.subscribe(receiver, "/hooks", ["succeeded", "superseded"])
    assert changed["secret"] is None and changed["created_at_ms"] == first["created_at_ms"]
    scheduler.accept("r1", event_id="card", revision=1)
    scheduler.accept("r2", event_id="card", revision=2)
    events.drain()
    assert [(d["type"], d["data"]["event_id"]) for d in receiver.documents()] == [
        ("event.superseded", "r1"),
        ("event.succeeded", "r2"),
    ]


def test_an_endpoint_answering_500_gets_the_notice_again_later_with_the_same_id_and_order_holds(
    scheduler: Subscriber, receiver: WebhookReceiver, events: EventsPipeline, feishu: FakeFeishu
) -> None:
    receiver.secret = scheduler.subscribe(receiver, "/hooks", ["succeeded"])["secret"]
    receiver.behave("/hooks", "fail")
    for n in range(3):
        scheduler.accept(f"e{n}", title=f"event {n}")
    events.drain()
    assert titles(feishu) == ["event 0", "event 1", "event 2"]  # cards never wait for the webhook
    assert receiver.documents() == [] and len(events.notices) == 1  # the group waits behind its first notice
    receiver.behave("/hooks", "ok")
    events.release_deferred()
    events.drain()
    assert [d["data"]["event_id"] for d in receiver.documents()] == ["e0", "e1", "e2"]
    ids = [json.loads(message["Body"])["webhook_id"] for message in events.notices]
    assert len(ids) == 4 and ids[0] == ids[1] == receiver.received[0]["webhook_id"]  # e0 twice: failed, then taken


def test_a_hanging_endpoint_delays_neither_card_delivery_nor_another_services_webhook(
    scheduler: Subscriber,
    billing: Subscriber,
    receiver: WebhookReceiver,
    events: EventsPipeline,
    feishu: FakeFeishu,
) -> None:
    reconfigure(owner_call_total_ms=300)  # the total deadline, sooner (5 s deployed)
    scheduler.subscribe(receiver, "/slow", ["succeeded"])
    receiver.secret = billing.subscribe(receiver, "/billing", ["succeeded"])["secret"]
    receiver.behave("/slow", "hang")
    scheduler.accept("s1", title="scheduler's")
    billing.accept("b1", title="billing's", target=BILLING_CHAT)
    events.drain()
    assert titles(feishu) == ["scheduler's"] and titles(feishu, "oc_billing") == ["billing's"]
    assert [d["data"]["event_id"] for d in receiver.documents("/billing")] == ["b1"]
    assert receiver.documents("/slow") == []  # given up at its deadline, tried again later


def test_a_webhook_is_the_keys_tenants_and_is_deleted_and_rotated_by_the_service_alone(
    scheduler: Subscriber, receiver: WebhookReceiver, api: TestClient, service_keys: ServiceKeys
) -> None:
    first = scheduler.subscribe(receiver, "/hooks")
    key, _ = service_keys.create_key("scheduler", ["/events/external"], ["globex"], targets=["chat_id:oc_ops"])
    globex = {"Authorization": f"Bearer {key}"}
    assert api.post("/events/external/webhook/rotate-secret", headers=globex).status_code == 404
    assert api.delete("/events/external/webhook", headers=globex).status_code == 404
    rotated = api.post("/events/external/webhook/rotate-secret", headers=scheduler.headers).json()["data"]
    assert rotated["secret"] not in (None, first["secret"]) and rotated["previous_secret_until_ms"]
    assert api.delete("/events/external/webhook", headers=scheduler.headers).json()["data"] == {"deleted": True}
    assert api.delete("/events/external/webhook", headers=scheduler.headers).status_code == 404


@pytest.mark.parametrize(
    "body",
    [
        {"url": "https://169.254.169.254/latest/meta-data"},
        {"url": "file:///etc/passwd"},
        {"url": "https://ci.example.com/", "statuses": ["queued"]},
        {"url": "https://ci.example.com/", "statuses": []},
        {"url": "https://ci.example.com/", "extra": 1},
        {"url": "x" * 3000},
        {},
    ],
)
def test_a_careless_webhook_is_400_and_registers_nothing(
    scheduler: Subscriber, body: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    reconfigure(owner_callbacks_https_only=True, owner_callbacks_allow_private=False)  # the deployed rules
    answer = scheduler.api.put("/events/external/webhook", json=body, headers=scheduler.headers)
    assert answer.status_code == 400 and answer.json()["code"] == "INVALID_ARGUMENT", answer.text
    assert scheduler.api.delete("/events/external/webhook", headers=scheduler.headers).status_code == 404


def test_an_operator_skipping_a_failed_event_is_told_to_a_webhook_asking_for_skipped(
    scheduler: Subscriber, receiver: WebhookReceiver, events: EventsPipeline, feishu: FakeFeishu
) -> None:
    receiver.secret = scheduler.subscribe(receiver, "/hooks", ["failed", "skipped"])["secret"]
    feishu.queue_faults({"op": "send", "code": 230001, "status": 400})
    scheduler.accept("e1")
    events.drain()
    operations().skip("scheduler:1", by="alice")
    events.drain()
    assert [d["type"] for d in receiver.documents()] == ["event.failed", "event.skipped"]


def test_a_status_no_webhook_asks_for_queues_no_notice(
    scheduler: Subscriber, billing: Subscriber, receiver: WebhookReceiver, events: EventsPipeline, feishu: FakeFeishu
) -> None:
    """Issue 47, item 5 (the cost bench): each event's card, once sent, queued a status notice whether or not its
    service had a webhook asking for it: three SQS requests and a webhooks invocation an event for nothing. The
    outbox queues a notice only for a status a registered webhook asks for."""
    scheduler.subscribe(receiver, "/hooks")  # the default: failed, unknown, rejected (not succeeded)
    scheduler.accept("e1", title="scheduler's")
    billing.accept("b1", title="billing's", target=BILLING_CHAT)  # billing has no webhook
    events.drain()
    assert titles(feishu) == ["scheduler's"] and titles(feishu, "oc_billing") == ["billing's"]
    assert events.notices == [] and receiver.documents() == []
    scheduler.subscribe(receiver, "/hooks", ["succeeded"])  # asked for now: the next one is queued and posted
    scheduler.accept("e2")
    events.drain()
    assert [json.loads(message["Body"])["status"] for message in events.notices] == ["succeeded"]
