"""Connection bookkeeping and fan-out, independent of API Gateway and DynamoDB."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol

from herald.auth.models import Principal
from herald.clock import Clock, now_ms
from herald.realtime.models import Connection


class ConnectionRegistry(Protocol):
    def add(self, connection: Connection) -> None: ...

    def remove(self, connection_id: str) -> None: ...

    def for_user(self, app_code: str, user_id: str) -> list[Connection]: ...


class ConnectionPusher(Protocol):
    def send(self, connection_id: str, data: bytes) -> bool:
        """Deliver to one connection; False when the connection is gone."""
        ...

    def close(self, connection_id: str) -> None:
        """Close one connection (gone already is fine)."""
        ...


# Sent to a connection whose token expired, just before it is closed: reconnect with a fresh token.
TOKEN_EXPIRED = {"type": "token_expired", "message": "your token expired: reconnect with a fresh one"}


class Realtime:
    def __init__(
        self,
        registry: ConnectionRegistry,
        pusher: ConnectionPusher,
        ttl_seconds: int,
        clock: Clock = now_ms,
    ) -> None:
        self._registry = registry
        self._pusher = pusher
        self._ttl_seconds = ttl_seconds
        self._clock = clock

    def connect(self, connection_id: str, principal: Principal) -> Connection:
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
        return connection

    def disconnect(self, connection_id: str) -> None:
        self._registry.remove(connection_id)

    def push_to_user(self, app_code: str, user_id: str, message: Mapping[str, Any]) -> int:
        """Send to every live connection of the user; forget the gone ones, and close those whose token
        expired (a connection never outlives its token). Returns how many received it."""
        data = json.dumps(message, separators=(",", ":")).encode()
        delivered = 0
        now = self._clock()
        for connection in self._registry.for_user(app_code, user_id):
            if connection.token_expired(now):
                self.send(connection.connection_id, TOKEN_EXPIRED)
                self._pusher.close(connection.connection_id)
                self._registry.remove(connection.connection_id)
            elif self._pusher.send(connection.connection_id, data):
                delivered += 1
            else:
                self._registry.remove(connection.connection_id)
        return delivered

    def send(self, connection_id: str, message: Mapping[str, Any]) -> bool:
        return self._pusher.send(connection_id, json.dumps(message, separators=(",", ":")).encode())
