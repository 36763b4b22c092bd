"""In-memory adapters: the same ports as the Dynamo* ones, for domain tests without sockets."""

from __future__ import annotations

import dataclasses

from herald.auth.models import ServiceKeyRecord
from herald.errors import NotFound
from herald.realtime.models import Connection


class InMemoryServiceKeyStore:
    def __init__(self) -> None:
        self.keys: dict[str, ServiceKeyRecord] = {}
        self.reads = 0

    def get_key(self, key_id: str) -> ServiceKeyRecord | None:
        self.reads += 1
        return self.keys.get(key_id)

    def put_key(self, key: ServiceKeyRecord) -> None:
        assert key.key_id not in self.keys
        self.keys[key.key_id] = key

    def keys_of(self, service_id: str) -> list[ServiceKeyRecord]:
        return [key for key in self.keys.values() if key.service_id == service_id]

    def all_keys(self) -> list[ServiceKeyRecord]:
        return list(self.keys.values())

    def revoke(self, key_id: str, at_ms: int) -> ServiceKeyRecord:
        key = self.keys.get(key_id)
        if key is None:
            raise NotFound(key_id)
        if key.revoked_at_ms is None or key.revoked_at_ms > at_ms:
            key = self.keys[key_id] = dataclasses.replace(key, revoked_at_ms=at_ms)
        return key

    def touch(self, key_id: str, at_ms: int) -> None:
        self.keys[key_id] = dataclasses.replace(self.keys[key_id], last_used_at_ms=at_ms)


class InMemoryConnectionRegistry:
    def __init__(self) -> None:
        self.connections: dict[str, Connection] = {}

    def add(self, connection: Connection) -> None:
        self.connections[connection.connection_id] = connection

    def remove(self, connection_id: str) -> None:
        self.connections.pop(connection_id, None)

    def for_user(self, app_code: str, user_id: str) -> list[Connection]:
        return [c for c in self.connections.values() if (c.app_code, c.user_id) == (app_code, user_id)]


class InMemoryPusher:
    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes]] = []
        self.gone: set[str] = set()
        self.closed: list[str] = []

    def send(self, connection_id: str, data: bytes) -> bool:
        if connection_id in self.gone:
            return False
        self.sent.append((connection_id, data))
        return True

    def close(self, connection_id: str) -> None:
        self.closed.append(connection_id)
        self.gone.add(connection_id)
