"""The Python SDK (clients/python): it covers every operation, stands alone, types Herald's errors, honours
Retry-After and resends exactly the same request (so a retry is a duplicate Herald recognises)."""

from __future__ import annotations

import ast
import json
import sys
import tomllib
from pathlib import Path

import httpx
import pytest

from herald_client import AppClient, Conflict, PermissionDenied, RateLimited, ServiceClient
from herald_client.clients import OPERATIONS
from herald_dev.openapi import EXPORTED

SDK = Path(__file__).resolve().parents[2] / "clients" / "python"


def test_the_sdk_has_a_method_for_every_operation_of_the_openapi() -> None:
    spec = json.loads(EXPORTED.read_text())
    ids = {op["operationId"] for path in spec["paths"].values() for op in path.values()}
    assert set(OPERATIONS) == ids


def test_the_sdk_stands_alone_on_httpx() -> None:
    declared = tomllib.loads((SDK / "pyproject.toml").read_text())["project"]["dependencies"]
    assert declared == ["httpx>=0.27"]
    for module in (SDK / "herald_client").glob("*.py"):
        for node in ast.walk(ast.parse(module.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                assert top in sys.stdlib_module_names or top in {"httpx", "herald_client"}, (module.name, name)


def answers(*responses: httpx.Response) -> tuple[httpx.Client, list[httpx.Request]]:
    seen: list[httpx.Request] = []
    queue = list(responses)

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return queue.pop(0)

    return httpx.Client(base_url="http://herald.test", transport=httpx.MockTransport(handle)), seen


def envelope(status: int, code: str = "OK", data: object = None, **headers: str) -> httpx.Response:
    body = {"code": code, "message": "m", "data": data, "request_id": "r"}
    return httpx.Response(status, json=body, headers=headers)


def test_a_429_is_slept_for_its_retry_after_then_retried() -> None:
    http, seen = answers(
        envelope(429, "RATE_LIMITED", {"reason": "key_rate_limited"}, **{"Retry-After": "7"}),
        envelope(200, data={"event_id": "e1"}),
    )
    slept: list[float] = []
    client = ServiceClient("http://herald.test", "hk_x", http=http, sleep=slept.append)
    assert client.post_event("e1", "job.progress", {"title": "t"}) == {"event_id": "e1"}
    assert slept == [7.0] and len(seen) == 2 and seen[0].content == seen[1].content


def test_a_lost_answer_is_resent_as_exactly_the_same_request() -> None:
    calls: list[bytes] = []

    def handle(request: httpx.Request) -> httpx.Response:
        calls.append(request.content)
        if len(calls) == 1:
            raise httpx.ReadError("the answer was lost", request=request)
        return envelope(200, data={"event_id": "e1", "duplicate": True})

    http = httpx.Client(base_url="http://herald.test", transport=httpx.MockTransport(handle))
    client = ServiceClient("http://herald.test", "hk_x", http=http, sleep=lambda _: None)
    client.post_event("e1", "job.progress", {"title": "t"})
    assert len(calls) == 2 and calls[0] == calls[1] and json.loads(calls[0])["event_id"] == "e1"


def test_errors_are_typed_with_their_named_reason_and_a_limit_still_hit_is_raised() -> None:
    http, _ = answers(envelope(409, "CONFLICT", {"reason": "group_full"}), envelope(403, "PERMISSION_DENIED"))
    app = AppClient("http://herald.test", "jwt", http=http)
    with pytest.raises(Conflict) as conflict:
        app.accept("cfm_1", "tap-1")
    assert conflict.value.reason == "group_full" and conflict.value.status == 409
    with pytest.raises(PermissionDenied):
        app.accept("cfm_1", "tap-2")
    limited = [envelope(429, "RATE_LIMITED", None, **{"Retry-After": "1"}) for _ in range(2)]
    http, _ = answers(*limited)
    with pytest.raises(RateLimited) as still:
        AppClient("http://herald.test", "jwt", http=http, retries=1, sleep=lambda _: None).unread_count()
    assert still.value.retry_after_s == 1


def test_a_partner_reads_an_event_by_its_escaped_id_and_lists_its_events_page_after_page() -> None:
    http, seen = answers(
        envelope(200, data={"event_id": "ci/run 7", "status": "succeeded"}),
        envelope(200, data={"items": [{"event_id": "e3"}, {"event_id": "e2"}], "next_page_token": "t2"}),
        envelope(200, data={"items": [{"event_id": "e1"}], "next_page_token": ""}),
    )
    client = ServiceClient("http://herald.test", "hk_x", http=http)
    assert client.get_event("ci/run 7")["status"] == "succeeded"
    assert [e["event_id"] for e in client.list_events(status="failed", page_size=2)] == ["e3", "e2", "e1"]
    assert seen[0].url.raw_path == b"/events/external/ci%2Frun%207"
    assert [dict(r.url.params) for r in seen[1:]] == [
        {"status": "failed", "page_size": "2"},
        {"status": "failed", "page_size": "2", "page_token": "t2"},
    ]
