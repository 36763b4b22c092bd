"""The turn queue under races, crashes and restarts, in process on moto: what was accepted is delivered
exactly once or cancelled, never both, and a fresh process with only DynamoDB state finishes the job."""

from __future__ import annotations

import random
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
import pytest

from herald.container import current
from herald.turns.models import SessionStatus, Turn, turn_text
from herald.turns.wiring import turn_store
from tests.support.aws import load_event
from tests.support.container import reconfigure
from tests.support.lambda_context import FakeLambdaContext
from tests.support.turns import TurnsHarness

ROUNDS = 8


def started(turns: TurnsHarness, session_id: str) -> str:
    assert turns.session(session_id=session_id).status_code == 200
    assert turns.post("alice", "start", session_id=session_id).json()["data"]["delivery"] == "started"
    (turn,) = turns.next_turns()
    return str(turn["turn_id"])


def race_cancels_against_finish(turns: TurnsHarness, session_id: str, rng: random.Random) -> None:
    turn_id = started(turns, session_id)
    texts = [f"{session_id} m{n}" for n in range(6)]
    ids = [turns.post("alice", text, session_id=session_id).json()["data"]["message_id"] for text in texts]
    victims = rng.sample(ids, 3)
    go = threading.Barrier(len(victims) + 1)

    def cancel(message_id: str) -> int:
        go.wait()
        return turns.cancel("alice", message_id, session_id=session_id).status_code

    def finish() -> int:
        go.wait()
        return turns.step(turn_id, session_id=session_id).status_code

    with ThreadPoolExecutor(max_workers=len(victims) + 1) as pool:
        finishing = pool.submit(finish)
        cancels = dict(zip(victims, pool.map(cancel, victims), strict=True))
    assert finishing.result() == 200
    assert set(cancels.values()) <= {200, 409}
    cancelled = {message_id for message_id, status in cancels.items() if status == 200}
    (turn,) = turns.next_turns()
    delivered = set(turn["message_ids"])
    assert delivered.isdisjoint(cancelled), "a message was both delivered and cancelled"
    assert delivered | cancelled == set(ids), "a message was neither delivered nor cancelled"
    assert turn["message_ids"] == [i for i in ids if i in delivered]  # in the order they were sent
    assert turn["text"] == turn_text([t for t, i in zip(texts, ids, strict=True) if i in delivered])
    logged = [e for e in turns.events(session_id=session_id) if e["type"] == "chat.message_cancelled"]
    assert {e["data"]["message_id"] for e in logged} == cancelled


def test_cancel_racing_finish_leaves_every_message_delivered_xor_cancelled_and_the_text_matches(
    turns: TurnsHarness,
) -> None:
    rng = random.Random(7)
    for round_ in range(ROUNDS):
        race_cancels_against_finish(turns, f"race{round_}", rng)


def race_posts_against_finish(turns: TurnsHarness, session_id: str) -> None:
    turn_id = started(turns, session_id)
    go = threading.Barrier(5)

    def post(n: int) -> dict[str, Any]:
        go.wait()
        response = turns.post("alice", f"p{n}", session_id=session_id)
        assert response.status_code == 202, response.text
        return response.json()["data"]  # type: ignore[no-any-return]

    def finish() -> None:
        go.wait()
        assert turns.step(turn_id, session_id=session_id).status_code == 200

    with ThreadPoolExecutor(max_workers=5) as pool:
        finishing = pool.submit(finish)
        posted = list(pool.map(post, range(4)))
        finishing.result()
    read: list[str] = []
    for _ in range(3):  # run the engine until nothing is left
        for turn in turns.next_turns():
            read.extend(turn["message_ids"])
            turns.step(turn["turn_id"], session_id=session_id)
    assert sorted(read) == sorted(p["message_id"] for p in posted)
    assert len(read) == len(set(read))


