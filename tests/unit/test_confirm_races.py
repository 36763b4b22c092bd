"""Races of a confirm, as deterministic sequences: the in-memory store runs the competing click between one
click's read and its write, so each interleaving is a plain, repeatable test."""

from __future__ import annotations

import pytest

from herald.auth.models import Principal
from herald.confirms.businesses import BusinessRegistry
from herald.confirms.models import Action, Confirm, ConfirmStatus, OwnerFact, OwnerState
from herald.confirms.service import Confirms
from herald.errors import Conflict
from tests.support.fakes import InMemoryConfirmStore

RECEIVER = Principal("10002", "lalu")
CONFIRM_ID = "cfm_" + "a" * 32


class Owner:
    """The business owner: records each action it is asked to carry out (it must be asked once)."""

    business_type = "role_invitation"

    def __init__(self) -> None:
        self.asked: list[str] = []

    def act(self, confirm: Confirm, action: Action, reason: str) -> OwnerFact:
        self.asked.append(str(action))
        return OwnerFact(OwnerState.ACCEPTED if action is Action.ACCEPT else OwnerState.REJECTED, 5)

    def fact(self, confirm: Confirm) -> OwnerFact:
        return OwnerFact(OwnerState.PENDING)

    def expire(self, confirm: Confirm) -> OwnerFact:
        return OwnerFact(OwnerState.EXPIRED)


@pytest.fixture
def store() -> InMemoryConfirmStore:
    store = InMemoryConfirmStore()
    store.create(
        Confirm(
            app_code="lalu",
            confirm_id=CONFIRM_ID,
            business_type="role_invitation",
            business_subtype="host",
            business_id="inv_" + "b" * 32,
            sender_user_id="10001",
            receiver_user_id="10002",
            status=ConfirmStatus.PENDING,
            message_text="join us",
            source_name="role_invitations",
            source_event_id="inv_" + "b" * 32,
            created_at_ms=1,
            updated_at_ms=1,
            expire_at_ms=10**12,
            version=1,
        )
    )
    return store


@pytest.fixture
def owner() -> Owner:
    return Owner()


@pytest.fixture
def confirms(store: InMemoryConfirmStore, owner: Owner) -> Confirms:
    return Confirms(store, BusinessRegistry([owner]), lease_ms=20_000, clock=lambda: 100)


def test_the_same_click_twice_at_once_asks_the_owner_once_and_both_see_accepted(
    confirms: Confirms, store: InMemoryConfirmStore, owner: Owner
) -> None:
    """The second click reads pending, the first claims and finishes between its read and its write."""
    first: list[Confirm] = []
    store.before_commit.append(lambda: first.append(confirms.act(RECEIVER, CONFIRM_ID, Action.ACCEPT, "cmd-1")))
    second = confirms.act(RECEIVER, CONFIRM_ID, Action.ACCEPT, "cmd-2")
    assert owner.asked == ["accept"]
    assert first[0].status is ConfirmStatus.ACCEPTED and second.status is ConfirmStatus.ACCEPTED


def test_accept_and_reject_at_once_the_owner_carries_out_only_the_first_and_the_other_is_refused(
    confirms: Confirms, store: InMemoryConfirmStore, owner: Owner
) -> None:
    rejected: list[Confirm] = []
    store.before_commit.append(
        lambda: rejected.append(confirms.act(RECEIVER, CONFIRM_ID, Action.REJECT, "cmd-r", "not now"))
    )
    with pytest.raises(Conflict) as refused:
        confirms.act(RECEIVER, CONFIRM_ID, Action.ACCEPT, "cmd-a")
    assert refused.value.reason == "rejected"
    assert owner.asked == ["reject"] and rejected[0].status is ConfirmStatus.REJECTED


def test_a_claim_whose_reply_was_lost_is_recognised_as_this_clicks_own_and_finished(
    confirms: Confirms, store: InMemoryConfirmStore, owner: Owner
) -> None:
    """Issue 50: the claim (pending -> processing) landed, its reply was lost and the SDK's retry met its own
    condition. The stored lock is the one this very click wrote: it goes on, never a 409 `processing`."""
    store.lost_replies = 1
    accepted = confirms.act(RECEIVER, CONFIRM_ID, Action.ACCEPT, "cmd-1")
    assert accepted.status is ConfirmStatus.ACCEPTED and owner.asked == ["accept"]


class DiesOnce(Owner):
    """An owner whose first call never returns to Herald (the function timed out after the claim)."""

    def __init__(self) -> None:
        super().__init__()
        self.reasons: list[str] = []

    def act(self, confirm: Confirm, action: Action, reason: str) -> OwnerFact:
        self.reasons.append(reason)
        if len(self.reasons) == 1:
            raise TimeoutError("the invocation ended after the claim")
        return super().act(confirm, action, reason)


def test_a_claim_repaired_after_its_lease_gives_the_owner_the_receivers_reason(store: InMemoryConfirmStore) -> None:
    owner, now = DiesOnce(), [100]
    confirms = Confirms(store, BusinessRegistry([owner]), lease_ms=20_000, clock=lambda: now[0])
    with pytest.raises(TimeoutError):
        confirms.act(RECEIVER, CONFIRM_ID, Action.REJECT, "cmd-1", reason="not this week")
    now[0] += 20_001  # the lease ran out: the janitor repairs it
    (repaired,) = [confirms.settle(c) for c in store.due(now[0], 10)]
    assert repaired.status is ConfirmStatus.REJECTED
    assert owner.reasons == ["not this week", "not this week"]  # the repair kept the receiver's reason
