"""Browser clients: CORS as configured, preflights answered without a token, and the public routes (health,
the API document and its page) reachable without one; the template routes them past the authorizer."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from herald_ops.template import load_template

from herald.api.app import create_app
from tests.support.container import reconfigure

REPO = Path(__file__).resolve().parents[2]
APP_ORIGIN = "https://app.example.com"


@pytest.fixture
def browser_api(aws: Any, monkeypatch: pytest.MonkeyPatch) -> TestClient:
    reconfigure(cors_allow_origins=f"{APP_ORIGIN},https://admin.example.com")
    return TestClient(create_app())


def test_preflight_from_an_allowed_origin_is_answered_without_a_token(browser_api: TestClient) -> None:
    response = browser_api.options(
        "/api/v1/inbox/unread-count",
        headers={
            "Origin": APP_ORIGIN,
            "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "authorization",
        },
    )
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == APP_ORIGIN
    assert "authorization" in response.headers["access-control-allow-headers"].lower()


def test_preflight_from_another_origin_is_refused(browser_api: TestClient) -> None:
    response = browser_api.options(
        "/api/v1/inbox/unread-count",
        headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "GET"},
    )
    assert response.status_code == 400 and "access-control-allow-origin" not in response.headers


def test_a_cross_origin_answer_exposes_retry_after_and_the_request_id(browser_api: TestClient) -> None:
    response = browser_api.get("/api/v1/health", headers={"Origin": APP_ORIGIN})
    assert response.headers["access-control-allow-origin"] == APP_ORIGIN
    assert {"retry-after", "x-request-id"} <= set(response.headers["access-control-expose-headers"].split(", "))


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/api/v1/health"), ("HEAD", "/api/v1/health"), ("GET", "/api/v1/openapi.json"), ("GET", "/api/v1/docs")],
)
def test_public_routes_need_no_token(browser_api: TestClient, method: str, path: str) -> None:
    assert browser_api.request(method, path).status_code == 200


def _http_routes() -> list[dict[str, Any]]:
    template = load_template(REPO / "template.yaml")
    events = template["Resources"]["HttpApiFunction"]["Properties"]["Events"]
    return [event["Properties"] for event in events.values() if event["Type"] == "HttpApi"]


def test_the_template_lets_public_routes_and_preflights_past_the_authorizer() -> None:
    routes = _http_routes()
    public = {(r["Method"], r["Path"]) for r in routes if r.get("Auth", {}).get("Authorizer") == "NONE"}
    assert {
        ("GET", "/api/v1/health"),
        ("HEAD", "/api/v1/health"),
        ("GET", "/api/v1/openapi.json"),
        ("GET", "/api/v1/docs"),
    } <= public
    behind_authorizer = [r["Path"] for r in routes if r.get("Auth", {}).get("Authorizer") != "NONE"]
    assert behind_authorizer and all(("OPTIONS", path) in public for path in behind_authorizer)
    cors = load_template(REPO / "template.yaml")["Resources"]["HttpApi"]["Properties"]["CorsConfiguration"]
    assert cors["AllowOrigins"] == {"Fn::Split": [",", {"Ref": "CorsAllowOrigins"}]}


def test_the_api_reference_is_one_page_with_every_operation_and_nothing_from_elsewhere(
    browser_api: TestClient,
) -> None:
    """`/api/v1/docs` works with no network: no script, stylesheet or font from a CDN (its one script inline,
    allowed by its hash), and a CSP that would refuse any other; every operation of the OpenAPI is on it."""
    page = browser_api.get("/api/v1/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert page.text.count("<script") == 1 and "<script src" not in page.text
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page.text)
    assert "script-src 'sha256-" in page.headers["content-security-policy"]
    spec = browser_api.get("/api/v1/openapi.json").json()
    operations = [(m, p, op) for p, methods in spec["paths"].items() for m, op in methods.items()]
    assert len(operations) > 20
    for method, path, operation in operations:
        assert f"id='{operation['operationId']}'" in page.text
        assert f"<span class=method>{method.upper()}</span><code>{html.escape(path)}</code>" in page.text
    assert "<h2 id='partner'>" in page.text and "evt-2" in page.text  # a body's example, shown


def _served_by(route: dict[str, Any], method: str, path: str) -> bool:
    """Whether the API Gateway route takes `method path` ({proxy+}: one or more segments; {name}: one)."""
    pattern = re.escape(route["Path"]).replace(re.escape("{proxy+}"), ".+")
    pattern = re.sub(r"\\\{[A-Za-z_]+\\\}", "[^/]+", pattern)
    return route["Method"] in ("ANY", method) and re.fullmatch(pattern, path) is not None


def test_every_operation_of_the_http_app_has_a_route_in_the_template(browser_api: TestClient) -> None:
    """A route the app serves but API Gateway never passes on would work in every local test and 404 deployed."""
    routes = _http_routes()
    spec = browser_api.get("/api/v1/openapi.json").json()
    operations = [(method.upper(), path) for path, methods in spec["paths"].items() for method in methods]
    missing = [
        (method, path)
        for method, path in operations
        if not any(_served_by(route, method, re.sub(r"\{[^}]+\}", "x", path)) for route in routes)
    ]
    assert operations and not missing
