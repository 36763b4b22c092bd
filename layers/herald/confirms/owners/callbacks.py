"""A registered owner service behind the confirm port: Herald's signed callbacks (act, expire) and the
owner's fact (a signed GET), as docs/owner-services.md describes them.

The owner's answer is `200 {"state": "pending|accepted|rejected|cancelled|expired", "decided_at_ms"?}`, or
`409 {"reason": "<named reason>"}` when it refuses. Anything else (a timeout, a 5xx, a 401 because the
secrets disagree, an unreadable body) is the owner being unavailable: the confirm keeps its lease and is
repaired later from the owner's fact.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Protocol
from urllib.parse import urlencode

from herald.callback_urls import CallbackTransport, EndpointUnreachable, request_target
from herald.clock import Clock, now_ms
from herald.confirms.businesses import OWNER_REFUSED, BusinessHandler, BusinessRefused, OwnerSilent
from herald.confirms.models import Action, Confirm, OwnerFact, OwnerState, view
from herald.confirms.owners.models import Registration
from herald.errors import UpstreamError
from herald.webhook_signing import get_content, sign

ACTION = "confirm.action"
EXPIRE = "confirm.expire"


class RegistrationLookup(Protocol):
    def get(self, app_code: str, business_type: str) -> Registration | None: ...


def confirm_document(confirm: Confirm) -> dict[str, Any]:
    """The confirm as a callback carries it: the client view, its text and the owner's display payload."""
    return {
        "app_code": confirm.app_code,
        **view(confirm),
        "message_text": confirm.message_text,
        "payload": confirm.payload,
    }


def command_webhook_id(confirm_id: str, command_id: str) -> str:
    """The `webhook-id` of an action: the same for every retry and repair of one command on one confirm.
    Client command ids are unique within a confirm only and may hold dots, which the signed content
    `id.timestamp.body` must not: the id is a digest of both (the body carries both as they are)."""
    return "cmd_" + hashlib.sha256(f"{confirm_id}\n{command_id}".encode()).hexdigest()[:40]


class RemoteOwner:
    def __init__(self, registration: Registration, transport: CallbackTransport, clock: Clock = now_ms) -> None:
        self.business_type = registration.business_type
        self._registration = registration
        self._transport = transport
        self._clock = clock

    def act(self, confirm: Confirm, action: Action, reason: str) -> OwnerFact:
        body = {
            "type": ACTION,
            "confirm": confirm_document(confirm),
            "action": str(action),
            "acting_user_id": confirm.receiver_user_id,
            "reason": reason,
            "command_id": confirm.processing_command_id,
        }
        return self._post(command_webhook_id(confirm.confirm_id, confirm.processing_command_id), body)

    def expire(self, confirm: Confirm) -> OwnerFact:
        return self._post(f"exp_{confirm.confirm_id}", {"type": EXPIRE, "confirm": confirm_document(confirm)})

    def fact(self, confirm: Confirm) -> OwnerFact:
        query = urlencode(
            {
                "business_type": confirm.business_type,
                "business_subtype": confirm.business_subtype,
                "business_id": confirm.business_id,
                "confirm_id": confirm.confirm_id,
            }
        )
        url = self._registration.spec.fact_url
        url += ("&" if "?" in url else "?") + query
        return self._answer(self._call("GET", url, f"fact_{confirm.confirm_id}_{self._clock()}", b""))

    def _post(self, msg_id: str, document: dict[str, Any]) -> OwnerFact:
        body = json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()
        return self._answer(self._call("POST", self._registration.spec.callback_url, msg_id, body))

    def _call(self, method: str, url: str, msg_id: str, body: bytes) -> tuple[int, bytes]:
        registration = self._registration
        if not registration.enabled:
            raise UpstreamError("the owner service of this confirm is disabled by an operator")
        now = self._clock()
        signed = body if method == "POST" else get_content(request_target(url))
        headers = sign(registration.secrets_at(now), msg_id, now // 1000, signed)
        if method == "POST":
            headers["content-type"] = "application/json"
        try:
            return self._transport.call(method, url, headers, body if method == "POST" else None)
        except EndpointUnreachable as exc:
            raise OwnerSilent(f"the owner service did not answer: {exc}") from exc

    @staticmethod
    def _answer(answer: tuple[int, bytes]) -> OwnerFact:
        status, raw = answer
        try:
            document = json.loads(raw) if raw else {}
        except ValueError:
            document = None
        if not isinstance(document, dict):
            raise UpstreamError(f"the owner service answered {status} with a body that is not a JSON object")
        if status == 409:
            reason = document.get("reason")
            raise BusinessRefused(reason if isinstance(reason, str) else OWNER_REFUSED, "the owner refused")
        if status != 200:
            raise UpstreamError(f"the owner service answered {status}")
        try:
            state = OwnerState(str(document.get("state")))
        except ValueError as exc:
            raise UpstreamError("the owner service answered without a known state") from exc
        decided = document.get("decided_at_ms")
        valid_time = isinstance(decided, int) and not isinstance(decided, bool) and 0 < decided < 10**13
        return OwnerFact(state, decided if valid_time else None)


class RegisteredOwners:
    """The confirm registry's directory of owner services: each call sees the registration as stored now
    (a rotated secret or a disabled owner takes effect at once)."""

    def __init__(self, store: RegistrationLookup, transport: CallbackTransport, clock: Clock = now_ms) -> None:
        self._store = store
        self._transport = transport
        self._clock = clock

    def handler(self, app_code: str, business_type: str) -> BusinessHandler | None:
        registration = self._store.get(app_code, business_type)
        return RemoteOwner(registration, self._transport, self._clock) if registration is not None else None
