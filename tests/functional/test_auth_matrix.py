"""Every route of the app's own OpenAPI x every kind of wrong credential -> the documented 401/403/404, and no
response to another user or another tenant ever carries the owner's data.

The owner (bob, tenant lalu) has an invitation, a confirm, a notification and a message to an agent, each
carrying a marker; the routes are then called with those ids as somebody else."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import jwt
import pytest
from fastapi.testclient import TestClient

from herald.auth.service_keys import ServiceKeys
from herald_dev.fakes.tencent_im import FakeTencentIm
from tests.support.owner import ROUTE_BODIES
from tests.support.pipeline import ConfirmPipeline
from tests.support.tokens import make_token, unsigned_token
from tests.support.turns import APPROVAL_BODY, APPROVAL_ROUTE

OWNER, INVITER, STRANGER = "10002", "10001", "10009"
MARKERS = ("SECRET-NOTE", "SECRET-TURN")  # the owner's data


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    has_body: bool

    @property
    def kind(self) -> str:
        if self.path == "/api/v1/health":
            return "public"
        return "app" if self.path.startswith("/api/v1/") else "service"


@dataclass
class World:
    api: TestClient
    ids: dict[str, str]
    keys: dict[str, str]  # name -> service key

    def url(self, operation: Operation) -> str:
        return re.sub(r"\{(\w+)\}", lambda m: self.ids[m.group(1)], operation.path)

    def call(self, operation: Operation, headers: dict[str, str]) -> Any:
        body = BODIES.get((operation.method, operation.path)) if operation.has_body else None
        return self.api.request(operation.method, self.url(operation), json=body, headers=headers)


BODIES: dict[tuple[str, str], Any] = {
    ("POST", "/api/v1/role-invitations"): {"invitation_type": "host", "target_user_id": "10003"},
    ("POST", "/api/v1/message/action-confirms/status"): {"confirm_ids": ["{confirm_id}"]},
    ("POST", "/api/v1/message/action-confirms/{confirm_id}/accept"): {"command_id": "m-1"},
    ("POST", "/api/v1/message/action-confirms/{confirm_id}/reject"): {"command_id": "m-2", "reason": "no"},
    ("PUT", "/api/v1/inbox/preferences"): {"task_completed": False},
    ("POST", "/internal/v1/inbox/notifications"): {
        "user_id": "10003",
        "kind": "QUESTION_PENDING",
        "session_id": "s9",
        "tail": "t",
        "title": "t",
    },
    ("POST", "/internal/v1/inbox/notifications/resolve"): {
        "user_id": "10003",
        "kind": "QUESTION_PENDING",
        "session_id": "s9",
        "tail": "t",
    },
    ("POST", "/events/external"): {
        "event_id": "m-1",
        "event_type": "x",
        "data": {"title": "t", "status": "s", "target": {"receive_id": "oc_x", "receive_id_type": "chat_id"}},
    },
    ("POST", "/api/v1/sessions/{session_id}/agents/{agent}/messages"): {"text": "hi"},
    **ROUTE_BODIES,
    APPROVAL_ROUTE: APPROVAL_BODY,
    ("PUT", "/internal/v1/sessions/{session_id}"): {
        "app_code": "lalu",
        "members": {OWNER: "developer"},
        "agents": ["po"],
        "status": "active",
    },
}


def operations() -> list[Operation]:
    from herald.api.app import create_app

    found = []
    for path, methods in create_app().openapi()["paths"].items():
        for method, spec in methods.items():
            found.append(Operation(method.upper(), path, "requestBody" in spec))
    return found


OPERATIONS = operations()


@pytest.fixture
def world(
    api: TestClient, pipeline: ConfirmPipeline, fake_im: FakeTencentIm, service_keys: ServiceKeys
) -> Iterator[World]:
    owner = {"Authorization": f"Bearer {make_token(OWNER)}"}
    invitation = api.post(
        "/api/v1/role-invitations",
        json={"invitation_type": "host", "target_user_id": OWNER},
        headers={"Authorization": f"Bearer {make_token(INVITER)}"},
    ).json()["data"]
    pipeline.drain()
    confirm_id = fake_im.messages[-1]["data"]["confirm_id"]
    keys = {
        "all": service_keys.create_key(
            "everything", ["/internal/v1", "/internal/v1/confirms/owner", "/events/external"], targets=["chat_id:oc_x"]
        )[0],
        "none": service_keys.create_key("nothing", ["/internal/v1/nothing"])[0],
    }
    every = {"Authorization": f"Bearer {keys['all']}"}
    notification = api.post(
        "/internal/v1/inbox/notifications",
        json={"user_id": OWNER, "kind": "QUESTION_PENDING", "session_id": "s1", "tail": "r", "title": "SECRET-NOTE"},
        headers=every,
    ).json()["data"]
    api.put("/internal/v1/sessions/s1", json=BODIES[("PUT", "/internal/v1/sessions/{session_id}")], headers=every)
    message = api.post("/api/v1/sessions/s1/agents/po/messages", json={"text": "SECRET-TURN"}, headers=owner)
    ids = {
        "invitation_id": invitation["invitation_id"],
        "confirm_id": confirm_id,
        "notification_id": notification["notification_id"],
        "session_id": "s1",
        "agent": "po",
        "message_id": message.json()["data"]["message_id"],
        "turn_id": "turn_0123456789abcdef0123456789abcdef",
        "step": "finish",
        "approval_id": "ap-1",
        "business_type": "group_join",
        "event_id": "evt-1",
    }
    for key, body in list(BODIES.items()):  # ids inside bodies too
        if isinstance(body, dict) and "confirm_ids" in body:
            BODIES[key] = {"confirm_ids": [confirm_id]}
    yield World(api, ids, keys)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def wrong_credentials(world: World) -> dict[str, dict[str, str]]:
    expired = make_token(OWNER, ttl=-120)
    forged = jwt.encode(
        {"sub": OWNER, "app_code": "lalu", "exp": int(time.time()) + 600}, "not-the-secret", algorithm="HS256"
    )
    return {
        "none": {},
        "malformed": bearer("not-a-token"),
        "not bearer": {"Authorization": f"Basic {make_token(OWNER)}"},
        "expired": bearer(expired),
        "wrong signature": bearer(forged),
        "alg none": bearer(unsigned_token(OWNER)),
        "service key on app route": bearer(world.keys["all"]),
    }


def test_wrong_or_missing_credentials_are_refused_on_every_route(world: World) -> None:
    """One world for every route (building it is most of the cost); each failure names its route."""
    for operation in OPERATIONS:
        route = f"{operation.method} {operation.path}"
        if operation.kind == "public":
            assert world.call(operation, {}).status_code == 200, route
            continue
        if operation.kind == "app":
            for name, headers in wrong_credentials(world).items():
                response = world.call(operation, headers)
                assert response.status_code == 401, (route, name, response.text)
                assert response.json()["code"] == "UNAUTHORIZED", (route, name)
            continue
        for name, headers in {
            "none": {},
            "malformed": bearer("hk_nope"),
            "app token on service route": bearer(make_token(OWNER)),
        }.items():
            response = world.call(operation, headers)
            assert response.status_code == 401, (route, name, response.text)
        lacking = world.call(operation, bearer(world.keys["none"]))
        if operation.path in ANY_LIVE_KEY:  # a key may always ask what it is (contract §0)
            assert lacking.status_code == 200, (route, lacking.text)
            continue
        assert lacking.status_code == 403 and lacking.json()["code"] == "PERMISSION_DENIED", (route, lacking.text)


@pytest.mark.parametrize(("user", "tenant"), [(STRANGER, "lalu"), (OWNER, "other")], ids=["other user", "other tenant"])
def test_another_user_or_tenant_never_sees_the_owners_data(world: World, user: str, tenant: str) -> None:
    # A stranger never sees the owner's id either (in another tenant the same id is the caller's own).
    markers = (*MARKERS, f'"{OWNER}"') if user != OWNER else MARKERS
    for operation in [op for op in OPERATIONS if op.kind == "app"]:
        route = f"{operation.method} {operation.path}"
        response = world.call(operation, bearer(make_token(user, tenant)))
        assert response.status_code < 500, (route, response.text)
        for marker in markers:
            assert marker not in response.text, f"{route}: {marker} leaked to {user}@{tenant}: {response.text}"
        if "{" in operation.path:
            assert response.status_code in (403, 404), (route, response.text)  # somebody else's thing, by its id


ANY_LIVE_KEY = {"/internal/v1/whoami"}  # open to every live key, whatever its capabilities

# A key's identity; events name a Feishu target, and are read by the tenant recorded on each when it was accepted;
# a status webhook is the key's service's and tenant's.
TENANT_FREE = {
    "/internal/v1/whoami",
    "/events/external",
    "/events/external/{event_id}",
    "/events/external/webhook",
    "/events/external/webhook/rotate-secret",
}


def _for_tenant(operation: Operation, world: World, app_code: str) -> tuple[str, Any]:
    """The operation's URL and body, asking to act for `app_code`."""
    url = world.url(operation)
    body = BODIES.get((operation.method, operation.path)) if operation.has_body else None
    if isinstance(body, dict) and operation.path != "/events/external":
        return url, {**body, "app_code": app_code}
    return f"{url}?app_code={app_code}", body


