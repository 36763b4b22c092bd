"""Integration fixtures: the local cloud on the embedded moto, with DynamoDB Local for the tables when
HERALD_TEST_DYNAMODB=local and fauxqs for the queues when HERALD_TEST_SQS=fauxqs (see README, which engine
covers what)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.local_cloud import RATE_LIMITS_OFF, DynamoDBLocal, FauxQs, LocalCloudProcess


@pytest.fixture(scope="session")
def dynamodb_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str | None]:
    if os.environ.get("HERALD_TEST_DYNAMODB") != "local":
        yield None
        return
    engine = DynamoDBLocal(tmp_path_factory.mktemp("dynamodb-local")).start()
    yield engine.endpoint
    engine.stop()


@pytest.fixture(scope="session")
def sqs_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str | None]:
    if os.environ.get("HERALD_TEST_SQS") != "fauxqs":
        yield None
        return
    engine = FauxQs(tmp_path_factory.mktemp("fauxqs")).start()
    yield engine.endpoint
    engine.stop()


@pytest.fixture(scope="session")
def cloud(
    tmp_path_factory: pytest.TempPathFactory, dynamodb_endpoint: str | None, sqs_endpoint: str | None
) -> Iterator[LocalCloudProcess]:
    """The real template.yaml, served as `make dev` serves it (external-event retries start at one second)."""
    process = LocalCloudProcess(
        tmp_path_factory.mktemp("cloud"),
        dynamodb_endpoint=dynamodb_endpoint,
        sqs_endpoint=sqs_endpoint,
        env={
            "HERALD_EVENTS_RETRY_BASE_MS": "500",
            "HERALD_EVENTS_MAX_ATTEMPTS": "10",
            "HERALD_SERVICE_KEY_CACHE_SECONDS": "2",  # a revocation shows within the tests' patience
            **RATE_LIMITS_OFF,
        },
    ).start()
    yield process
    process.stop()


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return tmp_path
