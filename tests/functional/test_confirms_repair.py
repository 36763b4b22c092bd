"""Crash windows, leases and expiry: whatever stops half-way is repaired from the owner's fact, with no
second business effect and exactly one update push."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient

from herald.auth.models import Principal
from herald.confirms.models import Action
from herald.confirms.role_invitation import RoleInvitationBusiness
from herald.confirms.wiring import confirms, deliveries
from herald_dev.fakes.tencent_im import FakeTencentIm
from tests.functional.test_confirms_flow import (
    TARGET,
    accept,
    created,
    grants,
    invitation_item,
    invite,
    stored_confirms,
)
from tests.support.aws import load_function
from tests.support.clock import FakeClock, controlled_clock
from tests.support.container import reconfigure
from tests.support.lambda_context import FakeLambdaContext
from tests.support.pipeline import ConfirmPipeline
from tests.support.waiting import eventually

LEASE_MS = 1500


class SimulatedCrash(BaseException):
    """The process dies here: nothing after this line runs, no handler catches it."""


@pytest.fixture
def api(pipeline: ConfirmPipeline, monkeypatch: pytest.MonkeyPatch) -> TestClient:
    from herald.api.app import create_app

    reconfigure(confirm_lease_ms=LEASE_MS)
    return TestClient(create_app())


@pytest.fixture
def clock(api: TestClient) -> FakeClock:
    """Herald's clock, moved by the test (after `api` settled the settings)."""
    return controlled_clock()


def drain_after_its_backoff(pipeline: ConfirmPipeline) -> None:
    """The push the IM sender handed back comes round again once its backoff ends (seconds): run it then."""

    def came_back() -> None:
        assert pipeline.pump_queue() >= 1

    eventually(came_back, timeout=15)
    pipeline.drain()


def crash_before_owner(original: Callable[..., Any]) -> Callable[..., Any]:
    def act(self: RoleInvitationBusiness, *args: Any) -> Any:
        raise SimulatedCrash

    return act


def crash_after_owner(original: Callable[..., Any]) -> Callable[..., Any]:
    def act(self: RoleInvitationBusiness, *args: Any) -> Any:
        original(self, *args)
        raise SimulatedCrash

    return act


def run_janitor() -> None:
    load_function("confirms_janitor").handler({"source": "aws.events"}, FakeLambdaContext())


def next_request(api: TestClient, confirm_id: str) -> None:
    response = accept(api, confirm_id, command="retry-after-crash")
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("window", [crash_before_owner, crash_after_owner], ids=["after-claim", "after-owner"])
@pytest.mark.parametrize("repair", ["next-request", "janitor"])
def test_a_crash_in_either_window_is_repaired_to_one_consistent_outcome(
    api: TestClient,
    clock: FakeClock,
    pipeline: ConfirmPipeline,
    fake_im: FakeTencentIm,
    monkeypatch: pytest.MonkeyPatch,
    window: Callable[[Callable[..., Any]], Callable[..., Any]],
    repair: str,
) -> None:
    invitation, confirm_id = created(api, pipeline, fake_im)
    with monkeypatch.context() as patch:
        patch.setattr(RoleInvitationBusiness, "act", window(RoleInvitationBusiness.act))
        with pytest.raises(SimulatedCrash):
            confirms().act(Principal(TARGET, "lalu"), confirm_id, Action.ACCEPT, "first-click")
    assert stored_confirms()[0]["status"]["S"] == "processing"
    early = accept(api, confirm_id, command="impatient")
    assert early.status_code == 409 and early.json()["data"]["reason"] == "processing"  # the lease still holds
    clock.advance(LEASE_MS + 1)
    if repair == "janitor":
        run_janitor()
    else:
        next_request(api, confirm_id)
    (confirm,) = stored_confirms()
    assert confirm["status"]["S"] == "accepted" and confirm["processed_action"]["S"] == "accept"
    assert "due_at_ms" not in confirm  # closed: the janitor will not look at it again
    owner = invitation_item(invitation["invitation_id"])
    assert owner["status"]["S"] == "accepted" and owner["version"]["N"] == "2"  # exactly one owner transition
    assert len(grants()) == 1
    pipeline.drain()
    updates = [m["data"]["status"] for m in fake_im.messages if m["data"]["type"] == "im_confirm_update"]
    assert updates == ["accepted"]
    assert accept(api, confirm_id, command="later").json()["data"]["status"] == "accepted"


@pytest.fixture
def short_lived_api(pipeline: ConfirmPipeline, monkeypatch: pytest.MonkeyPatch) -> TestClient:
    """Confirms (and their invitations) that expire after one second."""
    from herald.api.app import create_app

    reconfigure(confirm_ttl_seconds=1)
    return TestClient(create_app())


