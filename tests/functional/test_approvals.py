"""Issue 51, items 1 and 2, on moto through the routes and every worker: an agent's approval becomes a confirm in the
member's IM and an APPROVAL_PENDING notification; the member's answer, the expiry or the engine's cancel decides it
once, the turn runs again, the engine's queue gets `approval.decided` once, the buttons grey out and the
notification is read (its unread count pushed)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from herald_dev.fakes.tencent_im import FakeTencentIm
from tests.functional.test_confirms_flow import accept, reject
from tests.functional.test_inbox import count, items
from tests.functional.test_inbox_stream import messages_to
from tests.functional.test_turns import reason, types
from tests.support.aws import load_function
from tests.support.clock import FakeClock, controlled_clock
from tests.support.fakes import InMemoryPusher
from tests.support.lambda_context import FakeLambdaContext
from tests.support.pipeline import ConfirmPipeline
from tests.support.turns import TurnsHarness, member

ASKED, VIEWER, OTHER = "10002", "10001", "10003"  # the inbox stream tests connect the asked (mine-1, mine-2)
MEMBERS = {ASKED: "developer", VIEWER: "viewer", OTHER: "developer"}


class Approving:
    """The engine, the member and every worker between them."""

    def __init__(self, turns: TurnsHarness, pipeline: ConfirmPipeline, fake_im: FakeTencentIm, inbox: Any) -> None:
        self.turns, self.pipeline, self.fake_im, self.inbox = turns, pipeline, fake_im, inbox
        assert turns.session(members=MEMBERS).status_code == 200
        assert turns.post(ASKED, "deploy it").status_code == 202
        (turn,) = turns.next_turns()
        self.turn_id: str = turn["turn_id"]

    def ask(self, approval_id: str = "ap-1", status: int = 201, **body: Any) -> dict[str, Any]:
        response = self.request(approval_id, **body)
        assert response.status_code == status, response.text
        return response.json()["data"]  # type: ignore[no-any-return]

    def request(self, approval_id: str = "ap-1", turn_id: str | None = None, **body: Any) -> Any:
        payload = {"app_code": "lalu", "approval_id": approval_id, "user_id": ASKED, "text": "Deploy to prod?", **body}
        path = f"/internal/v1/sessions/s1/agents/po/turns/{turn_id or self.turn_id}/approvals"
        return self.turns.api.post(path, json=payload, headers=self.turns.engine)

    def cancel(self, approval_id: str = "ap-1") -> Any:
        path = f"/internal/v1/sessions/s1/agents/po/turns/{self.turn_id}/approvals/{approval_id}/cancel"
        return self.turns.api.post(path, headers=self.turns.engine)

    def settle(self) -> None:
        """Every stream and queue until quiet: the turns outbox, the confirms' IM pushes, the inbox's counts."""
        for _ in range(3):
            self.turns.pump()
            self.pipeline.drain()
            self.inbox()

    def im(self, kind: str) -> list[dict[str, Any]]:
        return [m["data"] for m in self.fake_im.messages if m["data"]["type"] == kind]


@pytest.fixture
def approving(
    turns: TurnsHarness, pipeline: ConfirmPipeline, fake_im: FakeTencentIm, inbox_outbox: Any, pushes: InMemoryPusher
) -> Approving:
    return Approving(turns, pipeline, fake_im, inbox_outbox)


def _requested(approving: Approving) -> dict[str, Any]:
    """Asked, and shown: the confirm in the member's IM with the buttons, the notification unread."""
    asked = approving.ask()
    assert asked["status"] == "pending" and asked["user_id"] == ASKED and asked["turn_id"] == approving.turn_id
    approving.settle()
    (pushed,) = approving.im("im_confirm")
    assert pushed["confirm_id"] == asked["confirm_id"] and pushed["business_type"] == "agent_approval"
    assert pushed["msg"] == "Deploy to prod?" and {a["action"] for a in pushed["actions"]} == {"accept", "reject"}
    (notification,) = items(approving.turns.api, ASKED)
    assert notification["kind"] == "APPROVAL_PENDING" and notification["payload"]["confirm_id"] == asked["confirm_id"]
    assert count(approving.turns.api, ASKED) == 1
    refused = approving.turns.post(ASKED, "are you there?")
    assert refused.status_code == 409 and reason(refused) == "awaiting_approval"  # the turn waits
    return asked


