"""Issue 51 through the local cloud (moto, and DynamoDB Local + fauxqs): an agent's approval arrives in the member's
fake IM with its buttons and as an APPROVAL_PENDING notification; the member's accept (or reject, or the engine's
cancel) decides it once, the engine's turn queue gets `approval.decided` once, the turn runs again, the buttons grey
out and the notification is read, its count pushed over the WebSocket. Clicks racing the engine's cancel: one
decision, every time."""

from __future__ import annotations

import json
import secrets
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import jsonschema
import pytest
from websockets.sync.client import connect

from tests.integration.test_confirms_local_cloud import im_messages, new_user, updates
from tests.integration.test_turns_local_cloud import Engine
from tests.support.aws import REPO
from tests.support.local_cloud import LocalCloudProcess
from tests.support.tokens import make_token
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

DECIDED = json.loads((REPO / "events" / "turns" / "approval-decided.schema.json").read_text())


class Asking:
    """One session whose agent runs a turn, with a member to ask; the engine reads its own queue."""

    def __init__(self, cloud: LocalCloudProcess, engine: Engine) -> None:
        self.cloud, self.engine = cloud, engine
        self.member, self.viewer = new_user(), new_user()
        self.session_id = f"s-{secrets.token_hex(4)}"
        members = {self.member: "developer", self.viewer: "viewer"}
        body = {"app_code": "lalu", "members": members, "agents": ["po"], "status": "active"}
        assert engine.http.put(f"/internal/v1/sessions/{self.session_id}", json=body).status_code == 200
        self.http = httpx.Client(
            base_url=cloud.http_url, headers={"Authorization": f"Bearer {make_token(self.member)}"}, timeout=30
        )
        assert self.post("deploy it").status_code == 202
        self.turn_id = engine.next_turn(self.session_id)["turn_id"]
        self.turns = f"/internal/v1/sessions/{self.session_id}/agents/po/turns/{self.turn_id}"

    def post(self, text: str) -> httpx.Response:
        return self.http.post(f"/api/v1/sessions/{self.session_id}/agents/po/messages", json={"text": text})

    def ask(self, approval_id: str = "ap-1", **body: Any) -> httpx.Response:
        payload = {"app_code": "lalu", "approval_id": approval_id, "user_id": self.member, "text": "Ship it?", **body}
        return self.engine.http.post(f"{self.turns}/approvals", json=payload)

    def cancel(self, approval_id: str = "ap-1") -> httpx.Response:
        return self.engine.http.post(f"{self.turns}/approvals/{approval_id}/cancel")

    def act(self, confirm_id: str, action: str, command_id: str = "c1") -> httpx.Response:
        body = {"command_id": command_id, **({"reason": "not now"} if action == "reject" else {})}
        return self.http.post(f"/api/v1/message/action-confirms/{confirm_id}/{action}", json=body)

    def pushed(self) -> dict[str, Any]:
        def arrived() -> dict[str, Any]:
            messages = [m for m in im_messages(self.cloud, self.member) if m["data"]["type"] == "im_confirm"]
            assert len(messages) == 1, messages
            return messages[0]["data"]  # type: ignore[no-any-return]

        return eventually(arrived)

    def notifications(self) -> list[dict[str, Any]]:
        response = self.http.get("/api/v1/inbox/notifications")
        assert response.status_code == 200, response.text
        return response.json()["data"]["items"]  # type: ignore[no-any-return]

    def decisions(self) -> list[dict[str, Any]]:
        """The approval.decided messages on the engine's queue for this session, each checked against its schema."""
        decided = [m for m in self.engine.taken[self.session_id] if m.get("type") == "approval.decided"]
        for message in decided:
            jsonschema.validate(message, DECIDED)
        return decided

    def told_once(self) -> dict[str, Any]:
        def told() -> dict[str, Any]:
            self.engine.drain()
            decisions = self.decisions()
            assert len(decisions) == 1, decisions
            return decisions[0]

        return eventually(told)

    def events(self) -> list[str]:
        response = self.http.get(f"/api/v1/sessions/{self.session_id}/events", params={"limit": 200})
        return [e["type"] for e in response.json()["data"]["events"]]


