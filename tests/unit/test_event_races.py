"""Races of external-event delivery, as deterministic sequences: the in-memory job store runs a competing
decision just before a chosen read or write of another, so each interleaving is a plain, repeatable test."""

from __future__ import annotations

import pytest

from herald.events.apps import OneApp
from herald.events.dispatch import EventDispatcher
from herald.events.drained import DrainResult
from herald.events.jobs import JobStatus, StaleJob
from herald.events.models import Card, ExternalEvent
from herald.events.policy import HELD_LOOK_AGAIN_MS, DispatchPolicy
from herald.events.service import EventIntake
from tests.support.clock import FakeClock
from tests.support.fakes import AdmitAll, FixedTargets, InMemoryJobStore, PartnerKey

TARGET = {"receive_id": "oc_1", "receive_id_type": "chat_id"}
LEASE_MS = 60_000


def event(event_id: str, title: str) -> ExternalEvent:
    data = {"title": title, "status": "running", "summary": "", "target": TARGET}
    return ExternalEvent.from_content(event_id, {"event_type": "job.progress", "data": data})


class Feishu:
    """Records each card it is asked to send."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    app_id = "cli_stack"

    def tenant_access_token(self) -> str:
        return "token"

    def send_card(self, receive_id_type: str, receive_id: str, card: Card, uuid: str) -> str:
        self.sent.append(card.title)
        return f"om_{len(self.sent)}"

    def update_card(self, message_id: str, card: Card) -> None:
        self.sent.append(f"update {card.title}")


@pytest.fixture
def store() -> InMemoryJobStore:
    return InMemoryJobStore()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(1_000_000)


@pytest.fixture
def feishu() -> Feishu:
    return Feishu()


@pytest.fixture
def intake(store: InMemoryJobStore, clock: FakeClock) -> EventIntake:
    return EventIntake(store, AdmitAll(), clock)


def dispatcher(store: InMemoryJobStore, feishu: Feishu, clock: FakeClock) -> EventDispatcher:
    policy = DispatchPolicy(lease_ms=LEASE_MS, reserve_ms=0)
    return EventDispatcher(
        store, FixedTargets(frozenset({"chat_id:oc_1"})), OneApp(feishu), policy, nudge=lambda nudge: None, clock=clock
    )


def forever() -> int:
    return 10**9


def test_an_event_stored_between_the_dispatchers_two_reads_is_delivered_in_the_same_drain(
    store: InMemoryJobStore, feishu: Feishu, clock: FakeClock, intake: EventIntake
) -> None:
    """The drain finds no job 1, then the intake commits job 1 before the drain reads the head."""
    store.before["head"] = [lambda: intake.accept(PartnerKey("svc", frozenset({"chat_id:oc_1"})), event("e1", "one"))]
    assert dispatcher(store, feishu, clock).drain("svc", forever).result is DrainResult.CAUGHT_UP
    assert feishu.sent == ["one"] and store.heads["svc"].done_seq == 1


def test_a_worker_whose_lease_ran_out_loses_the_job_to_the_next_and_the_card_is_sent_once(
    store: InMemoryJobStore, feishu: Feishu, clock: FakeClock, intake: EventIntake
) -> None:
    """Worker A claims the job and stalls before its mark; its lease runs out; worker B takes the job over and
    delivers it; then A wakes up: its mark is refused, so it never sends."""
    intake.accept(PartnerKey("svc", frozenset({"chat_id:oc_1"})), event("e1", "one"))
    worker_b = dispatcher(store, feishu, clock)

    def stall_then_b_takes_over() -> None:
        clock.advance(LEASE_MS + 1)
        assert worker_b.drain("svc", forever).result is DrainResult.CAUGHT_UP

    store.before["mark"] = [stall_then_b_takes_over]
    with pytest.raises(StaleJob):
        dispatcher(store, feishu, clock).drain("svc", forever)
    assert feishu.sent == ["one"]
    (job,) = store.jobs.values()
    assert job.status is JobStatus.SUCCEEDED and job.attempts == 2


def test_a_worker_inside_its_lease_is_not_taken_over(
    store: InMemoryJobStore, feishu: Feishu, clock: FakeClock, intake: EventIntake
) -> None:
    """Worker B comes while A's lease holds: it waits, and A delivers. B's message comes back in a couple of seconds,
    not at the lease's end: hidden for the lease (60 s), it held back every message behind it in its lane's FIFO
    group, A's own continuations too (delivery_at_limits (d): B's second card 27 s after its first)."""

    intake.accept(PartnerKey("svc", frozenset({"chat_id:oc_1"})), event("e1", "one"))
    waited: list[int] = []

    def b_comes_too_early() -> None:
        held = dispatcher(store, feishu, clock).drain("svc", forever)
        assert held.result is DrainResult.WAITING
        waited.append(held.retry_in_ms)

    store.before["mark"] = [b_comes_too_early]
    assert dispatcher(store, feishu, clock).drain("svc", forever).result is DrainResult.CAUGHT_UP
    assert feishu.sent == ["one"] and waited == [HELD_LOOK_AGAIN_MS]


def test_an_operator_resolution_racing_a_requeue_applies_once(
    store: InMemoryJobStore, feishu: Feishu, clock: FakeClock, intake: EventIntake
) -> None:
    """Two operators resolve the same blocked job at once: the second read it blocked, the first changed it."""
    from herald.errors import Conflict
    from herald.events.operations import EventOperations

    intake.accept(PartnerKey("svc", frozenset({"chat_id:oc_1"})), event("e1", "one"))
    job = store.jobs[("svc", 1)]
    running = store.commit(job, job.claimed("a1", clock() + LEASE_MS), clock())
    store.commit(running, running.failed("refused", clock(), None), clock())
    operations = EventOperations(store, DispatchPolicy(), clock)
    store.before["resolve"] = [lambda: operations.skip("svc:1", by="alice")]
    with pytest.raises(Conflict) as refused:
        operations.requeue("svc:1", by="bob")
    assert refused.value.reason == "job_changed"
    resolved = store.jobs[("svc", 1)]
    assert resolved.status is JobStatus.SKIPPED and [r["by"] for r in resolved.resolutions] == ["alice"]
