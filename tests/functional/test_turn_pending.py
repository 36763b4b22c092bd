"""Issue 51, item 3, on moto through the routes: the engine takes the messages waiting for the agent into its running
turn at a step boundary (`POST .../turns/{turn_id}/pending`): merged as a turn merges them, delivered in the log with
the turn id, no longer cancellable, and never delivered again when the turn ends."""

from __future__ import annotations

from typing import Any

import pytest

from tests.functional.test_turns import queue, reason, start_turn, types
from tests.support.turns import TurnsHarness


@pytest.fixture
def session(turns: TurnsHarness) -> TurnsHarness:
    assert turns.session().status_code == 200
    return turns


def take(session: TurnsHarness, turn_id: str) -> Any:
    return session.step(turn_id, "pending")


def test_the_engine_takes_what_waits_merged_and_the_turns_end_delivers_none_of_it_again(session: TurnsHarness) -> None:
    turn_id = start_turn(session)
    first, second = queue(session, "one", lang="en"), queue(session, "two", user="bob", lang="pt")
    taken = take(session, turn_id)
    assert taken.status_code == 200, taken.text
    data = taken.json()["data"]
    assert data["turn_id"] == turn_id and data["message_ids"] == [first["message_id"], second["message_id"]]
    assert data["lang"] == "pt" and "one" in data["text"] and "two" in data["text"]
    delivered = [e["data"] for e in session.events() if e["type"] == "chat.message_delivered"][-1]
    assert delivered["turn_id"] == turn_id and delivered["message_ids"] == data["message_ids"]
    cancelled = session.cancel("alice", first["message_id"])
    assert cancelled.status_code == 409 and reason(cancelled) == "message_not_in_queue"
    assert session.step(turn_id).json()["data"]["state"] == "idle"  # nothing waits: no next turn
    assert session.next_turns() == []


def test_nothing_waiting_is_a_200_with_none_and_changes_nothing(session: TurnsHarness) -> None:
    turn_id = start_turn(session)
    before = session.events()
    taken = take(session, turn_id)
    assert taken.status_code == 200
    assert taken.json()["data"] == {"turn_id": turn_id, "message_ids": [], "text": None, "lang": None}
    assert session.events() == before


def test_a_turn_not_current_or_suspended_takes_nothing_and_says_why(session: TurnsHarness) -> None:
    turn_id = start_turn(session)
    queue(session, "waits")
    stale = take(session, "turn_unknown")
    assert stale.status_code == 409 and reason(stale) == "turn_not_current"
    assert session.step(turn_id, "suspend").status_code == 200
    suspended = take(session, turn_id)
    assert suspended.status_code == 409 and reason(suspended) == "turn_not_running"
    assert types(session.events()).count("chat.message_delivered") == 1  # the first turn's only
