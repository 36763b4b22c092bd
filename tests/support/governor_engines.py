"""Scenarios for the governor on a real engine: several instances (each its own store and client) take
tokens at once, on a clock that does not move; however their reads and conditional writes (one bucket's, or
one transaction of two) interleave, exactly the binding bucket's burst passes. And the provider apps' circuits
as stored: written over their version, read back whole, slots shared, an answer closing one in one write."""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from herald.circuits import Circuit, CircuitLimits, CircuitState, CircuitStore, Parked
from herald.limits.governor import BucketLimit, BucketStore, Gate, Governor
from herald.limits.shares import Claim, Share

INSTANCES = 8


def instances_share_one_bucket(store_of_an_instance: Callable[[], BucketStore]) -> None:
    gate = Gate(f"shared-{secrets.token_hex(4)}", BucketLimit(200, per_seconds=60))  # a burst of 20
    frozen = 1_800_000_000_000

    def instance() -> int:
        governor = Governor(store_of_an_instance(), clock=lambda: frozen)
        passed = 0
        while governor.take([gate]) == 0:
            passed += 1
        return passed

    with ThreadPoolExecutor(INSTANCES) as pool:
        passed = list(pool.map(lambda _: instance(), range(INSTANCES)))
    assert sum(passed) == gate.limit.burst == 20


def a_calls_moment_is_written_to_all_its_buckets_at_once(store_of_an_instance: Callable[[], BucketStore]) -> None:
    """Each instance's calls count against its own chat (a burst of 5) and the app they share (a burst of 20):
    20 pass in all, none over any chat's 5, and each bucket holds exactly the calls that passed through it."""
    tag, frozen = secrets.token_hex(4), 1_800_000_000_000
    app = Gate(f"app-{tag}", BucketLimit(200, per_seconds=60))

    def instance(n: int) -> int:
        store = store_of_an_instance()
        governor = Governor(store, clock=lambda: frozen)
        chat = Gate(f"chat-{tag}-{n}", BucketLimit(50, per_seconds=60))
        passed = 0
        while governor.take([chat, app]) == 0:
            passed += 1
        assert store.read(chat.name).version == passed
        return passed

    with ThreadPoolExecutor(INSTANCES) as pool:
        passed = list(pool.map(instance, range(INSTANCES)))
    assert sum(passed) == app.limit.burst == 20
    assert max(passed) <= 5
    assert store_of_an_instance().read(app.name).version == 20


def sharers_of_an_app_split_it_through_the_table(store_of_an_instance: Callable[[], BucketStore]) -> None:
    """Two instances (each its own store and client), each calling for another service of the app in turn, on a
    clock that does not move: the app's burst splits between them by their weights (3:1), because each call's claim
    rides in its bucket's write and each instance reads the other's; the claims read back whole."""
    tag, frozen = secrets.token_hex(4), 1_800_000_000_000
    app = Gate(f"app-{tag}", BucketLimit(400, per_seconds=60), shared=True)  # a burst of 40
    sharers = {"heavy": Share.of("t1", "heavy", weight=3), "light": Share.of("t1", "light", weight=1)}
    governors = {who: Governor(store_of_an_instance(), clock=lambda: frozen) for who in sharers}
    passed, asking = dict.fromkeys(sharers, 0), set(sharers)
    while asking:
        for who in sorted(asking):
            if governors[who].take([app], share=sharers[who]) == 0:
                passed[who] += 1
            else:
                asking.discard(who)
    assert passed["heavy"] + passed["light"] == 40
    assert 30 - 2 <= passed["heavy"] <= 30 + 2  # three quarters (a part may go one moment early)
    claims = store_of_an_instance().read(app.name).claims
    assert set(claims) == {"t1/heavy", "t1/light"}
    assert claims["t1/heavy"] == Claim(3, 1, claims["t1/heavy"].due_ms, frozen)


def a_circuit_is_stored_over_its_version_and_read_back_whole(store: CircuitStore) -> None:
    name = f"feishu:cli_{secrets.token_hex(4)}"
    assert store.read(name) == CircuitState()
    held = CircuitState(calls=(("t1", 1_000, 9_000), ("t2", 2_000, 10_000)), failures=3, parked_until_ms=7_000, parks=1)
    assert store.write(name, held)
    assert not store.write(name, held)  # another instance wrote over version 0 first
    stored = store.read(name)
    assert stored == dataclasses.replace(held, version=1)
    assert store.write(name, dataclasses.replace(stored, calls=(), failures=0, parked_until_ms=0, parks=0))
    assert store.read(name) == CircuitState(version=2)


def instances_share_one_apps_slots(store_of_an_instance: Callable[[], CircuitStore]) -> None:
    name, limits = f"im:{secrets.randbelow(10**9)}", CircuitLimits(calls_at_once=1)
    one, other = (Circuit(store_of_an_instance(), name, limits) for _ in range(2))
    with one.call(8_000), pytest.raises(Parked), other.call(8_000):
        pass
    with other.call(8_000):
        pass


def an_answer_frees_its_slot_and_closes_the_circuit(store: CircuitStore) -> None:
    """One write, no read; also when its slot is gone already (pruned as expired by another instance)."""
    name = f"im:{secrets.randbelow(10**9)}"
    assert store.write(name, CircuitState(calls=(("t1", 1_000, 9_000),), failures=2))
    store.answered(name, "t1")
    assert store.read(name) == CircuitState(version=2)
    store.answered(name, "t1")
    assert store.read(name) == CircuitState(version=3)
