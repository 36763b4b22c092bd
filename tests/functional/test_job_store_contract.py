"""The job store's contract on the in-memory fake and on DynamoDB (moto, in process). The local cloud's engines
(moto's server, DynamoDB Local) run it in tests/integration/test_job_store_contract_local_cloud.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from moto import mock_aws

from herald.events.dynamo import DynamoEventStore
from tests.support.aws import create_stack
from tests.support.fakes import InMemoryJobStore
from tests.support.job_store_contract import JobStoreContract


class TestInMemoryJobStore(JobStoreContract):
    @pytest.fixture
    def store(self) -> InMemoryJobStore:
        return InMemoryJobStore()


class TestDynamoJobStoreOnMoto(JobStoreContract):
    @pytest.fixture
    def store(self) -> Iterator[DynamoEventStore]:
        with mock_aws():
            stack = create_stack()
            yield DynamoEventStore(stack.physical_name("ExternalEventsTable"))
