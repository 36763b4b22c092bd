"""The four flows the cost bench (cost_per_million.py) runs on a local cloud, each as its users drive it: an app
user, a partner, an owner or producer service, an agent engine. `prepare` does what a flow needs once (keys,
a session, an open WebSocket); `run` does one operation and returns once its last side effect is seen."""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

import httpx
from websockets.sync.client import connect

from herald.auth.dynamo import DynamoServiceKeyStore
from herald.auth.service_keys import ServiceKeys
from tests.support.inbox import connections_of
from tests.support.local_cloud import LocalCloudProcess
from tests.support.tokens import make_token

DEADLINE_S = 60.0


class Flow(Protocol):
    def prepare(self) -> None: ...

    def run(self, index: int) -> None: ...


def until(found: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + DEADLINE_S
    while not (value := found()):
        if time.monotonic() > deadline:
            raise SystemExit(f"not seen within {DEADLINE_S:.0f} s: {what}")
        time.sleep(0.05)
    return value


class Flows:
    def __init__(self, cloud: LocalCloudProcess) -> None:
        self.cloud = cloud
        self.keys = ServiceKeys(DynamoServiceKeyStore(cloud.resource("ServiceKeysTable"), cloud.client("dynamodb")))
        self.tag = secrets.token_hex(3)

    def all(self) -> dict[str, Flow]:
        return {
            "confirm": ConfirmFlow(self),
            "notification": NotificationFlow(self),
            "event": EventFlow(self),
            "turn message": TurnFlow(self),
        }

    def user(self, token_of: str) -> httpx.Client:
        headers = {"Authorization": f"Bearer {make_token(token_of)}"}
        return httpx.Client(base_url=self.cloud.http_url, headers=headers, timeout=30)

    def service(self, service_id: str, capability: str, **rights: Any) -> httpx.Client:
        key, _ = self.keys.create_key(f"{service_id}-{self.tag}", [capability], **rights)
        return httpx.Client(base_url=self.cloud.http_url, headers={"Authorization": f"Bearer {key}"}, timeout=30)

    def fake(self, name: str) -> list[dict[str, Any]]:
        return httpx.get(f"{self.cloud.fake_url(name)}/__fake/messages", timeout=30).json()  # type: ignore[no-any-return]


class ConfirmFlow:
    """An inviter asks a new member each time; the member accepts the confirm its IM shows."""

    def __init__(self, flows: Flows) -> None:
        self.flows = flows
        self.inviter = flows.user("10001")

    def prepare(self) -> None:
        return None

    def pushed(self, to: str, kind: str) -> dict[str, Any] | None:
        return next((m for m in self.flows.fake("tencent_im") if m["to"] == to and m["data"]["type"] == kind), None)

    def run(self, index: int) -> None:
        member = f"4{int(self.flows.tag, 16):08d}{index:04d}"  # a numeric user id, new each time
        body = {"invitation_type": "host", "target_user_id": member}
        self.inviter.post("/api/v1/role-invitations", json=body).raise_for_status()
        confirm_id = until(lambda: self.pushed(member, "im_confirm"), "the invitation's push")["data"]["confirm_id"]
        accept = f"/api/v1/message/action-confirms/{confirm_id}/accept"
        self.flows.user(member).post(accept, json={"command_id": "c1"}).raise_for_status()
        until(lambda: self.pushed(member, "im_confirm_update"), "the accept's update push")


class NotificationFlow:
    """A producer notifies a user whose app is connected; the user reads it. Both counts arrive on the socket."""

    def __init__(self, flows: Flows) -> None:
        self.flows = flows
        self.user_id = f"5{int(flows.tag, 16):08d}"
        self.frames: list[dict[str, Any]] = []
        self.producer: httpx.Client | None = None

    def prepare(self) -> None:
        self.producer = self.flows.service("producer", "/internal/v1/inbox")
        socket = connect(f"{self.flows.cloud.ws_url}/?token={make_token(self.user_id)}")

        def listen() -> None:
            for frame in socket:
                self.frames.append(json.loads(frame))

        threading.Thread(target=listen, daemon=True).start()  # open for the bench's life, as an app's would be
        until(self.listed, "the connection in the user's index")

    def listed(self) -> bool:
        return bool(connections_of(self.flows.cloud, self.user_id))

    def run(self, index: int) -> None:
        assert self.producer is not None
        body = {
            "user_id": self.user_id,
            "kind": "QUESTION_PENDING",
            "session_id": f"s{index}",
            "tail": f"q{index}",
            "title": "Question",
        }
        created = self.producer.post("/internal/v1/inbox/notifications", json=body)
        created.raise_for_status()
        until(lambda: self.frames and self.frames[-1]["unreadCount"] == 1, "the unread count pushed")
        notification = created.json()["data"]["notification_id"]
        self.flows.user(self.user_id).post(f"/api/v1/inbox/notifications/{notification}/read").raise_for_status()
        until(lambda: self.frames[-1]["unreadCount"] == 0, "the count pushed after the read")


class EventFlow:
    """A partner posts one event a card; Feishu shows it."""

    def __init__(self, flows: Flows) -> None:
        self.flows = flows
        self.partner: httpx.Client | None = None

    def prepare(self) -> None:
        self.partner = self.flows.service("partner", "/events/external", targets=["chat_id:oc_costs"])

    def run(self, index: int) -> None:
        assert self.partner is not None
        title = f"build {self.flows.tag} {index}"
        data = {
            "title": title,
            "status": "running",
            "target": {"receive_id": "oc_costs", "receive_id_type": "chat_id"},
            "event_id": f"build-{index}",
            "revision": 1,
        }
        body = {"event_id": f"e-{self.flows.tag}-{index}", "event_type": "build", "data": data}
        self.partner.post("/events/external", json=body).raise_for_status()
        until(lambda: any(card["title"] == title for card in self.flows.fake("feishu")), "the card")


class TurnFlow:
    """A member writes to an idle agent; the engine takes the turn off its queue and finishes it."""

    def __init__(self, flows: Flows) -> None:
        self.flows = flows
        self.session = f"s-{flows.tag}"
        self.engine: httpx.Client | None = None
        self.member = flows.user("alice")

    def prepare(self) -> None:
        self.engine = self.flows.service("engine", "/internal/v1/sessions")
        body = {"app_code": "lalu", "members": {"alice": "developer"}, "agents": ["helper"], "status": "active"}
        self.engine.put(f"/internal/v1/sessions/{self.session}", json=body).raise_for_status()

    def next_turn(self) -> dict[str, Any] | None:
        sqs, queue = self.flows.cloud.client("sqs"), self.flows.cloud.resource("TurnsQueue")
        for message in sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=1, WaitTimeSeconds=1).get(
            "Messages", []
        ):
            sqs.delete_message(QueueUrl=queue, ReceiptHandle=message["ReceiptHandle"])
            turn: dict[str, Any] = json.loads(message["Body"])
            return turn
        return None

    def run(self, index: int) -> None:
        assert self.engine is not None
        posted = self.member.post(f"/api/v1/sessions/{self.session}/agents/helper/messages", json={"text": f"m{index}"})
        posted.raise_for_status()
        turn = until(self.next_turn, "the turn on the engine's queue")
        finish = f"/internal/v1/sessions/{self.session}/agents/helper/turns/{turn['turn_id']}/finish"
        self.engine.post(finish).raise_for_status()
