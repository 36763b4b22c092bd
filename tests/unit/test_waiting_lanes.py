"""A lane that keeps waiting (its service over its part of a shared app, its pace, a retry's backoff) is never
dead-lettered for it: after FRESH_MESSAGE_AFTER_RECEIVES receives of one message, the worker hands the lane a fresh
message and lets the old one go, well before the events queue's maxReceiveCount."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from herald_ops.template import load_template

from herald.events import handlers
from herald.events.drained import Drained, DrainResult
from herald.events.nudges import Nudge
from herald.workers import QueueMessage, RetryLater

REPO = Path(__file__).resolve().parents[2]


class Waiting:
    def drain(self, lane: str, remaining_ms: object) -> Drained:
        return Drained(DrainResult.WAITING, 3_500, "job svc:2 waits for its part of Feishu app cli_x", "t1")


def message(receives: int) -> QueueMessage:
    body = json.dumps({"v": 1, "lane": "svc", "seq": 2, "why": "new"})
    return QueueMessage("m-1", body, "svc", "receipt", receives, 0)


@pytest.fixture
def published(monkeypatch: pytest.MonkeyPatch) -> list[Nudge]:
    sent: list[Nudge] = []

    class Queue:
        def publish(self, nudge: Nudge) -> None:
            sent.append(nudge)

    monkeypatch.setattr(handlers, "dispatcher", Waiting)
    monkeypatch.setattr(handlers, "dispatch_queue", Queue)
    monkeypatch.setattr(handlers, "count_for_tenant", lambda name, tenant: None)
    return sent


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
