"""An owner service on loopback, written for the tests: it keeps its own truth about its business ids,
checks every request's Standard Webhooks signature by the spec (not with Herald's code), answers Herald's
callbacks idempotently by `webhook-id`, and misbehaves on request (a 5xx, a refusal, a stall)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from herald_dev.fakes._server import Dribble, LoopbackServer, Request, Response

DECISIONS = {"accept": "accepted", "reject": "rejected"}
# A valid body for each owner-service route: the auth and tenant matrices call every route with one.
ROUTE_BODIES: dict[tuple[str, str], dict[str, Any]] = {
    ("PUT", "/internal/v1/confirms/owners/{business_type}"): {
        "callback_url": "http://127.0.0.1:9/callback",
        "fact_url": "http://127.0.0.1:9/fact",
        "subtypes": ["join"],
    },
    ("POST", "/internal/v1/confirms/owners/{business_type}/rotate-secret"): {"app_code": "lalu"},
    ("POST", "/internal/v1/confirms"): {
        "business_type": "group_join",
        "business_subtype": "join",
        "business_id": "g1",
        "source_event_id": "e1",
        "sender_user_id": "10003",
        "receiver_user_id": "10004",
        "message_text": "join?",
    },
    ("POST", "/internal/v1/confirms/cancel"): {"business_type": "group_join", "business_id": "g1"},
}


def signed_by(secret: str, headers: dict[str, str], body: bytes, tolerance_s: int = 300) -> bool:
    """The Standard Webhooks check an owner makes: HMAC-SHA256 of `id.timestamp.body` under the base64
    secret after `whsec_`, one of the space-separated `v1,<base64>` signatures, a timestamp within 5 minutes."""
    msg_id, stamp = headers.get("webhook-id", ""), headers.get("webhook-timestamp", "")
    if not msg_id or not stamp.isdigit() or abs(time.time() - int(stamp)) > tolerance_s:
        return False
    key = base64.b64decode(secret.removeprefix("whsec_"))
    expected = base64.b64encode(hmac.new(key, f"{msg_id}.{stamp}.".encode() + body, hashlib.sha256).digest())
    return any(hmac.compare_digest(part.encode(), b"v1," + expected) for part in headers["webhook-signature"].split())


@dataclass
class Call:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None
    query: dict[str, str]
    verified: bool
    answered: int = 0


@dataclass
class LoopbackOwner:
    secret: str = ""
    facts: dict[str, str] = field(default_factory=dict)  # business_id -> pending | accepted | ...
    # next answers: "500", "refuse:<reason>", "stall", "huge", "drip" (a byte every `drip_s`)
    faults: list[str] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    answers: dict[str, tuple[int, Any]] = field(default_factory=dict)  # webhook-id -> the answer given
    stall_s: float = 8.0
    drip_s: float = 2.0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._server = LoopbackServer(self._handle)

    @property
    def url(self) -> str:
        return self._server.url

    def start(self) -> LoopbackOwner:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop()

    def registration(self, **overrides: Any) -> dict[str, Any]:
        return {
            "callback_url": f"{self.url}/herald/callback",
            "fact_url": f"{self.url}/herald/fact",
            "subtypes": ["join"],
            **overrides,
        }

    def effects(self, business_id: str) -> list[Call]:
        """The callbacks that changed something at this owner for `business_id` (not replays)."""
        return [c for c in self.calls if c.body and c.body["confirm"]["business_id"] == business_id and c.answered]

    def _handle(self, request: Request) -> Response:
        headers = request.headers
        signed = (
            request.body if request.method == "POST" else f"GET {request.target}".encode()
        )  # the spec'd GET content
        verified = bool(self.secret) and signed_by(self.secret, headers, signed)
        body = request.json() if request.method == "POST" else None
        call = Call(request.method, request.path, headers, body, request.query, verified)
        with self._lock:
            self.calls.append(call)
            if not verified:
                return 401, {"error": "bad signature"}, "application/json"
            fault = self.faults.pop(0) if self.faults else ""
        if fault == "stall":
            time.sleep(self.stall_s)  # the sleep is the behaviour: an owner that stalls
        with self._lock:
            if fault == "500":
                return 500, {"error": "owner down"}, "application/json"
            if fault.startswith("refuse:"):
                return 409, {"reason": fault.removeprefix("refuse:")}, "application/json"
            if fault == "drip":
                return 200, Dribble(b'{"state": "accepted"}', self.drip_s), "application/json"
            if fault == "huge":
                return 200, {"state": "accepted", "pad": "x" * 200_000}, "application/json"
            if request.method == "GET":
                state = self.facts.get(request.query.get("business_id", ""))
                return (200, {"state": state}, "application/json") if state else (404, {}, "application/json")
            return self._callback(call, headers["webhook-id"])

    def _callback(self, call: Call, webhook_id: str) -> Response:
        if webhook_id in self.answers:  # a retry of a call already carried out: the same answer, no new effect
            status, answer = self.answers[webhook_id]
            return status, answer, "application/json"
        assert call.body is not None
        business_id = call.body["confirm"]["business_id"]
        state = self.facts.get(business_id, "pending")
        if state == "pending":
            state = DECISIONS[call.body["action"]] if call.body["type"] == "confirm.action" else "expired"
            self.facts[business_id] = state
        call.answered = 200
        self.answers[webhook_id] = (200, {"state": state, "decided_at_ms": int(time.time() * 1000)})
        return 200, self.answers[webhook_id][1], "application/json"
