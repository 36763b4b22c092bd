"""An approval's one decision on the real engine (moto's server, or DynamoDB Local when HERALD_TEST_DYNAMODB=local):
the turns and confirms tables' conditional writes and transactions, with the expiry on a controlled clock. A click,
a second device, the expiry and the engine's cancel, each pair at once from two threads, round after round: one
decision recorded and logged each time, and the confirm shows that one.

The tables are the template's, under another stack's name, so that no worker of the local cloud consumes them."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from herald_ops.template import StackTemplate

from herald.auth.models import Principal
from herald.confirms.approvals.business import AgentApprovalBusiness, draft_for
from herald.confirms.businesses import BusinessRegistry
from herald.confirms.dynamo import DynamoConfirmStore
from herald.confirms.models import Action, ConfirmStatus
from herald.confirms.service import Confirms
from herald.errors import Conflict
from herald.turns.approvals import ApprovalAsk, Approvals
from herald.turns.dynamo import DynamoTurnStore
from herald.turns.models import ApprovalButton, ApprovalStatus, SessionStatus
from herald.turns.ports import EngineCaller
from herald.turns.service import TurnService
from herald_dev.provision import create_table
from tests.support.aws import REPO
from tests.support.clock import FakeClock
from tests.support.local_cloud import LocalCloudProcess
from tests.unit.test_turn_races import Queue

pytestmark = pytest.mark.integration

ENGINE = EngineCaller("engine", "lalu")
MEMBER = Principal("10001", "lalu")
BUTTONS = (ApprovalButton("reject", "Reject", "secondary"), ApprovalButton("accept", "Approve", "primary"))
EXPIRE_S = 60
ROUNDS = 4
RIVALS_DECISION = {"expiry": "expired", "cancel": "cancelled", "second device": "rejected"}


class World:
    """Herald's services on the engine's tables; `late` is a process (the janitor) whose clock reads 2 ms later."""

    def __init__(self, cloud: LocalCloudProcess, turns_table: str, confirms_table: str) -> None:
        client = cloud.client("dynamodb")
        self.store = DynamoTurnStore(turns_table, client)
        self.confirm_store = DynamoConfirmStore(confirms_table, client)
        self.clock = FakeClock(1_800_000_000_000)
        self.turns = TurnService(self.store, Queue(), clock=self.clock)
        self.approvals = Approvals(self.turns, self.store, clock=self.clock)
        self.confirms = self._confirms(self.clock)
        self.late = self._confirms(lambda: self.clock.now + 2)  # 1 ms past the expiry when `clock` is 1 ms before

    def _confirms(self, clock: Callable[[], int]) -> Confirms:
        approvals = Approvals(self.turns, self.store, clock=clock)
        return Confirms(self.confirm_store, BusinessRegistry([AgentApprovalBusiness(approvals)]), 20_000, clock=clock)

    def asked(self) -> tuple[str, str, str]:
        """A new session whose agent's turn asked the member: (session, turn, confirm id)."""
        session = f"s-{secrets.token_hex(4)}"
        self.turns.put_session(ENGINE, session, {MEMBER.user_id: "developer"}, ["bot"], SessionStatus.ACTIVE)
        self.turns.post(MEMBER, session, "bot", "ship it", None)
        turn_id = str(self.store.agent("lalu", session, "bot").turn_id)
        ask = ApprovalAsk("ap-1", MEMBER.user_id, "Ship?", BUTTONS, EXPIRE_S)
        approval = self.approvals.request(ENGINE, session, "bot", turn_id, ask)
        self.confirms.project(draft_for(approval))
        self.clock.now = approval.expire_at_ms - 1  # the click comes at the last moment; the janitor's pass just after
        return session, turn_id, approval.confirm_id

    def decisions(self, session: str) -> list[str]:
        events = self.store.events("lalu", session, 0, 100)
        return [str(e.data["decision"]) for e in events if e.type == "approval.decided"]


@pytest.fixture(scope="module")
def world(cloud: LocalCloudProcess) -> World:
    stack = StackTemplate.from_file(REPO / "template.yaml", stack_name="approval-races")
    for table in ("TurnsTable", "ConfirmsTable"):
        create_table(stack, table, cloud.client("dynamodb"))
    return World(cloud, stack.physical_name("TurnsTable"), stack.physical_name("ConfirmsTable"))


def _quietly(call: Callable[[], Any]) -> Callable[[], str]:
    """The call, its loss (a 409) said by its reason."""

    def run() -> str:
        try:
            call()
        except Conflict as lost:
            return str(lost.reason)
        return "won"

    return run


def _one_decision(world: World, session: str, confirm_id: str) -> str:
    (decision,) = world.decisions(session)
    approval = world.approvals.stored("lalu", session, "ap-1")
    confirm = world.confirm_store.get("lalu", confirm_id)
    assert confirm is not None and str(approval.status) == decision
    expected = {"approved": ConfirmStatus.ACCEPTED, "rejected": ConfirmStatus.REJECTED}.get(decision)
    assert confirm.status is (expected or ConfirmStatus(decision)), (decision, confirm.status)
    return decision


@pytest.mark.parametrize("rival", ["expiry", "cancel", "second device"])
def test_a_click_and_its_rival_at_once_decide_once_on_the_real_engine(world: World, rival: str) -> None:
    """Whoever wins, the one decision is the winner's, and the other hears it lost (a 409's reason)."""
    for _ in range(ROUNDS):
        session, turn_id, confirm_id = world.asked()
        click = _quietly(lambda: world.confirms.act(MEMBER, confirm_id, Action.ACCEPT, "phone"))  # noqa: B023
        rivals: dict[str, Callable[[], object]] = {
            "expiry": world.late.settle_due,
            "cancel": lambda: world.approvals.cancel(ENGINE, session, "bot", turn_id, "ap-1"),  # noqa: B023
            "second device": lambda: world.confirms.act(MEMBER, confirm_id, Action.REJECT, "desktop"),  # noqa: B023
        }
        with ThreadPoolExecutor(max_workers=2) as race:
            answers = [race.submit(click), race.submit(_quietly(rivals[rival]))]
        clicked, rivalled = (answer.result() for answer in answers)
        decision = _one_decision(world, session, confirm_id)
        assert decision in ("approved", RIVALS_DECISION[rival]), decision
        if decision == "approved":
            assert clicked == "won" and (rival == "expiry" or rivalled != "won"), (clicked, rivalled)
        else:
            assert clicked != "won" and rivalled == "won", (clicked, rivalled)


def test_an_approval_past_its_time_is_expired_by_the_janitor_and_a_late_click_is_told_so(world: World) -> None:
    session, _, confirm_id = world.asked()
    assert world.confirms.settle_due().settled == []  # not yet
    assert world.late.settle_due().settled  # the janitor's pass, once the time is past
    assert _one_decision(world, session, confirm_id) == "expired"
    with pytest.raises(Conflict) as late:
        world.late.act(MEMBER, confirm_id, Action.ACCEPT, "late")
    assert late.value.reason == "expired"
    assert world.approvals.stored("lalu", session, "ap-1").status is ApprovalStatus.EXPIRED
