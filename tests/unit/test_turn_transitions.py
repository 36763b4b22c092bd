"""An agent's turn state machine (TURN_TRANSITIONS), walked as a diagram, and held at the one commit."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from herald.turns.models import TURN_TRANSITIONS, AgentTurns, Change, Session, SessionStatus, TurnState
from herald.turns.service import TurnService


def reachable_from(start: TurnState) -> set[TurnState]:
    seen, frontier = {start}, [start]
    while frontier:
        for following in TURN_TRANSITIONS[frontier.pop()]:
            if following not in seen:
                seen.add(following)
                frontier.append(following)
    return seen


def test_every_state_is_reachable_from_idle_and_leads_back_to_it() -> None:
    assert reachable_from(TurnState.IDLE) == set(TurnState)
    assert all(TurnState.IDLE in reachable_from(state) for state in TurnState)


def test_a_suspended_turn_takes_no_new_turn_before_it_resumes_or_finishes() -> None:
    assert TURN_TRANSITIONS[TurnState.SUSPENDED] == {TurnState.RUNNING, TurnState.IDLE}
    assert TURN_TRANSITIONS[TurnState.IDLE] == {TurnState.RUNNING}


class RecordingStore:
    """Only what `_commit` touches: the commits it was asked for."""

    def __init__(self) -> None:
        self.commits: list[Change] = []

    def commit(self, change: Change, at_ms: int) -> list[Any]:
        self.commits.append(change)
        return []


SESSION = Session("s1", "lalu", {"10001": "owner"}, ("bot",), SessionStatus.ACTIVE, 1, 0, "engine")


@pytest.mark.parametrize(("before", "after"), [(b, a) for b in TurnState for a in TurnState])
def test_a_commit_moves_the_turn_only_along_the_diagram(before: TurnState, after: TurnState) -> None:
    store = RecordingStore()
    service = TurnService(store, queue=None, clock=lambda: 1)  # type: ignore[arg-type]
    turns = AgentTurns("lalu", "s1", "bot", state=before, version=1)
    change = Change(SESSION, turns, replace(turns, state=after), ())
    if after is before or after in TURN_TRANSITIONS[before]:
        service.commit(change)
        assert store.commits == [change]
    else:
        with pytest.raises(RuntimeError, match="cannot go from"):
            service.commit(change)
        assert store.commits == []