def _decided_once(approving: Approving, decision: str, decided_by: str, im_status: str) -> dict[str, Any]:
    """The decision reached the engine once, the turn runs again, the buttons are grey, the notification read."""
    approving.settle()
    approving.turns.janitor({}, FakeLambdaContext())
    approving.settle()
    assert approving.turns.turns() == []
    (told,) = approving.turns.decisions
    assert (told["decision"], told["decided_by"], told["turn_id"]) == (decision, decided_by, approving.turn_id)
    logged = types(approving.turns.events(ASKED))
    assert logged.count("approval.decided") == 1 and logged[-2:] == ["approval.decided", "turn.resumed"]
    (update,) = approving.im("im_confirm_update")
    assert update["status"] == im_status
    assert count(approving.turns.api, ASKED) == 0 and items(approving.turns.api, ASKED)[0]["is_read"] is True
    assert approving.turns.post(ASKED, "next").json()["data"]["delivery"] == "queued"  # the turn runs again
    return told


def test_an_accepted_approval_resumes_the_turn_and_the_engine_hears_it_once(
    approving: Approving, pushes: InMemoryPusher
) -> None:
    asked = _requested(approving)
    accepted = accept(approving.turns.api, asked["confirm_id"], user=ASKED)
    assert accepted.status_code == 200 and accepted.json()["data"]["status"] == "accepted"
    told = _decided_once(approving, "approved", ASKED, "accepted")
    assert told["approval_id"] == "ap-1" and told["reason"] == ""
    counts = [m["unreadCount"] for m in messages_to(pushes, "mine-1") if m["type"] == "inbox_updated"]
    assert counts[-2:] == [1, 0]  # the count was pushed up, then down when it was decided
    again = accept(approving.turns.api, asked["confirm_id"], user=ASKED, command="again")
    assert again.status_code == 200  # the same action again: the same answer, nothing decided twice
    approving.settle()
    assert len(approving.turns.decisions) == 1


def test_a_rejection_carries_its_reason_to_the_engine(approving: Approving) -> None:
    asked = _requested(approving)
    assert reject(approving.turns.api, asked["confirm_id"], user=ASKED).status_code == 200
    told = _decided_once(approving, "rejected", ASKED, "rejected")
    assert told["reason"] == "no"


def test_an_approval_past_its_time_expires_by_the_janitor(approving: Approving, api: TestClient) -> None:
    clock: FakeClock = controlled_clock()
    asked = _requested(approving)
    clock.advance(86_400_000 + 1)
    load_function("confirms_janitor").handler({"source": "aws.events"}, FakeLambdaContext())
    _decided_once(approving, "expired", "herald", "expired")
    late = accept(approving.turns.api, asked["confirm_id"], user=ASKED)
    assert late.status_code == 409 and late.json()["data"]["reason"] == "expired"


def test_the_engines_cancel_decides_it_and_a_click_after_it_is_refused(approving: Approving) -> None:
    asked = _requested(approving)
    cancelled = approving.cancel()
    assert cancelled.status_code == 200 and cancelled.json()["data"]["status"] == "cancelled"
    assert approving.cancel().json()["data"] == cancelled.json()["data"]  # a repeat: the same answer
    late = accept(approving.turns.api, asked["confirm_id"], user=ASKED)
    assert late.status_code == 409 and late.json()["data"]["reason"] == "cancelled"
    _decided_once(approving, "cancelled", "engine", "cancelled")


def test_finishing_a_turn_that_waits_abandons_its_approval(approving: Approving) -> None:
    asked = _requested(approving)
    assert approving.turns.step(approving.turn_id).json()["data"]["state"] == "idle"
    approving.settle()
    assert approving.turns.turns() == []  # nothing waited for a next turn
    (told,) = approving.turns.decisions
    assert told["decision"] == "cancelled"
    assert [u["status"] for u in approving.im("im_confirm_update")] == ["cancelled"]
    assert count(approving.turns.api, ASKED) == 0
    late = accept(approving.turns.api, asked["confirm_id"], user=ASKED)
    assert late.status_code == 409 and late.json()["data"]["reason"] == "cancelled"


