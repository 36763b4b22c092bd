"""Races of the turn queue, as deterministic sequences: the in-memory store runs a competing decision
between one decision's reads and its commit (both orders of each pair), so every interleaving is tested."""

from __future__ import annotations

from typing import Any

import pytest

from herald.auth.models import Principal
from herald.errors import Conflict
from herald.turns.models import SessionStatus, TurnState
from herald.turns.ports import EngineCaller
from herald.turns.service import TurnService
from tests.support.fakes import InMemoryTurnStore

ENGINE = EngineCaller("engine", "lalu")
ALICE = Principal("10001", "lalu")


class Queue:
    """The engine's queue, recorded: the turns handed over and the approvals' decisions told."""

    def __init__(self) -> None:
        self.turns: list[Any] = []
        self.told: list[Any] = []

    def publish(self, turn: Any) -> None:
        self.turns.append(turn)

    def tell(self, approval: Any) -> None:
        self.told.append(approval)


@pytest.fixture
def store() -> InMemoryTurnStore:
    return InMemoryTurnStore()


@pytest.fixture
def turns(store: InMemoryTurnStore) -> TurnService:
    ticks = iter(range(1_000, 10**9, 10))
    service = TurnService(store, Queue(), clock=lambda: next(ticks))
    service.put_session(ENGINE, "s1", {"10001": "developer"}, ["bot"], SessionStatus.ACTIVE)
    return service


def running_with_one_waiting(turns: TurnService, store: InMemoryTurnStore) -> tuple[str, str]:
    """The agent runs a turn; one message of Alice's waits. (turn id, waiting message id)"""
    turns.post(ALICE, "s1", "bot", "first", None)
    waiting = turns.post(ALICE, "s1", "bot", "second", None).message_id
    return str(store.agent("lalu", "s1", "bot").turn_id), waiting


def test_a_cancel_decided_before_the_finish_commits_first_so_the_next_turn_never_sees_the_message(
    turns: TurnService, store: InMemoryTurnStore
) -> None:
    turn_id, waiting = running_with_one_waiting(turns, store)
    store.before_commit.append(lambda: turns.cancel(ALICE, "s1", "bot", waiting))
    after = turns.finish(ENGINE, "s1", "bot", turn_id)  # read the queue, lost the race, decided again
    assert after.state is TurnState.IDLE and after.queue == () and after.turn is None


def test_a_finish_that_commits_first_delivers_the_message_and_the_cancel_is_refused(
    turns: TurnService, store: InMemoryTurnStore
) -> None:
    turn_id, waiting = running_with_one_waiting(turns, store)
    store.before_commit.append(lambda: turns.finish(ENGINE, "s1", "bot", turn_id))
    with pytest.raises(Conflict) as refused:
        turns.cancel(ALICE, "s1", "bot", waiting)  # read it waiting, lost the race, read it delivered
    assert refused.value.reason == "message_not_in_queue"
    current = store.agent("lalu", "s1", "bot")
    assert current.state is TurnState.RUNNING and current.turn is not None
    assert current.turn.message_ids == (waiting,)


def test_two_messages_racing_a_finish_each_arrive_in_exactly_one_turn(
    turns: TurnService, store: InMemoryTurnStore
) -> None:
    turn_id, waiting = running_with_one_waiting(turns, store)
    late: list[str] = []
    store.before_commit.append(lambda: late.append(turns.post(ALICE, "s1", "bot", "third", None).message_id))
    turns.finish(ENGINE, "s1", "bot", turn_id)
    current = store.agent("lalu", "s1", "bot")
    assert current.turn is not None and current.turn.message_ids == (waiting, *late) and current.queue == ()


def test_a_cancel_committed_before_the_take_leaves_the_message_cancelled_and_the_take_without_it(
    turns: TurnService, store: InMemoryTurnStore
) -> None:
    """Issue 51, item 3: the engine's take read the message waiting; the sender's cancel committed first."""
    turn_id, waiting = running_with_one_waiting(turns, store)
    store.before_commit.append(lambda: turns.cancel(ALICE, "s1", "bot", waiting))
    assert turns.take_waiting(ENGINE, "s1", "bot", turn_id) == ()  # read again: nothing waits any more
    assert [e.type for e in store.log[("lalu", "s1")]][-1] == "chat.message_cancelled"


def test_a_take_committed_before_the_cancel_delivers_the_message_and_the_cancel_is_refused(
    turns: TurnService, store: InMemoryTurnStore
) -> None:
    turn_id, waiting = running_with_one_waiting(turns, store)
    taken: list[Any] = []
    store.before_commit.append(lambda: taken.extend(turns.take_waiting(ENGINE, "s1", "bot", turn_id)))
    with pytest.raises(Conflict) as refused:
        turns.cancel(ALICE, "s1", "bot", waiting)
    assert refused.value.reason == "message_not_in_queue"
    assert [m.message_id for m in taken] == [waiting] and store.agent("lalu", "s1", "bot").queue == ()
    turns.finish(ENGINE, "s1", "bot", turn_id)
    assert store.agent("lalu", "s1", "bot").turn is None  # what was taken is not delivered again at the end
