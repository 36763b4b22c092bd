"""Standard Webhooks signatures (https://www.standardwebhooks.com): what Herald's callbacks carry and what an
owner service checks. The signed content is `<webhook-id>.<webhook-timestamp>.<body>`, its HMAC-SHA256 under
the secret's bytes goes in `webhook-signature` as `v1,<base64>`, one per live secret, space-separated.

A GET has no body to sign, so a captured one could be replayed with another query: for a GET the signed
content's body is the request line's method and target, `GET <path>?<query>`, exactly as sent (`get_content`).
A Standard Webhooks verifier checks it unchanged, given that string as the body."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Mapping

PREFIX = "whsec_"
TOLERANCE_S = 5 * 60
# After a rotation the old secret still signs (beside the new one) this long: the receiver deploys the new one.
ROTATION_OVERLAP_MS = 24 * 3_600_000


class InvalidSignature(Exception):
    """The request was not signed by a secret the receiver holds, or is too old or too new to trust."""


def new_secret() -> str:
    return PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def live_secrets(current: str, previous: str, previous_until_ms: int, now_ms: int) -> tuple[str, ...]:
    """The secrets a callback is signed with now: the current one, and the one it replaced while the rotation
    overlap lasts."""
    return (current, previous) if previous and now_ms < previous_until_ms else (current,)


def get_content(target: str) -> bytes:
    """What a signed GET's signature covers in place of a body: its method and its target (path and query)."""
    return f"GET {target}".encode()


def _key(secret: str) -> bytes:
    return base64.b64decode(secret.removeprefix(PREFIX))


def _signature(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    content = f"{msg_id}.{timestamp}.".encode() + body
    return base64.b64encode(hmac.new(_key(secret), content, hashlib.sha256).digest()).decode()


def sign(secrets_: tuple[str, ...], msg_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The three headers of a signed request."""
    signatures = " ".join(f"v1,{_signature(secret, msg_id, timestamp, body)}" for secret in secrets_)
    return {"webhook-id": msg_id, "webhook-timestamp": str(timestamp), "webhook-signature": signatures}


def verify(secret: str, headers: Mapping[str, str], body: bytes, now_s: int) -> str:
    """The request's `webhook-id` if `secret` signed it within the tolerance; InvalidSignature otherwise."""
    lowered = {name.lower(): value for name, value in headers.items()}
    msg_id, stamp = lowered.get("webhook-id", ""), lowered.get("webhook-timestamp", "")
    if not msg_id or not stamp.isdigit():
        raise InvalidSignature("missing webhook-id or webhook-timestamp")
    timestamp = int(stamp)
    if abs(now_s - timestamp) > TOLERANCE_S:
        raise InvalidSignature("webhook-timestamp is outside the tolerance")
    expected = _signature(secret, msg_id, timestamp, body)
    for candidate in lowered.get("webhook-signature", "").split():
        version, _, value = candidate.partition(",")
        if version == "v1" and hmac.compare_digest(value, expected):
            return msg_id
    raise InvalidSignature("no signature matches")
