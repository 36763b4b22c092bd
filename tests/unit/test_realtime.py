"""Pushes reach every connection of one user, and gone connections are forgotten."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from herald.auth.models import Principal
from herald.errors import RateLimited
from herald.realtime.handlers import handle_websocket_event
from herald.realtime.service import TENANT_CLOSED, TOO_MANY_CONNECTIONS, Realtime
from herald.tenants.models import TenantDisabled
from tests.support.fakes import InMemoryConnectionRegistry, InMemoryPusher, InMemoryUserAdmission


def admit_every_tenant(app_code: str) -> None:
    return None


class Verifier:
    def verify(self, token: str) -> Principal:
        return Principal("10002", "lalu")


VERIFIER: Any = Verifier()  # a verifier's one method, without the JWT machinery


def event(route: str, connection_id: str, **extra: Any) -> dict[str, Any]:
    context = {"routeKey": route, "connectionId": connection_id}
    return {"requestContext": context, "queryStringParameters": {"token": "t"}, **extra}


def _realtime() -> tuple[Realtime, InMemoryConnectionRegistry, InMemoryPusher]:
    registry, pusher = InMemoryConnectionRegistry(), InMemoryPusher()
    return (
        Realtime(
            registry,
            pusher,
            ttl_seconds=60,
            admission=InMemoryUserAdmission(),
            admit=admit_every_tenant,
            clock=lambda: 10_000,
        ),
        registry,
        pusher,
    )


def test_connection_expires_after_its_ttl() -> None:
    realtime, registry, _ = _realtime()
    connection = realtime.connect("c1", Principal("10002", "lalu"))
    assert registry.connections["c1"] == connection
    assert connection.expires_at == 10 + 60


def test_push_reaches_each_connection_of_the_user_and_no_other() -> None:
    realtime, _, pusher = _realtime()
    realtime.connect("a1", Principal("10002", "lalu"))
    realtime.connect("a2", Principal("10002", "lalu"))
    realtime.connect("b1", Principal("10003", "lalu"))
    realtime.connect("t1", Principal("10002", "other"))
    assert realtime.push_to_user("lalu", "10002", {"type": "x"}) == 2
    assert sorted(cid for cid, _ in pusher.sent) == ["a1", "a2"]
    assert all(json.loads(data) == {"type": "x"} for _, data in pusher.sent)


def test_gone_connection_is_removed_on_push() -> None:
    realtime, registry, pusher = _realtime()
    realtime.connect("a1", Principal("10002", "lalu"))
    realtime.connect("a2", Principal("10002", "lalu"))
    pusher.gone.add("a1")
    assert realtime.push_to_user("lalu", "10002", {"type": "x"}) == 1
    assert set(registry.connections) == {"a2"}


def test_connection_remembers_when_its_token_expires() -> None:
    realtime, _, _ = _realtime()
    connection = realtime.connect("c1", Principal("10002", "lalu", expires_at_ms=40_000))
    assert connection.token_expires_at_ms == 40_000 and connection.expires_at == 10 + 60


def test_connection_whose_token_expired_is_told_closed_and_forgotten_instead_of_pushed() -> None:
    registry, pusher = InMemoryConnectionRegistry(), InMemoryPusher()
    clock = [10_000]
    realtime = Realtime(
        registry,
        pusher,
        ttl_seconds=3600,
        admission=InMemoryUserAdmission(),
        admit=admit_every_tenant,
        clock=lambda: clock[0],
    )
    realtime.connect("short", Principal("10002", "lalu", expires_at_ms=20_000))
    realtime.connect("long", Principal("10002", "lalu", expires_at_ms=900_000))
    clock[0] = 20_000
    assert realtime.push_to_user("lalu", "10002", {"type": "inbox_updated"}) == 1
    frames = [(cid, json.loads(data)["type"]) for cid, data in pusher.sent]
    assert frames == [("short", "token_expired"), ("long", "inbox_updated")]
    assert pusher.closed == ["short"] and set(registry.connections) == {"long"}


@pytest.mark.parametrize(
    "event",
    [
        {"body": '{"n": ' + "1" * 5000 + "}"},
        {"body": "[" * 10_000 + "]" * 10_000},
        {"body": "{not json"},
        {"body": "AAEC", "isBase64Encoded": True},
        {"body": "[1, 2]"},
    ],
    ids=["5000-digits", "deep", "not-json", "binary", "not-an-object"],
)
def test_the_deployed_default_route_answers_any_malformed_frame_with_an_error_frame(event: dict[str, Any]) -> None:
    realtime, _, pusher = _realtime()
    realtime.connect("c1", Principal("10002", "lalu"))
    answer = handle_websocket_event(
        {**event, "requestContext": {"routeKey": "$default", "connectionId": "c1"}},
        verifier=VERIFIER,
        realtime=realtime,
    )
    assert answer["statusCode"] == 200
    (sent,) = [json.loads(data) for _, data in pusher.sent]
    assert sent["type"] == "error" and sent["code"] == "INVALID_ARGUMENT"


def test_a_connection_past_the_per_user_cap_closes_the_oldest_with_a_reason_frame() -> None:
    registry, pusher = InMemoryConnectionRegistry(), InMemoryPusher()
    now = [10_000]
    realtime = Realtime(
        registry,
        pusher,
        ttl_seconds=60,
        admission=InMemoryUserAdmission(),
        admit=admit_every_tenant,
        max_per_user=3,
        clock=lambda: now[0],
    )
    for n in range(5):
        now[0] += 1
        realtime.connect(f"c{n}", Principal("10002", "lalu"))
    realtime.connect("other", Principal("10003", "lalu"))  # another user's connections are not counted
    assert sorted(registry.connections) == ["c2", "c3", "c4", "other"]
    assert pusher.closed == ["c0", "c1"]
    told = [(cid, json.loads(data)) for cid, data in pusher.sent]
    assert told == [("c0", TOO_MANY_CONNECTIONS), ("c1", TOO_MANY_CONNECTIONS)]


def test_connecting_and_frames_count_against_the_user_rate_limit() -> None:
    registry, pusher = InMemoryConnectionRegistry(), InMemoryPusher()
    admission = InMemoryUserAdmission(limit=2)
    realtime = Realtime(
        registry, pusher, ttl_seconds=60, admission=admission, admit=admit_every_tenant, clock=lambda: 10_000
    )
    realtime.connect("c1", Principal("10002", "lalu"))
    realtime.admit_frame("c1")
    with pytest.raises(RateLimited):
        realtime.connect("c2", Principal("10002", "lalu"))
    assert "c2" not in registry.connections  # refused before anything was written
    with pytest.raises(RateLimited):
        realtime.admit_frame("c1")


def test_a_rate_limited_connect_is_refused_with_429_and_a_limited_frame_gets_an_error_frame() -> None:
    registry, pusher = InMemoryConnectionRegistry(), InMemoryPusher()
    realtime = Realtime(
        registry,
        pusher,
        ttl_seconds=60,
        admission=InMemoryUserAdmission(limit=1),
        admit=admit_every_tenant,
        clock=lambda: 1,
    )

    assert handle_websocket_event(event("$connect", "c1"), VERIFIER, realtime)["statusCode"] == 200
    assert handle_websocket_event(event("$connect", "c2"), VERIFIER, realtime)["statusCode"] == 429
    handle_websocket_event(event("$default", "c1", body='{"action":"ping"}'), VERIFIER, realtime)
    (frame,) = [json.loads(data) for _, data in pusher.sent]
    assert frame["type"] == "error" and frame["code"] == "RATE_LIMITED"


def test_a_users_connections_are_pushed_side_by_side() -> None:
    """Ten connections whose sends each wait for the others: sequential sends would never finish."""
    registry = InMemoryConnectionRegistry()
    barrier = threading.Barrier(10, timeout=5)

    class Waiting(InMemoryPusher):
        def send(self, connection_id: str, data: bytes) -> bool:
            barrier.wait()  # raises BrokenBarrierError unless all ten sends run at once
            return super().send(connection_id, data)

    pusher = Waiting()
    realtime = Realtime(
        registry, pusher, ttl_seconds=60, admission=InMemoryUserAdmission(), admit=admit_every_tenant, clock=lambda: 1
    )
    for n in range(10):
        realtime.connect(f"c{n}", Principal("10002", "lalu"))
    assert realtime.push_to_user("lalu", "10002", {"type": "inbox_updated"}) == 10


class Switch:
    """The tenant registry's verdict, switched by a test: `disabled` tenants are refused as the registry does."""

    def __init__(self) -> None:
        self.disabled: set[str] = set()

    def admit(self, app_code: str) -> None:
        if app_code in self.disabled:
            raise TenantDisabled(app_code)