def test_messages_racing_a_finish_each_arrive_in_exactly_one_turn(turns: TurnsHarness) -> None:
    for round_ in range(ROUNDS // 2):
        race_posts_against_finish(turns, f"posts{round_}")


def test_outbox_died_after_the_finish_commit_a_fresh_process_hands_the_turn_over(
    turns: TurnsHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    turn_id = started(turns, "s1")
    ids = [turns.post("alice", f"m{n}", session_id="s1").json()["data"]["message_id"] for n in range(3)]
    turns.step(turn_id)
    turns.stream.read()  # the outbox never ran: its records are gone (it gave up, or died before sending)
    assert turns.turns() == []

    reconfigure(turns_janitor_grace_seconds=0)  # a fresh process: nothing in memory, only DynamoDB
    assert turns.janitor({}, FakeLambdaContext()) == {"redispatched": 1, "delivered": 0, "told": 0}
    (turn,) = turns.turns()
    assert turn["message_ids"] == ids
    assert turns.janitor({}, FakeLambdaContext()) == {
        "redispatched": 0,
        "delivered": 0,
        "told": 0,
    }  # recorded as handed over


def test_janitor_leaves_turns_the_outbox_is_still_within_its_grace_for(turns: TurnsHarness) -> None:
    started(turns, "s1")
    turns.post("alice", "waits", session_id="s1")
    assert turns.janitor({}, FakeLambdaContext()) == {"redispatched": 0, "delivered": 0, "told": 0}


def test_outbox_crash_between_sending_and_recording_sends_once_within_the_dedup_window(turns: TurnsHarness) -> None:
    assert turns.session().status_code == 200
    turns.post("alice", "hello")
    records = turns.stream.read()
    store = turn_store()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(store, "mark_dispatched", _crash)
        result = turns.outbox({"Records": records}, FakeLambdaContext())
    assert len(result["batchItemFailures"]) == 1  # reported: Lambda retries from it
    assert turns.outbox({"Records": records}, FakeLambdaContext()) == {"batchItemFailures": []}
    (turn,) = turns.turns()  # the FIFO deduplication id (the turn id) dropped the second send
    assert turn["text"] == "hello"
    assert not store.agent("lalu", "s1", "po").undispatched


def test_a_repeated_stream_record_does_not_send_a_turn_again(turns: TurnsHarness) -> None:
    assert turns.session().status_code == 200
    turns.post("alice", "hello")
    records = turns.stream.read()
    turns.outbox({"Records": records}, FakeLambdaContext())
    assert len(turns.turns()) == 1
    turns.outbox({"Records": records}, FakeLambdaContext())
    turns.post("alice", "queued while it runs")
    turns.pump()
    assert turns.turns() == []


def test_reopen_that_died_before_delivering_is_finished_by_the_janitor(
    turns: TurnsHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    turn_id = started(turns, "s1")
    waiting = turns.post("alice", "frozen", session_id="s1").json()["data"]["message_id"]
    turns.session(status="ended")
    turns.step(turn_id)
    store = turn_store()
    store.put_session("lalu", "s1", {"alice": "developer"}, ["po"], SessionStatus.ACTIVE, "agent-engine")
    # ... and the process died before delivering. A fresh one:
    reconfigure(turns_janitor_grace_seconds=0)
    assert turns.janitor({}, FakeLambdaContext()) == {"redispatched": 0, "delivered": 1, "told": 0}
    (turn,) = turns.next_turns()
    assert turn["message_ids"] == [waiting]
    assert turns.janitor({}, FakeLambdaContext()) == {"redispatched": 0, "delivered": 0, "told": 0}


def test_engine_may_read_a_turn_from_its_queue_message_alone(turns: TurnsHarness) -> None:
    assert turns.session().status_code == 200
    turns.post("alice", "hello", lang="pt")
    (message,) = turns.next_turns()
    assert message.pop("type") == "turn"
    assert Turn.from_message(message).to_message() == message
    assert set(message) == {"app_code", "session_id", "agent", "turn_id", "text", "lang", "message_ids"}


def _crash(*args: Any) -> None:
    raise RuntimeError("the outbox died after sending")


def test_outbox_hands_over_the_turn_of_the_sample_stream_event(turns: TurnsHarness) -> None:
    event = load_event("turns_outbox/turn_started.json")
    record = event["Records"][0]  # type: ignore[index]
    boto3.client("dynamodb").put_item(TableName=current().settings.turns_table, Item=record["dynamodb"]["NewImage"])
    assert turns.outbox(event, FakeLambdaContext()) == {"batchItemFailures": []}
    (turn,) = turns.turns()
    assert turn["message_ids"] == ["msg_00000000000000000000000000000001", "msg_00000000000000000000000000000002"]
    assert not turn_store().agent("lalu", "s1", "po").undispatched
