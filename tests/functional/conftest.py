from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from moto import mock_aws

from herald.api.app import create_app
from herald.auth.dynamo import DynamoServiceKeyStore
from herald.auth.service_keys import ServiceKeys
from herald.settings import get_settings
from herald_dev.template import LocalStack
from tests.support.aws import create_stack


@pytest.fixture
def aws() -> Iterator[LocalStack]:
    with mock_aws():
        yield create_stack()


@pytest.fixture
def client(aws: LocalStack) -> TestClient:
    return TestClient(create_app())


@pytest.fixture
def service_keys(aws: LocalStack) -> ServiceKeys:
    return ServiceKeys(DynamoServiceKeyStore(get_settings().service_keys_table))
