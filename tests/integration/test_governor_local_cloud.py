"""The governor's shared bucket and the provider apps' circuits on the local cloud's table: moto's server, or
DynamoDB Local when HERALD_TEST_DYNAMODB=local."""

from __future__ import annotations

import pytest

from herald.limits.dynamo import DynamoBucketStore, DynamoCircuitStore
from tests.support.governor_engines import (
    a_calls_moment_is_written_to_all_its_buckets_at_once,
    a_circuit_is_stored_over_its_version_and_read_back_whole,
    an_answer_frees_its_slot_and_closes_the_circuit,
    instances_share_one_apps_slots,
    instances_share_one_bucket,
    sharers_of_an_app_split_it_through_the_table,
)
from tests.support.local_cloud import LocalCloudProcess

pytestmark = pytest.mark.integration


def test_instances_taking_tokens_at_once_share_one_bucket(cloud: LocalCloudProcess) -> None:
    table = cloud.resource("RateLimitsTable")
    instances_share_one_bucket(lambda: DynamoBucketStore(table, cloud.client("dynamodb")))


def test_a_calls_moment_is_written_to_all_its_buckets_at_once(cloud: LocalCloudProcess) -> None:
    table = cloud.resource("RateLimitsTable")
    a_calls_moment_is_written_to_all_its_buckets_at_once(lambda: DynamoBucketStore(table, cloud.client("dynamodb")))


def test_two_services_sharing_an_app_split_it_by_weight_through_the_table(cloud: LocalCloudProcess) -> None:
    table = cloud.resource("RateLimitsTable")
    sharers_of_an_app_split_it_through_the_table(lambda: DynamoBucketStore(table, cloud.client("dynamodb")))


def _circuits(cloud: LocalCloudProcess) -> DynamoCircuitStore:
    return DynamoCircuitStore(cloud.resource("RateLimitsTable"), cloud.client("dynamodb"))


def test_a_provider_apps_circuit_is_stored_over_its_version_and_read_back_whole(cloud: LocalCloudProcess) -> None:
    a_circuit_is_stored_over_its_version_and_read_back_whole(_circuits(cloud))


def test_two_instances_share_one_apps_slots_through_the_table(cloud: LocalCloudProcess) -> None:
    instances_share_one_apps_slots(lambda: _circuits(cloud))


def test_an_answered_call_frees_its_slot_and_closes_the_circuit_in_one_write(cloud: LocalCloudProcess) -> None:
    an_answer_frees_its_slot_and_closes_the_circuit(_circuits(cloud))
