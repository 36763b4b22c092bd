"""The auth matrix's tenant and ownership cases over HTTP on the local cloud (moto and DynamoDB Local): a key
of another tenant is refused on every tenant-scoped service route, and another engine on every route of a
session it did not create; neither learns anything about the owner's data."""

from __future__ import annotations

import re
import secrets
from typing import Any

import httpx
import pytest

from herald.auth.dynamo import DynamoServiceKeyStore
from herald.auth.service_keys import ServiceKeys
from tests.functional.test_auth_matrix import TENANT_FREE
from tests.support.local_cloud import LocalCloudProcess
from tests.support.owner import ROUTE_BODIES
from tests.support.tokens import make_token
from tests.support.turns import APPROVAL_BODY, APPROVAL_ROUTE

pytestmark = pytest.mark.integration
MEMBER = "member-" + secrets.token_hex(3)


def _keys(cloud: LocalCloudProcess) -> ServiceKeys:
    return ServiceKeys(DynamoServiceKeyStore(cloud.resource("ServiceKeysTable"), cloud.client("dynamodb")))


def _service_operations(cloud: LocalCloudProcess) -> list[tuple[str, str, bool]]:
    paths = httpx.get(f"{cloud.http_url}/api/v1/openapi.json", timeout=30).json()["paths"]
    return [
        (method.upper(), path, "requestBody" in spec)
        for path, methods in paths.items()
        for method, spec in methods.items()
        if not path.startswith("/api/v1/")
    ]


def test_other_tenants_and_other_engines_are_refused_on_every_service_route(cloud: LocalCloudProcess) -> None:
    keys = _keys(cloud)
    owner_engine, _ = keys.create_key("engine-" + secrets.token_hex(3), ["/internal/v1", "/internal/v1/confirms/owner"])
    session_id = "s-" + secrets.token_hex(4)
    body = {"app_code": "lalu", "members": {MEMBER: "owner"}, "agents": ["po"], "status": "active"}
    http = httpx.Client(base_url=cloud.http_url, timeout=30)
    assert http.put(f"/internal/v1/sessions/{session_id}", json=body, headers=_bearer(owner_engine)).is_success
    message = http.post(
        f"/api/v1/sessions/{session_id}/agents/po/messages",
        json={"text": "SECRET-TURN"},
        headers=_bearer(make_token(MEMBER)),
    )
    assert message.status_code == 202, message.text
    ids = {
        "session_id": session_id,
        "agent": "po",
        "turn_id": "turn_" + "0" * 32,
        "step": "finish",
        "approval_id": "ap-1",
        "confirm_id": "cfm_" + "0" * 32,
        "business_type": "group_join",
    }
    bodies: dict[str, Any] = {
        "/internal/v1/inbox/notifications": {
            "user_id": "10002",
            "kind": "QUESTION_PENDING",
            "session_id": "s",
            "tail": "t",
            "title": "t",
        },
        "/internal/v1/inbox/notifications/resolve": {
            "user_id": "10002",
            "kind": "QUESTION_PENDING",
            "session_id": "s",
            "tail": "t",
        },
        "/internal/v1/sessions/{session_id}": {**body, "members": {"mallory": "owner"}},
        **{path: body for (_, path), body in ROUTE_BODIES.items()},
        APPROVAL_ROUTE[1]: APPROVAL_BODY,
    }
    other_tenant, _ = keys.create_key(
        "acme-" + secrets.token_hex(3), ["/internal/v1", "/internal/v1/confirms/owner"], app_codes=["acme"]
    )
    other_engine, _ = keys.create_key("intruder-" + secrets.token_hex(3), ["/internal/v1/sessions"])
    checked = 0
    for method, path, has_body in _service_operations(cloud):
        if path in TENANT_FREE:
            continue
        url = re.sub(r"\{(\w+)\}", lambda m: ids[m.group(1)], path)
        payload = bodies.get(path) if has_body else None
        as_other_tenant = http.request(
            method,
            url if payload else f"{url}?app_code=lalu",
            json={**payload, "app_code": "lalu"} if payload else None,
            headers=_bearer(other_tenant),
        )
        assert as_other_tenant.status_code == 403, (path, as_other_tenant.text)
        assert as_other_tenant.json()["data"]["reason"] == "tenant_not_allowed", (path, as_other_tenant.text)
        assert "SECRET-TURN" not in as_other_tenant.text and MEMBER not in as_other_tenant.text
        if path.startswith("/internal/v1/sessions/"):
            as_other_engine = http.request(method, url, json=payload, headers=_bearer(other_engine))
            assert as_other_engine.status_code == 403, (path, as_other_engine.text)
            assert as_other_engine.json()["data"]["reason"] == "session_of_another_service", path
            assert "SECRET-TURN" not in as_other_engine.text and MEMBER not in as_other_engine.text
        checked += 1
    assert checked >= 5
    events = http.get(f"/api/v1/sessions/{session_id}/events", headers=_bearer(make_token("mallory")))
    assert events.status_code == 403  # the intruder's members were never written


def _bearer(credential: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {credential}"}
