"""A lane that keeps waiting (its service over its part of a shared app, its pace, a retry's backoff) is never
dead-lettered for it: after FRESH_MESSAGE_AFTER_RECEIVES receives of one message, the worker hands the lane a fresh
message and lets the old one go, well before the events queue's maxReceiveCount."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from herald_ops.template import load_template

from herald.events import handlers
from herald.events.drained import Drained, DrainResult
from herald.events.nudges import Nudge
from herald.events.policy import DispatchPolicy
from herald.holds.service import Holds
from herald.workers import QueueMessage, RetryLater, from_queue
from tests.support.aws import load_function
from tests.support.fakes import InMemoryHoldStore
from tests.support.lambda_context import FakeLambdaContext

REPO = Path(__file__).resolve().parents[2]


class Waiting:
    def drain(self, lane: str, remaining_ms: object) -> Drained:
        return Drained(DrainResult.WAITING, 3_500, "job svc:2 waits for Feishu's pace", "t1")


class OverItsPart:
    def drain(self, lane: str, remaining_ms: object) -> Drained:
        reason = "job svc:2 waits for its part of Feishu app cli_x"
        return Drained(DrainResult.WAITING, 250, reason, "t1", True, DispatchPolicy().over_part_first_back_ms)


class PacedOut:
    def drain(self, lane: str, remaining_ms: object) -> Drained:
        reason = "job svc:2 waits 1100 ms for Feishu's pace"
        return Drained(DrainResult.WAITING, 100, reason, "t1", crowded=True)


def message(receives: int) -> QueueMessage:
    body = json.dumps({"v": 1, "lane": "svc", "seq": 2, "why": "new"})
    return QueueMessage("m-1", body, "svc", "receipt", receives, 0)


@pytest.fixture
def queues(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Nudge]]:
    """What each queue was sent: the events (dispatch) queue, and the waiting queue of lanes crowded out."""
    sent: dict[str, list[Nudge]] = {"events": [], "waiting": []}

    class Queue:
        def __init__(self, name: str) -> None:
            self.name = name

        def publish(self, nudge: Nudge) -> None:
            sent[self.name].append(nudge)

    def queue(name: str) -> Callable[[], Queue]:
        return lambda: Queue(name)

    for name in ("dispatcher", "new_work_dispatcher"):
        monkeypatch.setattr(handlers, name, Waiting)
    monkeypatch.setattr(handlers, "dispatch_queue", queue("events"))
    monkeypatch.setattr(handlers, "waiting_queue", queue("waiting"))
    monkeypatch.setattr(handlers, "count_for_tenant", lambda name, tenant: None)
    nothing_paused = Holds(InMemoryHoldStore(), lambda *message: None)
    monkeypatch.setattr(handlers, "holds", lambda: nothing_paused)
    return sent


@pytest.fixture
def published(queues: dict[str, list[Nudge]]) -> list[Nudge]:
    return queues["events"]


def test_a_waiting_lane_keeps_its_message_hidden_for_the_wait_while_its_receives_are_few(
    published: list[Nudge],
) -> None:
    with pytest.raises(RetryLater) as later:
        handlers.on_dispatch(message(handlers.FRESH_MESSAGE_AFTER_RECEIVES - 1), lambda: 60_000)
    assert later.value.delay_s == pytest.approx(3.5) and published == []


def test_a_lane_that_kept_waiting_gets_a_fresh_message_before_the_queue_would_dead_letter_it(
    published: list[Nudge],
) -> None:
    handlers.on_dispatch(message(handlers.FRESH_MESSAGE_AFTER_RECEIVES), lambda: 60_000)  # no RetryLater: let go
    assert [(nudge.lane, nudge.why) for nudge in published] == [("svc", "waits-on-m-1")]
    redrive = load_template(REPO / "template.yaml")["Resources"]["EventsQueue"]["Properties"]["RedrivePolicy"]
    assert int(redrive["maxReceiveCount"]) > handlers.FRESH_MESSAGE_AFTER_RECEIVES


def test_a_lane_crowded_out_in_the_events_queue_moves_to_the_waiting_queue_and_lets_its_message_go(
    queues: dict[str, list[Nudge]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 47, item 2 (d), as measured: 80 lanes of one partner crowded out of their shared app came back to the
    events queue again and again, and the other partner's first card waited 45-55 s behind them (SQS hands out a
    FIFO queue's groups oldest first). A lane crowded out there moves to the waiting queue: new work finds a worker
    at once."""
    for crowded in (OverItsPart, PacedOut):
        monkeypatch.setattr(handlers, "new_work_dispatcher", crowded)
        handlers.on_dispatch(message(1), lambda: 60_000)  # no RetryLater: this message is done with
    assert [(nudge.lane, nudge.why) for nudge in queues["waiting"]] == [("svc", "crowded-m-1")] * 2
    assert queues["events"] == []


def test_a_lane_waiting_for_its_own_retry_stays_in_the_events_queue(queues: dict[str, list[Nudge]]) -> None:
    with pytest.raises(RetryLater):
        handlers.on_dispatch(message(1), lambda: 60_000)
    assert queues == {"events": [], "waiting": []}


