"""Integration fixtures: the local cloud on the embedded moto, with DynamoDB Local for the tables when
HERALD_TEST_DYNAMODB=local and fauxqs for the queues when HERALD_TEST_SQS=fauxqs (see README, which engine
covers what)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.local_cloud import DynamoDBLocal, FauxQs, LocalCloudProcess, LocalEngine, running_cloud


def _second_engine(
    factory: pytest.TempPathFactory, variable: str, value: str, engine: type[LocalEngine]
) -> Iterator[str | None]:
    """The engine's endpoint when the environment asks for it (`variable=value`), else None (moto)."""
    if os.environ.get(variable) != value:
        yield None
        return
    running = engine(factory.mktemp(engine.name.replace(" ", "-"))).start()
    yield running.endpoint
    running.stop()


@pytest.fixture(scope="session")
def dynamodb_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str | None]:
    yield from _second_engine(tmp_path_factory, "HERALD_TEST_DYNAMODB", "local", DynamoDBLocal)


@pytest.fixture(scope="session")
def sqs_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str | None]:
    yield from _second_engine(tmp_path_factory, "HERALD_TEST_SQS", "fauxqs", FauxQs)


@pytest.fixture(scope="session")
def cloud(
    tmp_path_factory: pytest.TempPathFactory, dynamodb_endpoint: str | None, sqs_endpoint: str | None
) -> Iterator[LocalCloudProcess]:
    """The real template.yaml, served as `make dev` serves it (external-event retries start at one second)."""
    env = {
        "HERALD_EVENTS_RETRY_BASE_MS": "500",
        "HERALD_EVENTS_MAX_ATTEMPTS": "10",
        "HERALD_SERVICE_KEY_CACHE_SECONDS": "2",  # a revocation shows within the tests' patience
    }
    yield from running_cloud(tmp_path_factory, "cloud", dynamodb_endpoint, sqs_endpoint, env)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return tmp_path