def _gated() -> tuple[Realtime, InMemoryConnectionRegistry, InMemoryPusher, InMemoryUserAdmission, Switch]:
    registry, pusher, admission, switch = (
        InMemoryConnectionRegistry(),
        InMemoryPusher(),
        InMemoryUserAdmission(),
        Switch(),
    )
    realtime = Realtime(registry, pusher, ttl_seconds=60, admission=admission, admit=switch.admit, clock=lambda: 1)
    return realtime, registry, pusher, admission, switch


def _frames(pusher: InMemoryPusher, connection_id: str) -> list[dict[str, Any]]:
    return [json.loads(data) for cid, data in pusher.sent if cid == connection_id]


def test_a_frame_on_an_open_connection_of_a_disabled_tenant_closes_it_with_a_reason_and_no_pong() -> None:
    realtime, registry, pusher, admission, switch = _gated()
    assert handle_websocket_event(event("$connect", "c1"), VERIFIER, realtime)["statusCode"] == 200
    counted = dict(admission.counted)
    switch.disabled.add("lalu")

    answer = handle_websocket_event(event("$default", "c1", body='{"action":"ping"}'), VERIFIER, realtime)

    assert answer["statusCode"] == 200
    assert _frames(pusher, "c1") == [TENANT_CLOSED | {"reason": "tenant_disabled"}]
    assert pusher.closed == ["c1"] and "c1" not in registry.connections
    assert admission.counted == counted  # no rate-limit write for a refused tenant


