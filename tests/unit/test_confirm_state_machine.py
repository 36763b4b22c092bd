"""Issue 50, item 4: the confirms state machine driven by Hypothesis through random interleavings of clicks (the
receiver's and a stranger's, repeated, racing one another between a read and its write), lost replies, an owner
that times out before or after carrying an action out, the clock passing leases and expiry, and the janitor.
After every step: a confirm is decided once and never changes its mind, and what it says is the owner's truth."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from herald.auth.models import Principal
from herald.confirms.businesses import BusinessRegistry, OwnerSilent
from herald.confirms.models import Action, Confirm, ConfirmStatus, OwnerFact, OwnerState
from herald.confirms.service import Confirms
from herald.errors import HeraldError
from tests.support.fakes import InMemoryConfirmStore

RECEIVER, STRANGER = Principal("10002", "lalu"), Principal("10009", "lalu")
CONFIRM_IDS = ["cfm_" + c * 32 for c in "abc"]
LEASE_MS, EXPIRE_AT_MS = 20_000, 100_000
STATE_OF = {Action.ACCEPT: OwnerState.ACCEPTED, Action.REJECT: OwnerState.REJECTED}


class Owner:
    """The business owner, the source of truth: the first action it carries out (or its expiry) stands. It may
    time out before or after carrying one out, as a real owner's call does."""

    business_type = "role_invitation"

    def __init__(self) -> None:
        self.state: dict[str, OwnerState] = {}
        self.fault: str | None = None  # "before" or "after": the next call times out then

    def _timeout(self, when: str) -> None:
        if self.fault == when:
            self.fault = None
            raise OwnerSilent("the owner did not answer in time")

    def act(self, confirm: Confirm, action: Action, reason: str) -> OwnerFact:
        self._timeout("before")
        self.state.setdefault(confirm.business_id, STATE_OF[action])
        self._timeout("after")
        return OwnerFact(self.state[confirm.business_id], 7)

    def fact(self, confirm: Confirm) -> OwnerFact:
        self._timeout("before")
        return OwnerFact(self.state.get(confirm.business_id, OwnerState.PENDING), 7)

    def expire(self, confirm: Confirm) -> OwnerFact:
        self._timeout("before")
        self.state.setdefault(confirm.business_id, OwnerState.EXPIRED)
        return OwnerFact(self.state[confirm.business_id], 7)


def pending(confirm_id: str) -> Confirm:
    return Confirm(
        app_code="lalu",
        confirm_id=confirm_id,
        business_type="role_invitation",
        business_subtype="host",
        business_id="inv_" + confirm_id[4:],
        sender_user_id="10001",
        receiver_user_id=RECEIVER.user_id,
        status=ConfirmStatus.PENDING,
        message_text="join us",
        source_name="role_invitations",
        source_event_id="inv_" + confirm_id[4:],
        created_at_ms=1,
        updated_at_ms=1,
        expire_at_ms=EXPIRE_AT_MS,
        version=1,
    )


clicks = st.tuples(st.sampled_from(CONFIRM_IDS), st.sampled_from([RECEIVER, STRANGER]), st.sampled_from(Action))


class ConfirmMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = 1_000
        self.owner = Owner()
        self.store = InMemoryConfirmStore()
        self.confirms = Confirms(self.store, BusinessRegistry([self.owner]), LEASE_MS, clock=lambda: self.now)
        for confirm_id in CONFIRM_IDS:
            self.store.create(pending(confirm_id))
        self.decided: dict[str, ConfirmStatus] = {}  # what each confirm first said it was, terminally
        self.answered: dict[str, ConfirmStatus] = {}  # what a click was told its confirm became

    def _click(self, click: tuple[str, Principal, Action], command: str, alone: bool = False) -> None:
        """`alone`: no other click races it; then the receiver's click on a pending confirm, its owner
        answering and its time not up, decides it (a lost reply is no reason to refuse it)."""
        confirm_id, principal, action = click
        before = self.store.get("lalu", confirm_id)
        must_decide = (
            alone
            and principal is RECEIVER
            and self.owner.fault is None
            and before is not None
            and before.status is ConfirmStatus.PENDING
            and self.now < EXPIRE_AT_MS
        )
        try:
            confirm = self.confirms.act(principal, confirm_id, action, command, reason="why not")
        except (HeraldError, OwnerSilent) as refused:
            assert not must_decide, f"the receiver's click on a pending confirm was refused: {refused!r}"
            return
        assert principal is RECEIVER, "only the receiver may act"
        assert confirm.status.terminal
        self.answered.setdefault(confirm_id, confirm.status)
        assert self.answered[confirm_id] is confirm.status, "two clicks were told different outcomes"

    @rule(click=clicks, command=st.sampled_from(["cmd-1", "cmd-2"]))
    def click(self, click: tuple[str, Principal, Action], command: str) -> None:
        self._click(click, command, alone=True)

    @rule(click=clicks, racing=clicks)
    def click_raced_between_its_read_and_write(
        self, click: tuple[str, Principal, Action], racing: tuple[str, Principal, Action]
    ) -> None:
        self.store.before_commit.append(lambda: self._click(racing, "cmd-race"))
        self._click(click, "cmd-1")
        self.store.before_commit.clear()

    @rule(click=clicks)
    def click_whose_write_reply_is_lost(self, click: tuple[str, Principal, Action]) -> None:
        self.store.lost_replies = 1
        self._click(click, "cmd-lost", alone=True)
        self.store.lost_replies = 0

    @rule(when=st.sampled_from(["before", "after"]))
    def owner_times_out_next(self, when: str) -> None:
        self.owner.fault = when

    @rule(ms=st.sampled_from([1_000, LEASE_MS + 1, EXPIRE_AT_MS]))
    def time_passes(self, ms: int) -> None:
        self.now += ms

    @rule()
    def janitor(self) -> None:
        self.confirms.settle_due()

    @invariant()
    def a_confirm_is_decided_once_and_says_what_the_owner_did(self) -> None:
        for confirm_id in CONFIRM_IDS:
            confirm = self.store.get("lalu", confirm_id)
            assert confirm is not None
            if not confirm.status.terminal:
                continue
            first = self.decided.setdefault(confirm_id, confirm.status)
            assert confirm.status is first, f"{confirm_id} was {first}, now {confirm.status}"
            assert str(self.owner.state[confirm.business_id]) == str(confirm.status), "not the owner's truth"
            assert self.answered.get(confirm_id, confirm.status) is confirm.status

    @invariant()
    def nobody_but_the_receiver_ever_decided(self) -> None:
        for confirm_id in CONFIRM_IDS:
            confirm = self.store.get("lalu", confirm_id)
            assert confirm is not None and confirm.processed_by_user_id in ("", RECEIVER.user_id)


ConfirmMachine.TestCase.settings = settings(
    max_examples=150, stateful_step_count=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_a_confirm_is_decided_once_whatever_the_interleaving = ConfirmMachine.TestCase
