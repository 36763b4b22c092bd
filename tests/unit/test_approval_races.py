"""Races of an approval's decision, as deterministic sequences on the in-memory stores: a competing decision runs
between one decision's reads and its commit (both orders of each pair). Whatever wins, exactly one decision is
recorded and logged, the confirm shows that one, and the loser hears the confirm's usual 409."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from herald.auth.models import Principal
from herald.confirms.approvals.business import AgentApprovalBusiness, ApprovalProjection, draft_for
from herald.confirms.businesses import BusinessRegistry
from herald.confirms.models import Action, ConfirmStatus
from herald.confirms.service import Confirms
from herald.errors import Conflict
from herald.turns.approvals import EXPIRY, ApprovalAsk, Approvals
from herald.turns.models import Approval, ApprovalButton, ApprovalStatus, SessionStatus, TurnState
from herald.turns.ports import EngineCaller
from herald.turns.service import TurnService
from tests.support.clock import FakeClock
from tests.support.fakes import InMemoryConfirmStore, InMemoryTurnStore
from tests.unit.test_turn_races import Queue

ENGINE = EngineCaller("engine", "lalu")
MEMBER = Principal("10001", "lalu")
BUTTONS = (ApprovalButton("reject", "Reject", "secondary"), ApprovalButton("accept", "Approve", "primary"))


class Approving:
    def __init__(self) -> None:
        self.clock = FakeClock(1_000_000)
        self.store, self.confirm_store, self.queue = InMemoryTurnStore(), InMemoryConfirmStore(), Queue()
        self.turns = TurnService(self.store, self.queue, clock=self.clock)
        self.approvals = Approvals(self.turns, self.store, clock=self.clock)
        registry = BusinessRegistry([AgentApprovalBusiness(self.approvals)])
        self.confirms = Confirms(self.confirm_store, registry, lease_ms=20_000, clock=self.clock)
        self.turns.put_session(ENGINE, "s1", {"10001": "developer"}, ["bot"], SessionStatus.ACTIVE)
        self.turns.post(MEMBER, "s1", "bot", "deploy it", None)
        self.turn_id = str(self.store.agent("lalu", "s1", "bot").turn_id)
        asked = self.approvals.request(
            ENGINE, "s1", "bot", self.turn_id, ApprovalAsk("ap-1", "10001", "Go?", BUTTONS, 60)
        )
        self.confirm_id = asked.confirm_id
        self.confirms.project(draft_for(asked))

    def click(self, action: Action = Action.ACCEPT, command: str = "click-1") -> Any:
        return self.confirms.act(MEMBER, self.confirm_id, action, command, reason="")

    def cancel(self) -> Approval:
        return self.approvals.cancel(ENGINE, "s1", "bot", self.turn_id, "ap-1")

    def expire(self) -> Any:
        self.clock.advance(60_001)
        return self.confirms.settle_due()

    @property
    def approval(self) -> Approval:
        return self.approvals.stored("lalu", "s1", "ap-1")

    def decisions(self) -> list[dict[str, Any]]:
        return [dict(e.data) for e in self.store.log[("lalu", "s1")] if e.type == "approval.decided"]


@pytest.fixture
def approving() -> Approving:
    return Approving()


def _refused(call: Callable[[], object], reason: str) -> None:
    with pytest.raises(Conflict) as refused:
        call()
    assert refused.value.reason == reason


def _one_decision(approving: Approving, status: ApprovalStatus, confirm: ConfirmStatus) -> None:
    assert approving.approval.status is status
    (decided,) = approving.decisions()
    assert decided["decision"] == str(status)
    stored = approving.confirm_store.get("lalu", approving.confirm_id)
    assert stored is not None and stored.status is confirm


def test_a_cancel_committed_inside_a_clicks_decision_wins_and_the_click_hears_409(approving: Approving) -> None:
    approving.store.before_commit.append(approving.cancel)
    _refused(approving.click, "cancelled")
    _one_decision(approving, ApprovalStatus.CANCELLED, ConfirmStatus.CANCELLED)


def test_a_click_committed_inside_the_engines_cancel_wins_and_the_cancel_hears_409(approving: Approving) -> None:
    approving.store.before_commit.append(approving.click)
    _refused(approving.cancel, "approval_approved")
    _one_decision(approving, ApprovalStatus.APPROVED, ConfirmStatus.ACCEPTED)
    assert approving.store.agent("lalu", "s1", "bot").state is TurnState.RUNNING


def test_an_expiry_committed_inside_a_clicks_decision_wins_and_the_click_hears_409(approving: Approving) -> None:
    def expire_meanwhile() -> None:
        approving.clock.advance(60_001)
        approving.approvals.decide("lalu", "s1", "ap-1", ApprovalStatus.EXPIRED, EXPIRY)

    approving.store.before_commit.append(expire_meanwhile)
    _refused(approving.click, "expired")
    _one_decision(approving, ApprovalStatus.EXPIRED, ConfirmStatus.EXPIRED)


def test_a_click_committed_inside_the_expirys_decision_wins_and_the_janitor_records_it(approving: Approving) -> None:
    def click_just_in_time() -> None:
        """Another process, whose clock read a moment before the expiry, clicks."""
        approving.clock.advance(-2)
        approving.click()
        approving.clock.advance(2)

    approving.store.before_commit.append(click_just_in_time)
    janitor = approving.expire()
    assert [c.status for c in janitor.settled] == [ConfirmStatus.ACCEPTED]
    _one_decision(approving, ApprovalStatus.APPROVED, ConfirmStatus.ACCEPTED)


def test_a_second_device_clicking_while_the_first_decides_is_told_it_is_processing(approving: Approving) -> None:
    approving.store.before_commit.append(
        lambda: _refused(lambda: approving.click(Action.REJECT, "other-device"), "processing")
    )
    assert approving.click().status is ConfirmStatus.ACCEPTED
    _refused(lambda: approving.click(Action.REJECT, "other-device"), "accepted")
    _one_decision(approving, ApprovalStatus.APPROVED, ConfirmStatus.ACCEPTED)


def test_the_decision_is_told_once_however_often_the_outbox_and_janitor_run(approving: Approving) -> None:
    approving.click()
    assert approving.turns.tell(approving.approval) is True
    assert approving.turns.tell(approving.approval) is False
    assert approving.turns.repair(grace_ms=0).told == 0
    assert [a.approval_id for a in approving.queue.told] == ["ap-1"]


def test_a_decision_the_outbox_never_told_is_told_by_the_janitor(approving: Approving) -> None:
    approving.cancel()
    assert approving.turns.repair(grace_ms=0).told == 1
    assert approving.turns.repair(grace_ms=0).told == 0
    assert [a.status for a in approving.queue.told] == [ApprovalStatus.CANCELLED]


def test_a_retried_request_whose_answer_was_lost_finds_its_own_approval(approving: Approving) -> None:
    again = approving.approvals.request(
        ENGINE, "s1", "bot", approving.turn_id, ApprovalAsk("ap-1", "10001", "Go?", BUTTONS, 60)
    )
    assert again.confirm_id == approving.confirm_id and again.pending
    assert len([e for e in approving.store.log[("lalu", "s1")] if e.type == "approval.requested"]) == 1


def test_the_projection_reads_the_notification_only_after_the_decision(approving: Approving) -> None:
    class Inbox:
        def __init__(self) -> None:
            self.calls: list[str] = []

        def record(self, incoming: Any) -> None:
            self.calls.append(f"record {incoming.kind}")

        def resolve(self, *key: Any) -> bool:
            self.calls.append(f"resolve {key[3]}")
            return True

    inbox = Inbox()
    projection = ApprovalProjection(approving.confirms, inbox)  # type: ignore[arg-type]
    projection.project(approving.approval)
    approving.cancel()
    projection.project(approving.approval)
    assert inbox.calls == ["record APPROVAL_PENDING", "resolve APPROVAL_PENDING"]
    stored = approving.confirm_store.get("lalu", approving.confirm_id)
    assert stored is not None and stored.status is ConfirmStatus.CANCELLED
