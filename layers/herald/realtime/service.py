"""Connection bookkeeping and fan-out, independent of API Gateway and DynamoDB.

A user holds at most `max_per_user` connections: a new one past the cap closes the user's oldest, which is
told why first (a reconnecting tab is never refused for the ones it left behind). Connecting and every
client frame count against the user's rate limit. A user's connections are pushed to side by side, so one
user's many tabs cost one push's latency, not one each, for the users after it in the batch.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from herald.auth.models import Principal
from herald.clock import Clock, now_ms
from herald.realtime.models import Connection


class ConnectionRegistry(Protocol):
    def add(self, connection: Connection) -> None: ...

    def get(self, connection_id: str) -> Connection | None: ...

    def remove(self, connection_id: str) -> None: ...

    def for_user(self, app_code: str, user_id: str) -> list[Connection]: ...


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
_PUSHES = ThreadPoolExecutor(max_workers=16, thread_name_prefix="ws-push")


class Realtime:
    def __init__(
        self,
        registry: ConnectionRegistry,
        pusher: ConnectionPusher,
        ttl_seconds: int,
        admission: UserAdmission,
        max_per_user: int = 10,
        clock: Clock = now_ms,
    ) -> None:
        self._registry = registry
        self._pusher = pusher
        self._ttl_seconds = ttl_seconds
        self._admission = admission
        self._max_per_user = max_per_user
        self._clock = clock

    def connect(self, connection_id: str, principal: Principal) -> Connection:
        """Register a connection (RateLimited, and nothing registered, when the user is over its limit)."""
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
            self.send(oldest.connection_id, TOO_MANY_CONNECTIONS)
            self._pusher.close(oldest.connection_id)
            self._registry.remove(oldest.connection_id)

    def admit_frame(self, connection_id: str) -> None:
        """A client frame counts against its user's limit (RateLimited when over it)."""
        connection = self._registry.get(connection_id)
        if connection is not None:
            self._admission.check(connection.app_code, connection.user_id)

    def disconnect(self, connection_id: str) -> None:
        self._registry.remove(connection_id)

    def push_to_user(self, app_code: str, user_id: str, message: Mapping[str, Any]) -> int:
        """Send to every live connection of the user; forget the gone ones, and close those whose token
        expired (a connection never outlives its token). Returns how many received it."""
        data = json.dumps(message, separators=(",", ":")).encode()
        now = self._clock()
        connections = self._registry.for_user(app_code, user_id)
        return sum(_PUSHES.map(lambda connection: self._push_one(connection, data, now), connections))

    def _push_one(self, connection: Connection, data: bytes, now: int) -> int:
        if connection.token_expired(now):
            self.send(connection.connection_id, TOKEN_EXPIRED)
            self._pusher.close(connection.connection_id)
            self._registry.remove(connection.connection_id)
            return 0
        if self._pusher.send(connection.connection_id, data):
            return 1
        self._registry.remove(connection.connection_id)
        return 0

    def send(self, connection_id: str, message: Mapping[str, Any]) -> bool:
        return self._pusher.send(connection_id, json.dumps(message, separators=(",", ":")).encode())
