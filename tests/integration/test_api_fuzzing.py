"""Schemathesis against the app's own OpenAPI, served by the local cloud: for every operation, generated
requests (valid and not) with real credentials never get a 5xx, and every response is one the schema
documents (status, content type, body: the envelope). Each operation documents only the errors it can
give, so the status check can fail. Then the free-form JSON dimensions (numbers DynamoDB cannot hold,
lone surrogates, empty keys, depth, size) against the inbox, read back.

CI runs a fixed (derandomized) set on both engines; `make soak` runs a random one
(HERALD_FUZZ_RANDOM=1, HERALD_FUZZ_EXAMPLES=N)."""

from __future__ import annotations

import json
import os
import uuid
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from herald.auth.dynamo import DynamoServiceKeyStore
from herald.auth.service_keys import ServiceKeys
from herald.input_policy import PolicyViolation, check_body, check_free_form
from tests.support.local_cloud import LocalCloudProcess
from tests.support.tokens import make_token

# Every operation fuzzed: minutes of a local cloud's work, so `make test` runs it beside the crash soak.
pytestmark = [pytest.mark.integration, pytest.mark.slow]
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
RANDOM = os.environ.get("HERALD_FUZZ_RANDOM") == "1"
EXAMPLES = int(os.environ.get("HERALD_FUZZ_EXAMPLES", "12"))
FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=not RANDOM
)


@pytest.fixture(scope="module")
def api_schema(cloud: LocalCloudProcess) -> Any:
    return schemathesis.openapi.from_url(f"{cloud.http_url}/api/v1/openapi.json")


@pytest.fixture(scope="module")
def credentials(cloud: LocalCloudProcess) -> dict[str, dict[str, str]]:
    keys = ServiceKeys(DynamoServiceKeyStore(cloud.resource("ServiceKeysTable"), cloud.client("dynamodb")))
    key, _ = keys.create_key("fuzzer", ["/internal/v1", "/internal/v1/confirms/owner", "/events/external"])
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
    @FUZZ_SETTINGS
    def fuzz(case: Any) -> None:
        case.call_and_validate(base_url=cloud.http_url, headers=credentials[kind], checks=CHECKS)

    fuzz()


# Every kind of JSON value, with the ones DynamoDB cannot hold (infinite, NaN, over 38 digits, out of
# range), lone surrogates, empty keys, deep nesting and long strings among them.
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**45), max_value=10**45),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e-131, 1e126, 1e-130, 9.9e125, 0.1, -0.0]),
    st.text(st.characters(exclude_categories=()), max_size=20),
    st.text(alphabet="x", min_size=3_990, max_size=4_010),
)
_JSON = st.recursive(
    _SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=40,
)


def _accepted_by_policy(body: dict[str, Any]) -> bool:
    try:
        check_body(body)
        check_free_form(body["payload"], "payload")
    except PolicyViolation:
        return False
    return True


def test_inbox_payloads_are_stored_and_read_back_exactly_or_refused_whole(
    cloud: LocalCloudProcess, credentials: dict[str, dict[str, str]]
) -> None:
    """Exactly 200 (and the payload reads back as sent) or 400 (and nothing is stored), as the policy
    says: never a 500, never a lax acceptance."""
    http = httpx.Client(base_url=cloud.http_url, timeout=30)

    @given(payload=st.dictionaries(st.text(max_size=6), _JSON, max_size=6))
    @FUZZ_SETTINGS
    def fuzz(payload: dict[str, Any]) -> None:
        user = str(uuid.uuid4().int % 10**12)
        body: dict[str, Any] = {
            "user_id": user,
            "kind": "QUESTION_PENDING",
            "session_id": "fuzz",
            "tail": "t",
            "title": "t",
        }
        body["payload"] = payload
        raw = json.dumps(body, allow_nan=True).encode()
        response = http.post(
            "/internal/v1/inbox/notifications",
            content=raw,
            headers={**credentials["service"], "Content-Type": "application/json"},
        )
        expected = 200 if _accepted_by_policy(body) else 400
        assert response.status_code == expected, (response.status_code, response.text[:300])
        listed = http.get(
            "/api/v1/inbox/notifications", headers={"Authorization": f"Bearer {make_token(user, ttl=600)}"}
        ).json()["data"]
        if expected == 400:
            assert response.json()["code"] == "INVALID_ARGUMENT" and listed["items"] == []
        else:
            (item,) = listed["items"]
            assert item["payload"] == payload

    fuzz()