def test_a_lane_that_kept_waiting_in_the_waiting_queue_gets_its_fresh_message_there(
    queues: dict[str, list[Nudge]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(handlers, "dispatcher", PacedOut)
    handlers.on_dispatch(message(handlers.FRESH_MESSAGE_AFTER_RECEIVES), lambda: 60_000, waiting=True)
    assert [(nudge.lane, nudge.why) for nudge in queues["waiting"]] == [("svc", "waits-on-m-1")]
    redrive = load_template(REPO / "template.yaml")["Resources"]["EventsWaitingQueue"]["Properties"]["RedrivePolicy"]
    assert int(redrive["maxReceiveCount"]) > handlers.FRESH_MESSAGE_AFTER_RECEIVES


@pytest.mark.parametrize(("receives", "least_s"), [(1, 3.0), (2, 4.5), (3, 6.75), (6, 20.0), (19, 20.0)])
def test_a_lane_that_keeps_coming_back_over_its_part_stays_away_longer_each_time_up_to_twenty_seconds(
    published: list[Nudge], monkeypatch: pytest.MonkeyPatch, receives: int, least_s: float
) -> None:
    """Issue 47, item 2 (d): in the waiting queue, a backlog's 80 lanes over their part, each back every 3-4 s, would
    take the workers in turn; each comes back half as late again each time, spread over a second so they do not come
    back together."""
    monkeypatch.setattr(handlers, "dispatcher", OverItsPart)
    with pytest.raises(RetryLater) as later:
        handlers.on_dispatch(message(receives), lambda: 60_000, waiting=True)
    assert least_s <= later.value.delay_s < least_s + 1 and published == []


@pytest.mark.parametrize("receives", [1, 12])
def test_a_lane_waiting_for_its_apps_next_moment_in_the_waiting_queue_comes_back_for_it_not_later_each_time(
    queues: dict[str, list[Nudge]], monkeypatch: pytest.MonkeyPatch, receives: int
) -> None:
    """A lane within its part waits for its moment only: growing its wait would slow the partner the fair share
    makes room for (measured: the other partner's 20 cards took 30 s instead of 10)."""
    monkeypatch.setattr(handlers, "dispatcher", PacedOut)
    with pytest.raises(RetryLater) as later:
        handlers.on_dispatch(message(receives), lambda: 60_000, waiting=True)
    assert later.value.delay_s == pytest.approx(0.1) and queues == {"events": [], "waiting": []}


def test_the_events_worker_knows_the_waiting_queues_batches_by_their_source_arn() -> None:
    waiting = "https://sqs.us-east-1.amazonaws.com/123456789012/t-EventsWaitingQueue.fifo"
    arn = "arn:aws:sqs:us-east-1:123456789012:t-{}.fifo"
    assert from_queue({"Records": [{"eventSourceARN": arn.format("EventsWaitingQueue")}]}, waiting)
    assert not from_queue({"Records": [{"eventSourceARN": arn.format("EventsQueue")}]}, waiting)
    assert not from_queue({"Records": []}, waiting) and not from_queue({}, waiting)


@pytest.mark.parametrize("queue", ["EventsQueue", "EventsWaitingQueue"])
def test_the_events_worker_drains_a_batchs_lanes_side_by_side_from_either_queue(
    monkeypatch: pytest.MonkeyPatch, queue: str
) -> None:
    """A backlog's lanes, each moved on in a moment, pass through ten a receive: with one lane a receive, another
    partner's new lane behind 400 of them waited 15-22 s for a worker. Each lane waits at a barrier only lanes
    drained at once can pass; the mapping hands the worker that many lanes a receive."""
    worker = load_function("events_worker")
    lanes = ["svc-a", "svc-b", "svc-c"]
    meeting = threading.Barrier(len(lanes), timeout=5)
    drained: list[tuple[str, bool]] = []

    def on_dispatch(record: QueueMessage, remaining_ms: Callable[[], int], waiting: bool) -> None:
        meeting.wait()
        drained.append((record.group_id, waiting))

    monkeypatch.setattr(worker, "on_dispatch", on_dispatch)
    source = f"arn:aws:sqs:us-east-1:123456789012:test-{queue}.fifo"
    attributes = {"ApproximateReceiveCount": "1", "SentTimestamp": "0"}
    records = [
        {"messageId": f"m-{lane}", "receiptHandle": f"rh-{lane}", "body": "{}", "eventSourceARN": source,
         "attributes": {**attributes, "MessageGroupId": lane}}
        for lane in lanes
    ]  # fmt: skip
    assert worker.handler({"Records": records}, FakeLambdaContext()) == {"batchItemFailures": []}
    assert sorted(drained) == [(lane, queue == "EventsWaitingQueue") for lane in lanes]
    events = load_template(REPO / "template.yaml")["Resources"]["EventsWorkerFunction"]["Properties"]["Events"]
    mapping = next(e["Properties"] for e in events.values() if e["Properties"]["Queue"]["Fn::GetAtt"][0] == queue)
    assert mapping["BatchSize"] == 10
