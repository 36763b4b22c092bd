"""Scenarios for the governor on a real engine: several instances (each its own store and client) take
tokens at once, on a clock that does not move; however their reads and conditional writes (one bucket's, or
one transaction of two) interleave, exactly the binding bucket's burst passes."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from herald.limits.governor import BucketLimit, BucketStore, Gate, Governor

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
