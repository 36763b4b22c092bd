"""Issue 48: a disabled tenant's deliveries are held, not retried. A worker takes the message off its queue into the
holds table (no receive spent, nothing dead-lettered however long the hold lasts), and `enable` puts every held
message back on its queue at once, in the order held. A hold that raced an `enable` is released by its own worker."""

from __future__ import annotations

import functools

import pytest

from herald.errors import NotFound
from herald.holds.models import Held, HeldQueue, Pause
from herald.holds.service import Holds
from tests.support.clock import FakeClock
from tests.support.fakes import InMemoryHoldStore

SCOPE = Held.tenant_scope("acme")


def still() -> bool:
    """The tenant is still disabled after the hold."""
    return True


class Queues:
    def __init__(self) -> None:
        self.sent: list[tuple[HeldQueue, str, str, str]] = []

    def __call__(self, queue: HeldQueue, body: str, group_id: str, dedup_id: str) -> None:
        self.sent.append((queue, body, group_id, dedup_id))


def holds() -> tuple[Holds, InMemoryHoldStore, Queues, FakeClock]:
    store, queues, clock = InMemoryHoldStore(), Queues(), FakeClock(1_800_000_000_000)
    return Holds(store, queues, clock), store, queues, clock


def test_held_messages_go_back_to_their_queues_in_the_order_their_queue_had_them_and_are_then_gone() -> None:
    service, store, queues, clock = holds()
    for sent_ms, message_id in ((300, "m3"), (100, "m1"), (200, "m2")):
        service.hold(functools.partial(Held.push, SCOPE, f"body {message_id}", "acme#u1", message_id, sent_ms), still)
        clock.advance(1_000)
    service.hold(lambda now: Held.lane(SCOPE, "acme-ci", '{"lane":"acme-ci"}', now), lambda: True)
    assert [held.queue for held in service.held(SCOPE)] == [HeldQueue.EVENTS, *[HeldQueue.IM_PUSH] * 3]
    assert service.release(SCOPE) == 4
    pushes = [(body, group) for queue, body, group, _ in queues.sent if queue is HeldQueue.IM_PUSH]
    assert pushes == [("body m1", "acme#u1"), ("body m2", "acme#u1"), ("body m3", "acme#u1")]
    assert len({dedup for *_, dedup in queues.sent}) == 4 and all(d.startswith("resumed-") for *_, d in queues.sent)
    assert store.items == {} and service.release(SCOPE) == 0


def test_a_lane_is_held_once_however_many_of_its_messages_come() -> None:
    service, _, queues, _ = holds()
    for _ in range(3):
        service.hold(lambda now: Held.lane(SCOPE, "acme-ci", "{}", now), lambda: True)
    assert len(service.held(SCOPE)) == 1 and service.release(SCOPE) == 1 and len(queues.sent) == 1


def test_a_hold_whose_tenant_was_enabled_meanwhile_is_released_by_its_own_worker() -> None:
    """The worker read the tenant disabled (through its cache) and the operator's `enable` released the holds
    before this one was written: nothing else would ever put it back."""
    service, store, queues, _ = holds()
    service.hold(lambda now: Held.push(SCOPE, "body", "acme#u1", "m1", 1, now), lambda: False)
    assert store.items == {} and [body for _, body, _, _ in queues.sent] == ["body"]


def test_a_held_message_goes_back_under_a_new_deduplication_id_each_time_it_is_held() -> None:
    """SQS drops a message sent again within five minutes under the same deduplication id: held, released, held
    again and released within them, the second return must not be dropped."""
    service, _, queues, clock = holds()
    for _ in range(2):
        service.hold(lambda now: Held.lane(SCOPE, "acme-ci", "{}", now), lambda: True)
        service.release(SCOPE)
        clock.advance(1)
    assert len({dedup for *_, dedup in queues.sent}) == 2


def test_a_pause_holds_its_services_lanes_or_only_its_targets_lane() -> None:
    service, _, _, _ = holds()
    service.pause(Pause.key_of("deploys", "deploys/chat_id:oc_ops"), "ana", "bot removed")
    assert service.pause_of("deploys/chat_id:oc_ops", "deploys") is not None
    assert service.pause_of("deploys/chat_id:oc_other", "deploys") is None  # the service's other lanes move
    service.pause(Pause.key_of("scheduler"), "ana", "")
    assert service.pause_of("scheduler", "scheduler") is not None
    assert service.pause_of("scheduler/chat_id:oc_x", "scheduler") is not None  # every lane of the service
    assert service.pause_of("other", "other") is None


def test_pausing_again_keeps_the_first_pause_and_resuming_releases_only_what_it_held() -> None:
    service, store, queues, clock = holds()
    first = service.pause("service#scheduler", "ana", "migration")
    clock.advance(60_000)
    assert service.pause("service#scheduler", "bo", "again") == first
    service.hold(lambda now: Held.lane(first.scope, "scheduler", "{}", now), lambda: True)
    service.hold(lambda now: Held.lane(SCOPE, "acme-ci", "{}", now), lambda: True)  # a disabled tenant's
    assert [(pause.key, held) for pause, held in service.paused()] == [("service#scheduler", 1)]
    assert service.resume("service#scheduler") == 1 and [group for _, _, group, _ in queues.sent] == ["scheduler"]
    assert service.paused() == [] and len(store.items) == 1  # the tenant's hold stays
    with pytest.raises(NotFound):
        service.resume("service#scheduler")


def test_a_worker_reads_the_pauses_again_only_after_its_cache_time() -> None:
    store, clock = InMemoryHoldStore(), FakeClock(1_800_000_000_000)
    worker = Holds(store, Queues(), clock, cache_ms=5_000)
    assert worker.pause_of("scheduler", "scheduler") is None
    store.put_pause(Pause("service#scheduler", "ana", "", clock.now))  # another process's pause
    assert worker.pause_of("scheduler", "scheduler") is None  # its reading is still fresh
    clock.advance(5_000)
    assert worker.pause_of("scheduler", "scheduler") is not None
    assert worker.in_force("service#scheduler")
