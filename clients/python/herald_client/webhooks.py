"""Checking Herald's status webhooks (and owner callbacks) on the receiving end: Standard Webhooks signatures,
`webhook-id`, `webhook-timestamp` and `webhook-signature` (`v1,<base64 HMAC-SHA256>`, one per live secret)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from typing import Any

TOLERANCE_S = 5 * 60


class WebhookVerificationError(Exception):
    """Not signed by the secret given, or signed too long ago (or too far ahead) to trust."""


def verify_webhook(
    secret: str, headers: Mapping[str, str], body: bytes, *, now_s: float | None = None
) -> dict[str, Any]:
    """The posted document (`{"type", "timestamp", "data"}`) if `secret` (`whsec_...`) signed `body` within five
    minutes of now; WebhookVerificationError otherwise. Keep each `webhook-id` you handled: a notice may come twice."""
    lowered = {name.lower(): value for name, value in headers.items()}
    msg_id, stamp = lowered.get("webhook-id", ""), lowered.get("webhook-timestamp", "")
    if not msg_id or not stamp.isdigit():
        raise WebhookVerificationError("missing webhook-id or webhook-timestamp")
    if abs((time.time() if now_s is None else now_s) - int(stamp)) > TOLERANCE_S:
        raise WebhookVerificationError("webhook-timestamp is outside the tolerance")
    key = base64.b64decode(secret.removeprefix("whsec_"))
    expected = base64.b64encode(hmac.new(key, f"{msg_id}.{stamp}.".encode() + body, hashlib.sha256).digest())
    for candidate in lowered.get("webhook-signature", "").split():
        version, _, signature = candidate.partition(",")
        if version == "v1" and hmac.compare_digest(signature.encode(), expected):
            document = json.loads(body)
            if not isinstance(document, dict):
                raise WebhookVerificationError("the body is not a JSON object")
            return document
    raise WebhookVerificationError("no signature matches")
