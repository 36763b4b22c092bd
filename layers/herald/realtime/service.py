"""Connection bookkeeping and fan-out, independent of API Gateway and DynamoDB.

A user holds at most `max_per_user` connections: a new one past the cap closes the user's oldest, which is
told why first (a reconnecting tab is never refused for the ones it left behind). Connecting and every
client frame count against the user's rate limit. A tenant the stack does not serve (disabled, or not
registered where it must be) is checked on connect, on every frame and on every push: its open connections
are told why and closed, and nothing more is written for them. A user's connections are pushed to side by side, so one
user's many tabs cost one push's latency, not one each, for the users after it in the batch.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from herald.auth.models import Principal
from herald.clock import Clock, now_ms
from herald.errors import PermissionDenied
from herald.realtime.models import Connection


class ConnectionRegistry(Protocol):
    def add(self, connection: Connection) -> None: ...

    def get(self, connection_id: str) -> Connection | None: ...

    def remove(self, connection_id: str) -> None: ...

    def for_user(self, app_code: str, user_id: str) -> list[Connection]: ...

    def for_tenant(self, app_code: str) -> list[Connection]: ...


class ConnectionPusher(Protocol):
    def send(self, connection_id: str, data: bytes) -> bool:
        """Deliver to one connection; False when the connection is gone."""
        ...

    def close(self, connection_id: str) -> None:
        """Close one connection (gone already is fine)."""
        ...


class UserAdmission(Protocol):
    def check(self, app_code: str, user_id: str) -> None:
        """Count one request of the user; RateLimited when it is over its limit."""
        ...


# Sent to a connection whose token expired, just before it is closed: reconnect with a fresh token.
TOKEN_EXPIRED = {"type": "token_expired", "message": "your token expired: reconnect with a fresh one"}
# Sent to a user's oldest connection when a newer one passes the per-user cap, just before it is closed.
TOO_MANY_CONNECTIONS = {
    "type": "connection_closed",
    "reason": "too_many_connections",
    "message": "closed: this user opened more connections than it may hold; the newest ones stay",
}
# Sent to a connection of a tenant the stack no longer serves, with the refusal's reason (`tenant_disabled`,
# `tenant_unknown`), just before it is closed.
TENANT_CLOSED = {
    "type": "connection_closed",
    "message": "closed: this app is not served now (its tenant is disabled or not registered)",
}
_PUSHES = ThreadPoolExecutor(max_workers=16, thread_name_prefix="ws-push")


class Realtime:
    def __init__(
        self,
        registry: ConnectionRegistry,
        pusher: ConnectionPusher,
        ttl_seconds: int,
        admission: UserAdmission,
        admit: Callable[[str], None],
        max_per_user: int = 10,
        clock: Clock = now_ms,
    ) -> None:
        """`admit` refuses a tenant the stack does not serve (PermissionDenied, with its reason)."""
        self._registry = registry
        self._pusher = pusher
        self._ttl_seconds = ttl_seconds
        self._admission = admission
        self._admit = admit
        self._max_per_user = max_per_user
        self._clock = clock

    def connect(self, connection_id: str, principal: Principal) -> Connection:
        """Register a connection (PermissionDenied for a tenant the stack refuses, RateLimited when the user is
        over its limit; either way nothing registered)."""
        self._admit(principal.app_code)
        self._admission.check(principal.app_code, principal.user_id)
        now = self._clock()
        connection = Connection(
            connection_id=connection_id,
            app_code=principal.app_code,
            user_id=principal.user_id,
            connected_at_ms=now,
            expires_at=now // 1000 + self._ttl_seconds,
            token_expires_at_ms=principal.expires_at_ms,
        )
        self._registry.add(connection)
        self._keep_newest(connection)
        return connection

    def _keep_newest(self, newest: Connection) -> None:
        held = [c for c in self._registry.for_user(newest.app_code, newest.user_id) if c != newest]
        held.sort(key=lambda c: (c.connected_at_ms, c.connection_id))
        for oldest in held[: max(0, len(held) + 1 - self._max_per_user)]:
            self._close(oldest.connection_id, TOO_MANY_CONNECTIONS)

    def _close(self, connection_id: str, why: Mapping[str, Any]) -> None:
        """Tell the connection why, close it and forget it."""
        self.send(connection_id, why)
        self._pusher.close(connection_id)
        self._registry.remove(connection_id)

    def admit_frame(self, connection_id: str) -> None:
        """A client frame of a refused tenant closes its connection (PermissionDenied, nothing counted); any other
        counts against its user's limit (RateLimited when over it)."""
        connection = self._registry.get(connection_id)
        if connection is None:
            return
        try:
            self._admit(connection.app_code)
        except PermissionDenied as refused:
            self._close_all([connection], refused.reason or "forbidden")
            raise
        self._admission.check(connection.app_code, connection.user_id)

    def close_tenant(self, app_code: str, reason: str) -> int:
        """Close every open connection of the tenant, each told `reason` first; how many were closed."""
        connections = self._registry.for_tenant(app_code)
        self._close_all(connections, reason)
        return len(connections)

    def _close_all(self, connections: list[Connection], reason: str) -> None:
        """Close the connections of a refused tenant side by side, each told the refusal's reason."""
        why = {**TENANT_CLOSED, "reason": reason}
        list(_PUSHES.map(lambda connection: self._close(connection.connection_id, why), connections))

    def disconnect(self, connection_id: str) -> None:
        self._registry.remove(connection_id)

    def push_to_user(self, app_code: str, user_id: str, message: Mapping[str, Any]) -> int:
        """Send to every live connection of the user; forget the gone ones, and close those whose token
        expired (a connection never outlives its token), or all of them when the stack refuses the tenant.
        Returns how many received it."""
        data = json.dumps(message, separators=(",", ":")).encode()
        now = self._clock()
        connections = self._registry.for_user(app_code, user_id)
        try:
            self._admit(app_code)
        except PermissionDenied as refused:
            self._close_all(connections, refused.reason or "forbidden")
            return 0
        return sum(_PUSHES.map(lambda connection: self._push_one(connection, data, now), connections))

    def _push_one(self, connection: Connection, data: bytes, now: int) -> int:
        if connection.token_expired(now):
            self._close(connection.connection_id, TOKEN_EXPIRED)
            return 0
        if self._pusher.send(connection.connection_id, data):
            return 1
        self._registry.remove(connection.connection_id)
        return 0

    def send(self, connection_id: str, message: Mapping[str, Any]) -> bool:
        return self._pusher.send(connection_id, json.dumps(message, separators=(",", ":")).encode())
