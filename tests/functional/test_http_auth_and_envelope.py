"""App routes take a JWT, service routes a service key; every answer is the envelope with a request id."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from herald_ops.template import StackTemplate
from pydantic import BaseModel

from herald.api.app import create_app
from herald.auth.service_keys import ServiceKeys
from tests.support.tokens import make_token, unsigned_token


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_health_is_open_and_enveloped(client: TestClient) -> None:
    response = client.get("/api/v1/health")
    body = response.json()
    assert response.status_code == 200
    assert body["code"] == "OK" and body["data"]["status"] == "ok" and body["request_id"]
    assert response.headers["x-request-id"] == body["request_id"]


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({}, id="missing"),
        pytest.param({"Authorization": "Bearer "}, id="empty"),
        pytest.param({"Authorization": make_token()}, id="no-scheme"),
        pytest.param(_bearer(make_token(ttl=-120)), id="expired"),
        pytest.param(_bearer(make_token(secret="not-the-secret-but-long-enough-xx")), id="wrong-signature"),
        pytest.param(_bearer(unsigned_token()), id="alg-none"),
    ],
)
def test_app_route_refuses_bad_tokens_with_401_envelope(client: TestClient, headers: dict[str, str]) -> None:
    response = client.get("/api/v1/me", headers=headers)
    body = response.json()
    assert response.status_code == 401
    assert body["code"] == "UNAUTHORIZED" and body["data"] is None and body["request_id"]


def test_client_headers_never_set_the_user(client: TestClient) -> None:
    headers = {**_bearer(make_token("10002", "lalu")), "X-User-Id": "99999", "X-App-Code": "other"}
    assert client.get("/api/v1/me", headers=headers).json()["data"] == {
        "user_id": "10002",
        "app_code": "lalu",
        "roles": [],
    }


def test_service_key_opens_the_routes_of_its_capability(client: TestClient, service_keys: ServiceKeys) -> None:
    key, _ = service_keys.create_key("engine", ["/internal/v1"])
    response = client.get("/internal/v1/whoami", headers=_bearer(key))
    assert response.status_code == 200
    assert response.json()["data"] == {
        "service_id": "engine",
        "key_id": key.split("_")[1],
        "capabilities": ["/internal/v1"],
        "app_codes": ["lalu"],
    }


def test_service_key_outside_its_capabilities_is_403(client: TestClient, service_keys: ServiceKeys) -> None:
    key, _ = service_keys.create_key("scheduler", ["/events/external"])
    response = client.post("/internal/v1/inbox/notifications", json={}, headers=_bearer(key))
    assert response.status_code == 403
    assert response.json()["code"] == "PERMISSION_DENIED"


def test_any_live_key_may_ask_who_it_is_whatever_its_capabilities(
    client: TestClient, service_keys: ServiceKeys
) -> None:
    """Contract §0: `GET /internal/v1/whoami` answers any valid key (a partner's key opens /events/external only)."""
    key, _ = service_keys.create_key("scheduler", ["/events/external"])
    response = client.get("/internal/v1/whoami", headers=_bearer(key))
    assert response.status_code == 200, response.text
    assert response.json()["data"]["capabilities"] == ["/events/external"]


@pytest.mark.parametrize("credential", ["hk_0123456789abcdef_" + "A" * 43, "nonsense", make_token()])
def test_unknown_service_key_or_app_token_on_service_route_is_401(client: TestClient, credential: str) -> None:
    response = client.get("/internal/v1/whoami", headers=_bearer(credential))
    assert response.status_code == 401
    assert response.json()["code"] == "UNAUTHORIZED"


def test_service_key_on_an_app_route_is_401(client: TestClient, service_keys: ServiceKeys) -> None:
    key, _ = service_keys.create_key("engine", ["/api/v1"])
    assert client.get("/api/v1/me", headers=_bearer(key)).status_code == 401


def test_unknown_route_is_a_404_envelope(client: TestClient) -> None:
    response = client.get("/api/v1/nothing-here")
    assert response.status_code == 404
    assert response.json()["code"] == "NOT_FOUND"


class _Body(BaseModel):
    command_id: str
    count: int


def _app_with_validated_route() -> FastAPI:
    app = create_app()

    @app.post("/api/v1/echo")
    def echo(body: _Body) -> dict[str, int]:
        return {"count": body.count}

    return app


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(b"{not json", id="malformed-json"),
        pytest.param(b'{"command_id": "x"}', id="missing-field"),
        pytest.param(b'{"command_id": "x", "count": "many"}', id="wrong-type"),
    ],
)
def test_validation_errors_are_400_invalid_argument_not_422(aws: StackTemplate, payload: bytes) -> None:
    client = TestClient(_app_with_validated_route())
    response = client.post("/api/v1/echo", content=payload, headers={"content-type": "application/json"})
    body = response.json()
    assert response.status_code == 400
    assert body["code"] == "INVALID_ARGUMENT" and body["data"]["field"].startswith("body") and body["message"]


def test_unexpected_error_is_a_500_envelope_without_details(aws: StackTemplate) -> None:
    app = create_app()

    @app.get("/api/v1/boom")
    def boom() -> None:
        raise RuntimeError("secret internals")

    response = TestClient(app, raise_server_exceptions=False).get("/api/v1/boom")
    assert response.status_code == 500
    assert response.json()["code"] == "INTERNAL"
    assert "secret internals" not in response.text


def test_openapi_documents_the_error_envelope_and_never_422(client: TestClient) -> None:
    spec = client.get("/api/v1/openapi.json").json()
    responses = spec["paths"]["/api/v1/role-invitations"]["post"]["responses"]
    assert set(responses) == {"200", "400", "401", "409", "413", "429", "503"}
    assert responses["400"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorEnvelope")


def test_each_operation_documents_only_the_errors_it_can_give(client: TestClient) -> None:
    """So the fuzzer's status check can fail: no operation lists every status, none lists a 500."""
    paths = client.get("/api/v1/openapi.json").json()["paths"]
    documented = {(method, path): set(op["responses"]) for path, ops in paths.items() for method, op in ops.items()}
    assert documented[("get", "/api/v1/inbox/unread-count")] == {"200", "401", "429", "503"}
    assert documented[("get", "/internal/v1/whoami")] == {"200", "401", "403", "429", "503"}
    assert documented[("post", "/events/external")] == {"202", "400", "401", "403", "409", "413", "429", "503"}
    with_body = {key for key, op in ((k, paths[k[1]][k[0]]) for k in documented) if "requestBody" in op}
    assert with_body and all("413" in documented[key] for key in with_body)  # a body over 64 KiB, documented
    assert not any("413" in documented[key] for key in documented.keys() - with_body)
    assert not any("500" in statuses or "422" in statuses for statuses in documented.values())
