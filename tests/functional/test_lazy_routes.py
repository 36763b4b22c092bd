"""The HTTP app includes a bounded context's routes when a request first needs them (a cold start builds only
its first request's context): the request is answered as if every route had been there from the start, other
contexts stay out until asked for, and the OpenAPI documents every route in one fixed order whatever came first."""

from __future__ import annotations

from collections.abc import Sequence

from fastapi.testclient import TestClient
from herald_ops.template import StackTemplate

from herald.api.app import create_app


def paths_of(routes: Sequence[object]) -> set[str]:
    """Every path served, through included routers (FastAPI keeps an included router whole, routes inside)."""
    found: set[str] = set()
    for route in routes:
        inner = getattr(route, "original_router", None)
        found |= paths_of(inner.routes) if inner is not None else {str(getattr(route, "path", ""))}
    return found


def test_a_request_includes_only_its_contexts_routes_and_is_answered_as_always(aws: StackTemplate) -> None:
    app = create_app()
    client = TestClient(app)
    assert "/api/v1/inbox/unread-count" not in paths_of(app.router.routes)
    assert client.get("/api/v1/health").status_code == 200
    assert not any(path.startswith(("/api/v1/inbox", "/api/v1/sessions")) for path in paths_of(app.router.routes))

    answer = client.get("/api/v1/inbox/unread-count")  # no token: 401, as before
    assert answer.status_code == 401 and answer.json()["code"] == "UNAUTHORIZED"
    included = paths_of(app.router.routes)
    assert {"/api/v1/inbox/unread-count", "/internal/v1/inbox/notifications"} <= included
    assert not any(path.startswith(("/api/v1/sessions", "/events/external")) for path in included)
    wrong_method = client.delete("/api/v1/inbox/unread-count")
    assert wrong_method.status_code == 405 and wrong_method.json()["code"] == "METHOD_NOT_ALLOWED"


def test_a_path_no_context_serves_is_404_and_includes_nothing(aws: StackTemplate) -> None:
    app = create_app()
    before = len(app.router.routes)
    answer = TestClient(app).get("/api/v1/nothing-here")
    assert answer.status_code == 404 and answer.json()["code"] == "NOT_FOUND"
    assert len(app.router.routes) == before


def test_the_openapi_has_every_route_in_the_same_order_whatever_was_asked_first(aws: StackTemplate) -> None:
    untouched = create_app().openapi()
    asked_first = create_app()
    client = TestClient(asked_first)
    for path in ("/api/v1/sessions/s/events", "/events/external", "/api/v1/me"):
        client.get(path)
    documented = client.get("/api/v1/openapi.json").json()
    assert list(documented["paths"]) == list(untouched["paths"])
    assert len(documented["paths"]) > 20
