"""The governor's shared bucket on the local cloud's table: moto's server, or DynamoDB Local when
HERALD_TEST_DYNAMODB=local."""

from __future__ import annotations

import pytest

from herald.limits.dynamo import DynamoBucketStore
from tests.support.governor_engines import (
    a_calls_moment_is_written_to_all_its_buckets_at_once,
    instances_share_one_bucket,
)
from tests.support.local_cloud import LocalCloudProcess

pytestmark = pytest.mark.integration


def test_instances_taking_tokens_at_once_share_one_bucket(cloud: LocalCloudProcess) -> None:
    table = cloud.resource("RateLimitsTable")
    instances_share_one_bucket(lambda: DynamoBucketStore(table, cloud.client("dynamodb")))


def test_a_calls_moment_is_written_to_all_its_buckets_at_once(cloud: LocalCloudProcess) -> None:
    table = cloud.resource("RateLimitsTable")
    a_calls_moment_is_written_to_all_its_buckets_at_once(lambda: DynamoBucketStore(table, cloud.client("dynamodb")))
