"""Opaque page tokens: a DynamoDB key, encoded, and checked on the way back in so a token can never
widen a query beyond what its caller may see."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

from herald.errors import InvalidArgument

MAX_TOKEN_LENGTH = 1024


def encode_token(cursor: Mapping[str, Any] | None) -> str:
    if not cursor:
        return ""
    raw = json.dumps(dict(cursor), separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_token(token: str, expected: Mapping[str, Any]) -> dict[str, Any] | None:
    """The cursor in `token`; every key in `expected` must hold exactly that value (the caller's scope)."""
    if not token:
        return None
    if len(token) > MAX_TOKEN_LENGTH:
        raise InvalidArgument("page_token is malformed")
    try:
        cursor = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError) as exc:
        raise InvalidArgument("page_token is malformed") from exc
    if not isinstance(cursor, dict) or not all(isinstance(v, str | int) for v in cursor.values()):
        raise InvalidArgument("page_token is malformed")
    for key, value in expected.items():
        if cursor.get(key) != value:
            raise InvalidArgument("page_token does not belong to this query")
    return cursor
