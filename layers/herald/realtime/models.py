from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Connection:
    connection_id: str
    app_code: str
    user_id: str
    connected_at_ms: int
    expires_at: int  # epoch seconds: the table's TTL attribute
