"""Every operation of Herald's HTTP API through the Python SDK (clients/python) on the local cloud, as an app,
a partner, an owner service, an agent engine and an operator would call it; a post whose answer is lost
is retried by the SDK and stays one event; a 429 from the real limiter is waited out as Retry-After says."""

from __future__ import annotations

import json
import os
import secrets
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from herald.auth.dynamo import DynamoServiceKeyStore
from herald.auth.service_keys import ServiceKeys
from herald_client import AppClient, Conflict, NotFound, ServiceClient, TurnReader
from herald_client.clients import OPERATIONS
from herald_dev.openapi import EXPORTED
from herald_dev.webhook_receiver import WebhookReceiver
from tests.integration.test_confirms_local_cloud import im_messages, new_user
from tests.support.local_cloud import LocalCloudProcess, running_cloud
from tests.support.owner import LoopbackOwner
from tests.support.tokens import make_token
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration


class Recorder(httpx.HTTPTransport):
    """A real transport that notes every operation it carries, and can lose one answer after Herald acted."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, str]] = []
        self.statuses: list[int] = []
        self.lose_next_answer = False

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.calls.append((request.method, request.url.path))
        response = super().handle_request(request)
        self.statuses.append(response.status_code)
        if self.lose_next_answer:
            self.lose_next_answer = False
            response.read()
            raise httpx.ReadError("the answer was lost on the way back", request=request)
        return response


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


def http(cloud: LocalCloudProcess, recorder: Recorder) -> httpx.Client:
    return httpx.Client(base_url=cloud.http_url, transport=recorder, timeout=30)


def key(cloud: LocalCloudProcess, service: str, capabilities: list[str], **rights: Any) -> str:
    keys = ServiceKeys(DynamoServiceKeyStore(cloud.resource("ServiceKeysTable"), cloud.client("dynamodb")))
    return keys.create_key(service, capabilities, **rights)[0]


@pytest.fixture
def owner() -> Iterator[LoopbackOwner]:
    owner = LoopbackOwner().start()
    yield owner
    owner.stop()


def test_every_operation_through_the_sdk(cloud: LocalCloudProcess, recorder: Recorder, owner: LoopbackOwner) -> None:
    alice, bob = new_user(), new_user()
    as_alice = AppClient(cloud.http_url, make_token(alice), http=http(cloud, recorder))
    as_bob = AppClient(cloud.http_url, make_token(bob), http=http(cloud, recorder))
    suffix = secrets.token_hex(3)
    chat = f"oc_sdk_{suffix}"
    service = ServiceClient(
        cloud.http_url,
        key(
            cloud,
            f"sdk-{suffix}",
            ["/internal/v1", "/internal/v1/confirms/owner", "/events/external"],
            targets=[f"chat_id:{chat}"],
        ),
        http=http(cloud, recorder),
    )

    assert as_alice.health()["status"] == "ok" and as_alice.me()["user_id"] == alice
    assert service.whoami()["service_id"] == f"sdk-{suffix}"

    # role invitations and their confirms
    cancelled = as_alice.invite("host", bob)
    assert as_bob.invitation(cancelled["invitation_id"])["status"] == "pending"
    assert as_alice.cancel_invitation(cancelled["invitation_id"])["status"] == "cancelled"
    as_alice.invite("bd", bob)
    confirm_id = eventually(lambda: pushed_confirm_for(cloud, bob, "bd"))
    assert as_bob.accept(confirm_id, "tap-1")["status"] == "accepted"
    with pytest.raises(Conflict) as refused:
        as_bob.reject(confirm_id, "tap-2", "changed my mind")
    assert refused.value.reason == "accepted"
    assert [c["status"] for c in as_bob.confirm_statuses([confirm_id])] == ["accepted"]
    assert confirm_id in [c["confirm_id"] for c in as_alice.confirms_with(bob)]
    assert service.confirm_deliveries(confirm_id)["confirm"]["confirm_id"] == confirm_id

    # owner services
    business_type = f"group_join_{suffix}"
    registered = service.register_business_type(business_type, **owner.registration())
    owner.secret = registered["signing_secret"]
    owner.secret = service.rotate_secret(business_type)["signing_secret"]
    assert [r["business_type"] for r in service.registrations()] == [business_type]
    owner.facts["g-1"] = "pending"
    asked = {
        "business_type": business_type,
        "business_subtype": "join",
        "business_id": "g-1",
        "source_event_id": "e-1",
        "sender_user_id": alice,
        "receiver_user_id": bob,
        "message_text": "join?",
    }
    assert service.ask_confirm(**asked)["status"] == "pending"
    assert service.cancel_confirm(business_type, "g-1")["status"] == "cancelled"

    # inbox: producer and app
    for n in range(3):
        service.notify(bob, "QUESTION_PENDING", "s1", f"q{n}", f"Question {n}")
    assert as_bob.unread_count() == 3
    items = as_bob.notifications()["items"]
    assert as_bob.read(items[0]["notification_id"]) == 2
    assert service.resolve(bob, "QUESTION_PENDING", "s1", "q1") is not None
    assert as_bob.delete(items[2]["notification_id"]) in (0, 1)
    assert as_bob.read_all() == 0
    assert as_bob.set_preferences(subagent_done=True)["subagent_done"] is True
    assert as_bob.preferences()["subagent_done"] is True
    with pytest.raises(NotFound):
        as_alice.read(items[1]["notification_id"])  # somebody else's: as absent as a missing one

    # agent turn queue, with the SDK's engine helper reading the engine queue
    session = f"s-{suffix}"
    service.put_session(session, {bob: "developer"}, ["po"])
    first = as_bob.send(session, "po", "first")
    queued = as_bob.send(session, "po", "second")
    assert (first["delivery"], queued["delivery"]) == ("started", "queued")
    as_bob.cancel(session, "po", queued["message_id"])
    reader = TurnReader(service, cloud.client("sqs"), cloud.resource("TurnsQueue"))

    def the_first_turn() -> tuple[dict[str, Any], str]:
        turns = [t for t in reader.turns() if t[0]["session_id"] == session]
        assert turns
        return turns[0]

    turn, receipt = eventually(the_first_turn)
    third = as_bob.send(session, "po", "third")
    taken = service.take_pending(session, "po", turn["turn_id"])  # between two steps of the turn
    assert taken["message_ids"] == [third["message_id"]] and taken["text"] == "third"
    approval_id = f"ap-{suffix}"
    ask = {"approval_id": approval_id, "user_id": bob, "text": "Ship it?", "expire_in_s": 600}
    assert service.request_approval(session, "po", turn["turn_id"], ask)["status"] == "pending"
    assert service.cancel_approval(session, "po", turn["turn_id"], approval_id)["status"] == "cancelled"
    assert reader.end(turn, receipt)["state"] == "idle"
    types = [e["type"] for e in as_bob.session_events(session)["events"]]
    assert "chat.message_cancelled" in types and "turn.finished" in types

    # external events: the first post's answer is lost; the SDK resends it, and it stays one event
    recorder.lose_next_answer = True
    event = {"title": "Job 1", "status": "running", "target": {"receive_id": chat, "receive_id_type": "chat_id"}}
    assert service.post_event(f"evt-{suffix}", "job.progress", event)["event_id"] == f"evt-{suffix}"
    posts = [call for call in recorder.calls if call == ("POST", "/events/external")]
    assert len(posts) == 2

    def one_card() -> None:
        cards = httpx.get(f"{cloud.fake_url('feishu')}/__fake/messages").json()
        assert [c["title"] for c in cards if c["receive_id"] == chat] == ["Job 1"]

    eventually(one_card)

    # what became of the events: read, listed, and told by a status webhook (its secret rotated once)
    receiver = WebhookReceiver().start()
    try:
        assert service.set_event_webhook(f"{receiver.url}/hooks", ["succeeded"])["secret"].startswith("whsec_")
        receiver.secret = service.rotate_event_webhook_secret()["secret"]
        service.post_event(f"evt2-{suffix}", "job.progress", {**event, "title": "Job 2"})

        def told() -> None:  # (the first event's notice too, when it was still on its way as the webhook came)
            assert f"evt2-{suffix}" in [d["data"]["event_id"] for d in receiver.documents()]

        eventually(told, timeout=60)
        assert service.get_event(f"evt2-{suffix}")["status"] == "succeeded"
        listed = [item["event_id"] for item in service.list_events(status="succeeded", page_size=1)]
        assert listed == [f"evt2-{suffix}", f"evt-{suffix}"]
        assert service.delete_event_webhook() == {"deleted": True}
    finally:
        receiver.stop()

    known = operations()
    called = {operation_of(method, path, known) for method, path in recorder.calls}
    assert known - called == set()


@pytest.fixture(scope="module")
def limited_cloud(
    tmp_path_factory: pytest.TempPathFactory, dynamodb_endpoint: str | None, sqs_endpoint: str | None
) -> Iterator[LocalCloudProcess]:
    """A local cloud where a service key may make two requests a window (the other limits stay off), the window
    shortened to 4 s so that waiting one out takes seconds, not a minute."""
    env = {"HERALD_RATE_LIMIT_KEY_PER_MINUTE": "2", "HERALD_RATE_LIMIT_WINDOW_SECONDS": "4"}
    yield from running_cloud(tmp_path_factory, "limited", dynamodb_endpoint, sqs_endpoint, env)


@pytest.mark.skipif(
    os.environ.get("HERALD_TEST_DYNAMODB") != "local",
    reason="starts a cloud of its own to wait out a real rate-limit window: once, on DynamoDB Local's writes",
)
def test_a_429_from_the_limiter_is_waited_out_as_retry_after_says_and_the_same_post_then_lands(
    limited_cloud: LocalCloudProcess, recorder: Recorder
) -> None:
    cloud, chat = limited_cloud, f"oc_limited_{secrets.token_hex(3)}"
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        time.sleep(seconds)  # the sleep is the behaviour: the SDK waits out Retry-After

    service = ServiceClient(
        cloud.http_url,
        key(cloud, f"limited-{secrets.token_hex(3)}", ["/events/external"], targets=[f"chat_id:{chat}"]),
        http=http(cloud, recorder),
        sleep=sleep,
    )
    event = {"title": "Job", "status": "running", "target": {"receive_id": chat, "receive_id_type": "chat_id"}}
    for n in range(3):
        started = time.monotonic()
        posted = service.post_event(f"{chat}-{n}", "job.progress", {**event, "summary": f"step {n}"})
        assert posted["status"] == "accepted" and posted["duplicate"] is False
    waited = time.monotonic() - started
    assert recorder.statuses == [202, 202, 429, 202]  # the third post met the limit once, then got through
    assert len(slept) == 1 and 1 <= slept[0] <= 6 and waited >= slept[0]  # the 4 s window slides: up to 1.5 of it

    def three_cards() -> None:
        cards = httpx.get(f"{cloud.fake_url('feishu')}/__fake/messages").json()
        assert len([c for c in cards if c["receive_id"] == chat]) == 3  # each post is one event, none lost

    eventually(three_cards)


def pushed_confirm_for(cloud: LocalCloudProcess, receiver: str, subtype: str) -> str:
    pushed = [
        m["data"]["confirm_id"]
        for m in im_messages(cloud, receiver)
        if m["data"]["type"] == "im_confirm" and m["data"]["business_subtype"] == subtype
    ]
    assert len(pushed) == 1, pushed
    return str(pushed[0])


def operations() -> set[tuple[str, str]]:
    spec = json.loads(EXPORTED.read_text())
    found = {(method.upper(), path) for path, methods in spec["paths"].items() for method in methods}
    assert len(found) == len(OPERATIONS)
    return found


def operation_of(method: str, path: str, known: set[tuple[str, str]]) -> tuple[str, str] | None:
    """The operation a call went to: same method, same segments where the template has no placeholder (the
    template with the most literal segments wins)."""
    parts = path.split("/")
    matches = [
        (sum(not t.startswith("{") for t in template.split("/")), (m, template))
        for m, template in known
        if m == method
        and len(template.split("/")) == len(parts)
        and all(t == p or t.startswith("{") for t, p in zip(template.split("/"), parts, strict=True))
    ]
    return max(matches)[1] if matches else None
