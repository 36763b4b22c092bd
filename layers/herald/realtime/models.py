from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Connection:
    connection_id: str
    app_code: str
    user_id: str
    connected_at_ms: int
    expires_at: int  # epoch seconds: the table's TTL attribute
    # When the token it connected with expires: from then on it gets no push, only `token_expired` and a close.
    token_expires_at_ms: int | None = None

    def token_expired(self, now_ms: int) -> bool:
        return self.token_expires_at_ms is not None and self.token_expires_at_ms <= now_ms
