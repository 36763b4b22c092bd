"""JWTs for tests, signed with the local secret unless told otherwise."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import jwt

from herald_dev.local_identity import LOCAL_JWT_SECRET


def make_token(
    user_id: str = "10002",
    app_code: str = "lalu",
    ttl: int = 600,
    secret: str = LOCAL_JWT_SECRET,
    **claims: Any,
) -> str:
    now = int(time.time())
    body: dict[str, Any] = {"sub": user_id, "app_code": app_code, "iat": now, "exp": now + ttl, **claims}
    return jwt.encode(body, secret, algorithm="HS256")


def unsigned_token(user_id: str = "10002", app_code: str = "lalu") -> str:
    """An `alg: none` token: a forgery every verifier must refuse."""

    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    now = int(time.time())
    claims = {"sub": user_id, "app_code": app_code, "exp": now + 600}
    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}."
