"""The governor's shared bucket and the provider apps' circuits on DynamoDB (moto in process; the local cloud's
engines in tests/integration/test_governor_local_cloud.py and test_isolation_local_cloud.py)."""

from __future__ import annotations

import dataclasses

import pytest
from herald_ops.template import StackTemplate

from herald.circuits import Circuit, CircuitLimits, CircuitState, Parked
from herald.limits.dynamo import DynamoBucketStore, DynamoCircuitStore
from tests.support.governor_engines import (
    a_calls_moment_is_written_to_all_its_buckets_at_once,
    instances_share_one_bucket,
)


def test_instances_taking_tokens_at_once_share_one_bucket(aws: StackTemplate) -> None:
    table = aws.physical_name("RateLimitsTable")
    instances_share_one_bucket(lambda: DynamoBucketStore(table))


def test_a_calls_moment_is_written_to_all_its_buckets_at_once(aws: StackTemplate) -> None:
    table = aws.physical_name("RateLimitsTable")
    a_calls_moment_is_written_to_all_its_buckets_at_once(lambda: DynamoBucketStore(table))


def test_a_provider_apps_circuit_is_stored_over_its_version_and_read_back_whole(aws: StackTemplate) -> None:
    store = DynamoCircuitStore(aws.physical_name("RateLimitsTable"))
    assert store.read("feishu:cli_a") == CircuitState()
    held = CircuitState(calls=(("t1", 1_000, 9_000), ("t2", 2_000, 10_000)), failures=3, parked_until_ms=7_000, parks=1)
    assert store.write("feishu:cli_a", held)
    assert not store.write("feishu:cli_a", held)  # another instance wrote over version 0 first
    stored = store.read("feishu:cli_a")
    assert stored == dataclasses.replace(held, version=1)
    assert store.write("feishu:cli_a", dataclasses.replace(stored, calls=(), failures=0, parked_until_ms=0, parks=0))
    assert store.read("feishu:cli_a") == CircuitState(version=2)


def test_two_instances_share_one_apps_slots_through_the_table(aws: StackTemplate) -> None:
    table = aws.physical_name("RateLimitsTable")
    limits = CircuitLimits(calls_at_once=1)
    one, other = (Circuit(DynamoCircuitStore(table), "im:1400000001", limits) for _ in range(2))
    with one.call(8_000), pytest.raises(Parked), other.call(8_000):
        pass
    with other.call(8_000):
        pass
