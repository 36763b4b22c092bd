"""The governor's shared bucket on DynamoDB (moto in process; the local cloud's engines in
tests/integration/test_governor_local_cloud.py)."""

from __future__ import annotations

from herald_ops.template import StackTemplate

from herald.limits.dynamo import DynamoBucketStore
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
