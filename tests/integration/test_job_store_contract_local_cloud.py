"""The job store's contract on the local cloud's engine: moto's server, or DynamoDB Local when
HERALD_TEST_DYNAMODB=local (the integration run of `make test` does both).

The table is the template's ExternalEventsTable under another stack's name: the local cloud's own table has
a stream its events worker drains, and a drain moving a service's cursor mid-scenario is the worker's doing,
not the store's, so the contract runs where nothing consumes."""

from __future__ import annotations

import pytest
from herald_ops.template import StackTemplate

from herald.events.dynamo import DynamoEventStore
from herald_dev.provision import create_table
from tests.support.aws import REPO
from tests.support.job_store_contract import JobStoreContract
from tests.support.local_cloud import LocalCloudProcess

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def unconsumed_table(cloud: LocalCloudProcess) -> str:
    stack = StackTemplate.from_file(REPO / "template.yaml", stack_name="job-store-contract")
    create_table(stack, "ExternalEventsTable", cloud.client("dynamodb"))
    return stack.physical_name("ExternalEventsTable")


class TestDynamoJobStoreOnTheLocalCloud(JobStoreContract):
    @pytest.fixture
    def store(self, cloud: LocalCloudProcess, unconsumed_table: str) -> DynamoEventStore:
        return DynamoEventStore(unconsumed_table, cloud.client("dynamodb"))
