"""Schemathesis against the app's own OpenAPI, served by the local cloud: for every operation, generated
requests (valid and not) with real credentials never get a 5xx, and every response is one the schema
documents (status, content type, body: the envelope)."""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from herald.auth.dynamo import DynamoServiceKeyStore
from herald.auth.service_keys import ServiceKeys
from tests.support.local_cloud import LocalCloudProcess
from tests.support.tokens import make_token

pytestmark = pytest.mark.integration
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@pytest.fixture(scope="module")
def api_schema(cloud: LocalCloudProcess) -> Any:
    return schemathesis.openapi.from_url(f"{cloud.http_url}/api/v1/openapi.json")


@pytest.fixture(scope="module")
def credentials(cloud: LocalCloudProcess) -> dict[str, dict[str, str]]:
    keys = ServiceKeys(DynamoServiceKeyStore(cloud.resource("ServiceKeysTable"), cloud.client("dynamodb")))
    key, _ = keys.create_key("fuzzer", ["/internal/v1", "/events/external"])
    return {
        "app": {"Authorization": f"Bearer {make_token('10002', ttl=3600)}"},
        "service": {"Authorization": f"Bearer {key}"},
        "public": {},
    }


def operations() -> list[tuple[str, str]]:
    """Every (method, path) of the app's OpenAPI, read offline for collection; the test fuzzes the served one."""
    from herald.api.app import create_app

    return [(method, path) for path, spec in create_app().openapi()["paths"].items() for method in spec]


@pytest.mark.parametrize(("method", "path"), operations(), ids=str)
def test_no_5xx_and_every_response_as_documented(
    api_schema: Any, cloud: LocalCloudProcess, credentials: dict[str, dict[str, str]], method: str, path: str
) -> None:
    kind = "public" if path == "/api/v1/health" else "app" if path.startswith("/api/v1/") else "service"
    operation = api_schema[path][method]

    @given(case=operation.as_strategy())
    @settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    def fuzz(case: Any) -> None:
        case.call_and_validate(base_url=cloud.http_url, headers=credentials[kind], checks=CHECKS)

    fuzz()