def test_a_push_to_a_user_of_a_disabled_tenant_closes_its_connections_instead() -> None:
    realtime, registry, pusher, _, switch = _gated()
    realtime.connect("a1", Principal("10002", "lalu"))
    realtime.connect("a2", Principal("10002", "lalu"))
    switch.disabled.add("lalu")

    assert realtime.push_to_user("lalu", "10002", {"type": "inbox_updated", "unreadCount": 1}) == 0

    assert sorted(pusher.closed) == ["a1", "a2"] and not registry.connections
    for connection_id in ("a1", "a2"):
        assert _frames(pusher, connection_id) == [TENANT_CLOSED | {"reason": "tenant_disabled"}]


def test_closing_a_tenant_closes_every_open_connection_of_it_with_a_reason_and_no_other() -> None:
    realtime, registry, pusher, _, _ = _gated()
    for connection_id, user, app in (("a1", "10002", "lalu"), ("a2", "10003", "lalu"), ("t1", "10002", "other")):
        realtime.connect(connection_id, Principal(user, app))

    assert realtime.close_tenant("lalu", "tenant_disabled") == 2

    assert sorted(pusher.closed) == ["a1", "a2"] and set(registry.connections) == {"t1"}
    assert _frames(pusher, "a1") == [TENANT_CLOSED | {"reason": "tenant_disabled"}] and not _frames(pusher, "t1")


def test_a_connect_for_a_tenant_the_stack_refuses_is_403_and_opens_no_connection() -> None:
    realtime, registry, _, admission, switch = _gated()
    switch.disabled.add("lalu")

    answer = handle_websocket_event(event("$connect", "c1"), VERIFIER, realtime)
    assert answer["statusCode"] == 403
    assert not registry.connections and not admission.counted
    switch.disabled.clear()
    assert handle_websocket_event(event("$connect", "c2"), VERIFIER, realtime)["statusCode"] == 200