@pytest.fixture
def short_lived_clock(short_lived_api: TestClient) -> FakeClock:
    return controlled_clock()


def test_expired_confirm_refuses_action_and_expires_its_invitation(
    short_lived_api: TestClient, short_lived_clock: FakeClock, pipeline: ConfirmPipeline, fake_im: FakeTencentIm
) -> None:
    api = short_lived_api
    invitation, confirm_id = created(api, pipeline, fake_im)
    short_lived_clock.advance(1_001)
    refused = accept(api, confirm_id)
    assert refused.status_code == 409 and refused.json()["data"]["reason"] == "expired"
    assert stored_confirms()[0]["status"]["S"] == "expired"
    assert invitation_item(invitation["invitation_id"])["status"]["S"] == "expired"
    assert grants() == []
    pipeline.drain()
    assert [m["data"]["status"] for m in fake_im.messages] == ["pending", "expired"]


def test_janitor_expires_confirms_nobody_touched(
    short_lived_api: TestClient, short_lived_clock: FakeClock, pipeline: ConfirmPipeline, fake_im: FakeTencentIm
) -> None:
    invitation, _ = created(short_lived_api, pipeline, fake_im)
    run_janitor()
    assert stored_confirms()[0]["status"]["S"] == "pending"  # not yet due
    short_lived_clock.advance(1_001)
    run_janitor()
    assert stored_confirms()[0]["status"]["S"] == "expired"
    assert invitation_item(invitation["invitation_id"])["status"]["S"] == "expired"


def test_a_crash_after_tencent_accepted_a_push_is_settled_from_its_history_not_sent_again(
    api: TestClient, pipeline: ConfirmPipeline, fake_im: FakeTencentIm, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tencent got the message and the sender died before recording it. The retry sees the call that never
    recorded an outcome, finds the message by its MsgRandom in the pair's history and records it as sent."""
    from herald.confirms.dynamo import DynamoDeliveryStore

    original = DynamoDeliveryStore.sent
    calls: list[int] = []

    def sent_then_crash(self: DynamoDeliveryStore, *args: Any) -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("crashed before recording the send")
        original(self, *args)

    monkeypatch.setattr(DynamoDeliveryStore, "sent", sent_then_crash)
    invite(api, "bd")
    pipeline.drain()
    drain_after_its_backoff(pipeline)
    assert len(fake_im.messages) == 1 and len(calls) == 2
    (delivery,) = deliveries().for_confirm("lalu", fake_im.messages[0]["data"]["confirm_id"])
    assert delivery.status == "sent" and delivery.msg_key == fake_im.messages[0]["msg_key"]
    assert delivery.sending_since_ms == 0


def test_a_send_that_never_reached_tencent_is_sent_on_retry_after_the_history_check(
    api: TestClient, pipeline: ConfirmPipeline, fake_im: FakeTencentIm
) -> None:
    """No answer (a 502) and nothing in the history: the retry sends, once."""
    fake_im.queue_faults({"status": 502})
    invite(api, "bd")
    pipeline.drain()
    drain_after_its_backoff(pipeline)
    assert [m["data"]["type"] for m in fake_im.messages] == ["im_confirm"]


def test_a_push_whose_lost_send_is_older_than_tencents_history_is_dead_lettered_not_sent_again(
    api: TestClient, pipeline: ConfirmPipeline, fake_im: FakeTencentIm, clock: FakeClock
) -> None:
    """Tencent keeps C2C history 7 days (Herald's `tencent_im_history_days`), and MsgRandom only deduplicates
    within the same second: a push whose earlier send went unanswered longer ago than that cannot be
    settled from history, so it is not sent again (it might arrive twice); it is dead-lettered with why."""
    import boto3

    fake_im.queue_faults({"status": 502})  # no answer: Tencent may or may not have it
    invite(api, "bd")
    pipeline.pump_streams()
    pipeline.pump_queue()
    clock.advance(7 * 86_400_000 + 1)  # the push comes back (a redrive) after Tencent's history has moved on
    drain_after_its_backoff(pipeline)
    assert fake_im.messages == []  # never sent a second time
    dlq = pipeline.stack.resolve({"Ref": "ImPushDeadLetters"})
    (dead,) = boto3.client("sqs").receive_message(QueueUrl=dlq, MessageAttributeNames=["All"])["Messages"]
    assert "history no longer reaches back" in dead["MessageAttributes"]["failure_reason"]["StringValue"]