@pytest.fixture(scope="module")
def engine(cloud: LocalCloudProcess) -> Engine:
    return Engine(cloud)


@pytest.fixture
def asking(cloud: LocalCloudProcess, engine: Engine) -> Asking:
    return Asking(cloud, engine)


def _asked(asking: Asking) -> dict[str, Any]:
    asked = asking.ask()
    assert asked.status_code == 201, asked.text
    data = asked.json()["data"]
    pushed = asking.pushed()
    assert pushed["confirm_id"] == data["confirm_id"] and pushed["business_type"] == "agent_approval"
    assert [a["action"] for a in pushed["actions"]] == ["reject", "accept"]
    notification = eventually(lambda: _only(asking.notifications()))
    assert notification["kind"] == "APPROVAL_PENDING" and not notification["is_read"]
    refused = asking.post("still there?")
    assert refused.status_code == 409 and refused.json()["data"]["reason"] == "awaiting_approval"
    return data  # type: ignore[no-any-return]


def _only(items: list[dict[str, Any]]) -> dict[str, Any]:
    assert len(items) == 1, items
    return items[0]


def _resumed(asking: Asking, confirm_id: str, status: str) -> None:
    def greyed_and_read() -> None:
        assert updates(asking.cloud, confirm_id) == [status]
        assert asking.notifications()[0]["is_read"]

    eventually(greyed_and_read)
    assert asking.events()[-2:] == ["approval.decided", "turn.resumed"]
    assert asking.post("next").json()["data"]["delivery"] == "queued"  # the turn runs again


def test_an_accept_reaches_the_engine_once_greys_the_buttons_and_reads_the_notification(asking: Asking) -> None:
    asked = _asked(asking)
    with connect(f"{asking.cloud.ws_url}/?token={make_token(asking.member)}") as ws:
        accepted = asking.act(asked["confirm_id"], "accept")
        assert accepted.status_code == 200 and accepted.json()["data"]["status"] == "accepted", accepted.text
        while (pushed := json.loads(ws.recv(timeout=30)))["type"] != "inbox_updated" or pushed["unreadCount"]:
            pass  # the count pushed down to 0 once the approval was decided
    decision = asking.told_once()
    assert (decision["decision"], decision["decided_by"]) == ("approved", asking.member)
    _resumed(asking, asked["confirm_id"], "accepted")


def test_a_reject_and_a_cancel_each_decide_once(asking: Asking, cloud: LocalCloudProcess, engine: Engine) -> None:
    asked = _asked(asking)
    assert asking.act(asked["confirm_id"], "reject").status_code == 200
    rejected = asking.told_once()
    assert (rejected["decision"], rejected["reason"]) == ("rejected", "not now")
    _resumed(asking, asked["confirm_id"], "rejected")

    other = Asking(cloud, engine)
    second = _asked(other)
    cancelled = other.cancel()
    assert cancelled.status_code == 200 and cancelled.json()["data"]["status"] == "cancelled"
    late = other.act(second["confirm_id"], "accept")
    assert late.status_code == 409 and late.json()["data"]["reason"] == "cancelled"
    assert (other.told_once()["decision"], other.told_once()["decided_by"]) == ("cancelled", "engine")
    _resumed(other, second["confirm_id"], "cancelled")


def test_clicks_from_two_devices_racing_the_engines_cancel_make_one_decision(
    cloud: LocalCloudProcess, engine: Engine
) -> None:
    for _ in range(4):
        asking = Asking(cloud, engine)
        confirm_id = asking.ask().json()["data"]["confirm_id"]
        with ThreadPoolExecutor(max_workers=3) as race:
            answers = [
                race.submit(asking.act, confirm_id, "accept", "phone"),
                race.submit(asking.act, confirm_id, "reject", "desktop"),
                race.submit(asking.cancel),
            ]
        statuses = [answer.result().status_code for answer in answers]
        assert statuses.count(200) == 1 and statuses.count(409) == 2, statuses
        decision = asking.told_once()
        assert asking.events().count("approval.decided") == 1
        winners = {"approved": 0, "rejected": 1, "cancelled": 2}
        assert statuses[winners[decision["decision"]]] == 200  # the one decided is the one told it won