def test_the_same_request_again_is_the_same_answer_and_another_body_is_refused(approving: Approving) -> None:
    first = approving.ask()
    assert approving.ask() == first
    reused = approving.request(text="something else")
    assert reused.status_code == 409 and reason(reused) == "approval_id_reused"
    second = approving.request("ap-2")
    assert second.status_code == 409 and reason(second) == "approval_pending"
    approving.settle()
    assert len(approving.im("im_confirm")) == 1 and count(approving.turns.api, ASKED) == 1


@pytest.mark.parametrize(
    ("body", "status", "why"),
    [
        ({"user_id": "10009"}, 403, "user_not_a_member"),
        ({"user_id": VIEWER}, 403, "user_role_not_allowed"),
        ({"user_id": "alice"}, 400, None),
        ({"text": "   "}, 400, None),
        ({"expire_in_s": 10}, 400, None),
        ({"actions": [{"action": "accept", "label": "Yes"}, {"action": "accept", "label": "Sure"}]}, 400, None),
        ({"actions": [{"action": "explode", "label": "Boom"}]}, 400, None),
        ({"app_code": "other"}, 403, None),
    ],
)
def test_a_refused_request_changes_nothing(
    approving: Approving, body: dict[str, Any], status: int, why: str | None
) -> None:
    before = approving.turns.events(ASKED)
    refused = approving.request(**body)
    assert refused.status_code == status, refused.text
    if why is not None:
        assert reason(refused) == why
    assert approving.turns.events(ASKED) == before
    approving.settle()
    assert approving.im("im_confirm") == [] and items(approving.turns.api, ASKED) == []


def test_only_the_current_running_turn_may_ask(approving: Approving) -> None:
    stale = approving.request(turn_id="turn_0123456789abcdef0123456789abcdef")
    assert stale.status_code == 409 and reason(stale) == "turn_not_current"
    assert approving.turns.step(approving.turn_id, "suspend").status_code == 200
    suspended = approving.request()
    assert suspended.status_code == 409 and reason(suspended) == "turn_not_running"


def test_another_service_may_not_ask_cancel_or_learn_of_an_approval(approving: Approving, service_keys: Any) -> None:
    approving.ask()
    key, _ = service_keys.create_key("another-engine", ["/internal/v1/sessions"])
    approving.turns.engine = {"Authorization": f"Bearer {key}"}
    for response in (approving.request("ap-9"), approving.cancel()):
        assert response.status_code == 403 and reason(response) == "session_of_another_service"


def test_a_manual_resume_of_a_turn_waiting_for_an_approval_is_refused(approving: Approving) -> None:
    approving.ask()
    resumed = approving.turns.step(approving.turn_id, "resume")
    assert resumed.status_code == 409 and reason(resumed) == "approval_pending"


def test_a_user_whose_id_is_the_agents_name_is_no_party_to_its_approvals(approving: Approving) -> None:
    """The agent's name is only the IM account the question comes from: a user called `po` learns nothing of it."""
    confirm_id = approving.ask()["confirm_id"]
    namesake = member("po")
    api = approving.turns.api
    statuses = api.post("/api/v1/message/action-confirms/status", json={"confirm_ids": [confirm_id]}, headers=namesake)
    assert statuses.status_code == 200 and statuses.json()["data"]["items"] == []
    listed = api.get("/api/v1/message/action-confirms", params={"peer_user_id": ASKED}, headers=namesake)
    assert listed.status_code == 200 and listed.json()["data"]["items"] == []
    acted = api.post(f"/api/v1/message/action-confirms/{confirm_id}/accept", json={"command_id": "x"}, headers=namesake)
    assert acted.status_code == 404
    mine = api.post("/api/v1/message/action-confirms/status", json={"confirm_ids": [confirm_id]}, headers=member(ASKED))
    assert [c["confirm_id"] for c in mine.json()["data"]["items"]] == [confirm_id]
