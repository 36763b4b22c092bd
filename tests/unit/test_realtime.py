"""Pushes reach every connection of one user, and gone connections are forgotten."""

from __future__ import annotations

import json

from herald.auth.models import Principal
from herald.realtime.service import Realtime
from tests.support.fakes import InMemoryConnectionRegistry, InMemoryPusher


def _realtime() -> tuple[Realtime, InMemoryConnectionRegistry, InMemoryPusher]:
    registry, pusher = InMemoryConnectionRegistry(), InMemoryPusher()
    return Realtime(registry, pusher, ttl_seconds=60, clock=lambda: 10_000), registry, pusher


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
    realtime = Realtime(registry, pusher, ttl_seconds=3600, clock=lambda: clock[0])
    realtime.connect("short", Principal("10002", "lalu", expires_at_ms=20_000))
    realtime.connect("long", Principal("10002", "lalu", expires_at_ms=900_000))
    clock[0] = 20_000
    assert realtime.push_to_user("lalu", "10002", {"type": "inbox_updated"}) == 1
    frames = [(cid, json.loads(data)["type"]) for cid, data in pusher.sent]
    assert frames == [("short", "token_expired"), ("long", "inbox_updated")]
    assert pusher.closed == ["short"] and set(registry.connections) == {"long"}