def test_a_key_of_another_tenant_is_refused_on_every_tenant_scoped_service_route(
    world: World, service_keys: ServiceKeys
) -> None:
    key, _ = service_keys.create_key(
        "everything",
        ["/internal/v1", "/internal/v1/confirms/owner", "/events/external"],
        app_codes=["other"],
        targets=["chat_id:oc_x"],
    )
    for operation in [op for op in OPERATIONS if op.kind == "service" and op.path not in TENANT_FREE]:
        route = f"{operation.method} {operation.path}"
        url, body = _for_tenant(operation, world, "lalu")
        response = world.api.request(operation.method, url, json=body, headers=bearer(key))
        assert response.status_code == 403, (route, response.text)
        assert response.json()["data"]["reason"] == "tenant_not_allowed", (route, response.text)
        for marker in (*MARKERS, f'"{OWNER}"'):
            assert marker not in response.text, (route, response.text)


def test_another_engine_is_refused_on_every_route_of_a_session_it_did_not_create(
    world: World, service_keys: ServiceKeys
) -> None:
    key, _ = service_keys.create_key("other-engine", ["/internal/v1/sessions"])
    session_routes = [op for op in OPERATIONS if op.path.startswith("/internal/v1/sessions/")]
    assert session_routes
    for operation in session_routes:
        route = f"{operation.method} {operation.path}"
        response = world.call(operation, bearer(key))
        assert response.status_code == 403, (route, response.text)
        assert response.json()["data"]["reason"] == "session_of_another_service", (route, response.text)
