"""One scenario for the governor on a real engine: several instances (each its own store and client) take
tokens from one bucket at once, on a clock that does not move; however their reads and conditional writes
interleave, exactly the bucket's burst passes."""

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
