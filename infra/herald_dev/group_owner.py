"""A sample owner service for `make dev`: "join group" approvals, run on Herald's confirms with no Herald code.

A user asks to join a group (`POST /groups/{group}/join-requests {"user_id"}`); this service asks Herald for
a confirm to the group's admin; the admin accepts or declines in the app (Herald's confirm routes); Herald
calls this service back, signed; it checks the signature (Standard Webhooks) and adds the member. It keeps
its own truth (the requests and the members) and answers Herald's fact GET from it, as any owner would.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from typing import Any

import httpx

from herald.webhook_signing import InvalidSignature, get_content, verify
from herald_client import HeraldError, ServiceClient
from herald_dev.fakes._server import LoopbackServer, Request, Response

log = logging.getLogger("sample-owner")

BUSINESS_TYPE = "group_join"
GROUPS = {"night-owls": "10001"}  # group -> its admin, who approves joins
JSON = "application/json"
DECISIONS = {"accept": "accepted", "reject": "rejected"}
ACTIONS = [
    {"action": "reject", "label": "Decline", "style": "secondary"},
    {"action": "accept", "label": "Let them in", "style": "primary"},
]


class SampleGroupOwner:
    def __init__(self, herald: ServiceClient, host: str, port: int) -> None:
        self._herald = herald
        self._server = LoopbackServer(self._handle, host, port)
        self._lock = threading.Lock()
        self._secret = ""
        self._requests: dict[str, dict[str, Any]] = {}
        self._members: dict[str, set[str]] = {group: {admin} for group, admin in GROUPS.items()}
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return self._server.url

    # ------------------------------------------------------------------ its own truth, kept between runs
    def saved(self) -> dict[str, Any]:
        """The requests and members, as `make dev` keeps them in .herald/dev-data with Herald's tables."""
        with self._lock:
            members = {group: sorted(users) for group, users in self._members.items()}
            return {"requests": dict(self._requests), "members": members}

    def restore(self, saved: dict[str, Any]) -> None:
        """What `saved` kept, back before the service serves (a group no longer kept here is left out)."""
        with self._lock:
            self._requests.update(saved.get("requests", {}))
            for group, users in saved.get("members", {}).items():
                if group in self._members:
                    self._members[group].update(users)

    # ------------------------------------------------------------------ an event source of the local cloud
    def start(self, stop: threading.Event) -> None:
        self._server.start()
        self._thread = threading.Thread(target=self._register, args=(stop,), name="sample-owner", daemon=True)
        self._thread.start()

    def join(self, timeout: float) -> None:
        self._server.stop()
        if self._thread:
            self._thread.join(timeout)

    def _register(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                secret = self._herald.register_business_type(
                    BUSINESS_TYPE,
                    callback_url=f"{self.url}/herald/callback",
                    fact_url=f"{self.url}/herald/fact",
                    subtypes=["join"],
                    actions=ACTIONS,
                    default_expiry_seconds=86_400,
                )["signing_secret"]
                if secret is None:  # registered by an earlier run (tables kept in DynamoDB Local): a new secret
                    secret = self._herald.rotate_secret(BUSINESS_TYPE)["signing_secret"]
            except (HeraldError, httpx.HTTPError):
                stop.wait(0.2)  # the HTTP API is still starting
                continue
            with self._lock:
                self._secret = secret
            log.info("sample owner %s registered %r; groups: %s", self.url, BUSINESS_TYPE, GROUPS)
            return

    # ------------------------------------------------------------------ its HTTP API and Herald's callbacks
    def _handle(self, request: Request) -> Response:
        parts = [p for p in request.path.split("/") if p]
        if parts[:1] == ["herald"]:
            return self._from_herald(request, parts[1:])
        if len(parts) == 2 and parts[0] == "groups" and request.method == "GET" and parts[1] in GROUPS:
            return 200, self._group(parts[1]), JSON
        if parts[:1] == ["groups"] and parts[2:] == ["join-requests"] and request.method == "POST":
            return self._ask_to_join(parts[1], request.json())
        return 404, {"error": "no such route"}, JSON

    def _group(self, group: str) -> dict[str, Any]:
        with self._lock:
            requests = [{"request_id": rid, **r} for rid, r in self._requests.items() if r["group"] == group]
            return {
                "group": group,
                "admin": GROUPS[group],
                "members": sorted(self._members[group]),
                "requests": requests,
            }

    def _ask_to_join(self, group: str, body: Any) -> Response:
        user_id = body.get("user_id") if isinstance(body, dict) else None
        if group not in GROUPS or not isinstance(user_id, str) or not user_id.isdigit():
            return 400, {"error": "a known group and a numeric user_id, please"}, JSON
        request_id = f"jr-{secrets.token_hex(6)}"
        with self._lock:
            self._requests[request_id] = {"group": group, "user_id": user_id, "state": "pending"}
        try:
            confirm = self._herald.ask_confirm(
                business_type=BUSINESS_TYPE,
                business_subtype="join",
                business_id=request_id,
                source_event_id=request_id,
                sender_user_id=user_id,
                receiver_user_id=GROUPS[group],
                message_text=f"User {user_id} asks to join {group}",
                payload={"group": group},
            )
        except (HeraldError, httpx.HTTPError) as error:
            return 502, {"error": f"Herald did not take the confirm: {error}"}, JSON
        log.info("join request %s: %s -> %s (confirm %s)", request_id, user_id, group, confirm["confirm_id"])
        return 200, {"request_id": request_id, "confirm_id": confirm["confirm_id"], "status": confirm["status"]}, JSON

    def _from_herald(self, request: Request, route: list[str]) -> Response:
        with self._lock:
            secret = self._secret
        try:
            signed = request.body if request.method == "POST" else get_content(request.target)
            verify(secret, request.headers, signed, now_s=int(time.time()))
        except InvalidSignature as exc:
            log.warning("refused a request that Herald did not sign: %s", exc)
            return 401, {"error": "bad signature"}, JSON
        if route == ["fact"] and request.method == "GET":
            return self._fact(request.query.get("business_id", ""))
        if route == ["callback"] and request.method == "POST":
            return self._decide(request.json())
        return 404, {"error": "no such route"}, JSON

    def _fact(self, request_id: str) -> Response:
        with self._lock:
            found = self._requests.get(request_id)
            if found is None:
                return 404, {"error": "no such join request"}, JSON
            return 200, {"state": found["state"], "decided_at_ms": found.get("decided_at_ms")}, JSON

    def _decide(self, body: dict[str, Any]) -> Response:
        """Idempotent by state: the first decision sticks, a retry of it gets the same answer."""
        request_id = body["confirm"]["business_id"]
        with self._lock:
            found = self._requests.get(request_id)
            if found is None:
                return 409, {"reason": "unknown_request"}, JSON
            if found["state"] == "pending":
                found["state"] = DECISIONS[body["action"]] if body["type"] == "confirm.action" else "expired"
                found["decided_at_ms"] = int(time.time() * 1000)
                if found["state"] == "accepted":
                    self._members[found["group"]].add(found["user_id"])
                log.info("join request %s %s", request_id, found["state"])
            return 200, {"state": found["state"], "decided_at_ms": found["decided_at_ms"]}, JSON
