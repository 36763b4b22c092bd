"""The job store's contract on the local cloud's table: moto's server, or DynamoDB Local when
HERALD_TEST_DYNAMODB=local (the integration run of `make test` does both)."""

from __future__ import annotations

import pytest

from herald.events.dynamo import DynamoEventStore
from tests.support.job_store_contract import JobStoreContract
from tests.support.local_cloud import LocalCloudProcess

pytestmark = pytest.mark.integration


class TestDynamoJobStoreOnTheLocalCloud(JobStoreContract):
    @pytest.fixture
    def store(self, cloud: LocalCloudProcess) -> DynamoEventStore:
        return DynamoEventStore(cloud.resource("ExternalEventsTable"), cloud.client("dynamodb"))
