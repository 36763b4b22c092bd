"""The governor's shared bucket and the provider apps' circuits on DynamoDB (moto in process; the local cloud's
engines in tests/integration/test_governor_local_cloud.py and test_isolation_local_cloud.py)."""

from __future__ import annotations

from herald_ops.template import StackTemplate

from herald.limits.dynamo import DynamoBucketStore, DynamoCircuitStore
from tests.support.governor_engines import (
    a_calls_moment_is_written_to_all_its_buckets_at_once,
    a_circuit_is_stored_over_its_version_and_read_back_whole,
    an_answer_frees_its_slot_and_closes_the_circuit,
    instances_share_one_apps_slots,
    instances_share_one_bucket,
    sharers_of_an_app_split_it_through_the_table,
)


def test_instances_taking_tokens_at_once_share_one_bucket(aws: StackTemplate) -> None:
    table = aws.physical_name("RateLimitsTable")
    instances_share_one_bucket(lambda: DynamoBucketStore(table))


def test_a_calls_moment_is_written_to_all_its_buckets_at_once(aws: StackTemplate) -> None:
    table = aws.physical_name("RateLimitsTable")
    a_calls_moment_is_written_to_all_its_buckets_at_once(lambda: DynamoBucketStore(table))


def test_two_services_sharing_an_app_split_it_by_weight_through_the_table(aws: StackTemplate) -> None:
    table = aws.physical_name("RateLimitsTable")
    sharers_of_an_app_split_it_through_the_table(lambda: DynamoBucketStore(table))


def test_a_provider_apps_circuit_is_stored_over_its_version_and_read_back_whole(aws: StackTemplate) -> None:
    a_circuit_is_stored_over_its_version_and_read_back_whole(DynamoCircuitStore(aws.physical_name("RateLimitsTable")))


def test_two_instances_share_one_apps_slots_through_the_table(aws: StackTemplate) -> None:
    table = aws.physical_name("RateLimitsTable")
    instances_share_one_apps_slots(lambda: DynamoCircuitStore(table))


def test_an_answered_call_frees_its_slot_and_closes_the_circuit_in_one_write_even_after_its_slot_was_pruned(
    aws: StackTemplate,
) -> None:
    an_answer_frees_its_slot_and_closes_the_circuit(DynamoCircuitStore(aws.physical_name("RateLimitsTable")))
