"""In-memory adapters: the same ports as the Dynamo* ones, for domain tests without sockets."""

from __future__ import annotations

from herald.auth.models import ServiceKeyRecord, ServiceRecord
from herald.realtime.models import Connection


class InMemoryServiceKeyStore:
    def __init__(self) -> None:
        self.keys: dict[str, ServiceKeyRecord] = {}
        self.services: dict[str, ServiceRecord] = {}

    def get_key(self, key_id: str) -> ServiceKeyRecord | None:
        return self.keys.get(key_id)

    def get_service(self, service_id: str) -> ServiceRecord | None:
        return self.services.get(service_id)

    def put_service(self, service: ServiceRecord) -> None:
        self.services[service.service_id] = service

    def put_key(self, key: ServiceKeyRecord) -> None:
        self.keys[key.key_id] = key


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

    def send(self, connection_id: str, data: bytes) -> bool:
        if connection_id in self.gone:
            return False
        self.sent.append((connection_id, data))
        return True
