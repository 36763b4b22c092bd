"""A fake Feishu open API on loopback: tenant access tokens, interactive cards sent and updated.

It checks what the real one checks for the three calls Herald makes — app credentials for the token, the
bearer token, `receive_id_type`, an `interactive` message whose `content` is a JSON string, a PATCH only of a
message it sent (and only of a shared card, `update_multi`), never of a recalled one (230011) nor of one sent
14 days ago or more (230031) — and honours `uuid` as Feishu documents it: at
most one message per uuid within an hour (`uuid_window_s`), a resend answered with the message it sent.
Every card it accepts is recorded with its revisions, so tests can check order and count, and `make dev`
shows them arriving (log lines, and a page at its root).

Faults (tests): POST /__fake/faults with a list; each answers one matching request:
  {"op": "send"|"update"|"token", "status": 503}                 HTTP error, nothing done
  {"op": "send", "code": 99991400}                               Feishu error code, nothing done
  {"op": "send", "after_send": true}                             the message IS sent, then HTTP 500 (unknown)
  {"op": "send", "after_send": true, "answer": {"msg": "x"}}     ... answered with this JSON (no code) instead
  {"op": "send"|"update", "hang": 6.0}                           done, but answered only after that many seconds
                                                                 (past the client's timeout: never answered)
  a fault with "receive_id": "oc_x" answers only a send to that chat or person (`herald fake feishu-fail`)
POST /__fake/age {"message_id": "om_x", "days": 15} makes a message older, POST /__fake/recall {"message_id":
"om_x"} recalls one; and POST /__fake/chaos {"rate": 0.2, "seed": 7} answers that share of sends/updates with a
rate limit (nothing done). POST /__fake/limits {"app_per_second": 50, "chat_per_second": 5, "latency_ms": 100}
enforces Feishu's message limits as Feishu does (over the app's: HTTP 429 `99991400`; over one chat's or person's:
`230020`; nothing done) and answers every send and update that late (benchmarks). GET /__fake/messages, GET
/__fake/stats (token requests, sends, updates, refusals by limit and during holds), DELETE /__fake/messages.
POST /__fake/hold {"receive_id": "oc_x", "seconds": 35} holds one chat as Feishu's frequency control does: every
send and update to it answers HTTP 429, 99991400 and `x-ogw-ratelimit-reset` (the seconds left) until then.

Several apps (tenants): POST /__fake/apps {"app_id", "app_secret"} adds one; a token is its app's, and each
card records the app it came through (`app_id`). POST /__fake/outage {"app_id": "cli_x", "status": 503}
answers every call of that app (its token requests, and calls with its tokens) with that status until it is
set to 0; {"app_id": "cli_x", "hang": true} accepts them and never answers (nothing done) until then.
"""

from __future__ import annotations

import html
import json
import logging
import math
import random
import secrets
import time
from collections import deque
from typing import Any

from herald.providers.feishu import MESSAGES_PATH, TOKEN_PATH
from herald.targets import RECEIVE_ID_TYPES
from herald_dev.fakes._server import LoopbackFake, Request, Response, WithHeaders, outage_status
from herald_dev.fakes.limits import EnforcedLimits

log = logging.getLogger("fake-feishu")

_JSON = "application/json"


EDIT_WINDOW_S = 14 * 86_400  # Feishu updates a card only within 14 days of its send


def _error(code: int, msg: str, status: int = 400) -> Response:
    return status, {"code": code, "msg": msg}, _JSON


class FakeFeishu(LoopbackFake):
    def __init__(
        self,
        app_id: str = "cli_fake_herald",
        app_secret: str = "fake-feishu-secret",  # noqa: S107 - a fake's own secret
        port: int = 0,
        token_ttl_s: int = 7200,
        uuid_window_s: float = 3600.0,
    ) -> None:
        self.app_id = app_id
        self.uuid_window_s = uuid_window_s
        self.app_secret = app_secret
        self.token_ttl_s = token_ttl_s
        self.messages: dict[str, dict[str, Any]] = {}  # message_id -> message (with its content history)
        self.log: list[dict[str, Any]] = []  # every accepted send/update, in arrival order
        self.stats = {"token_requests": 0, "sends": 0, "updates": 0, "refused": 0}
        self.holds: dict[str, float] = {}  # receive id -> when its hold ends (monotonic)
        self.held_refusals: dict[str, int] = {}  # receive id -> calls refused during its hold
        self.apps: dict[str, str] = {app_id: app_secret}  # app id -> its secret
        self._tokens: dict[str, tuple[float, str]] = {}  # token -> (expires at, its app)
        self._uuids: dict[str, tuple[str, float]] = {}  # uuid -> (message id, when it was sent)
        self._faults: deque[dict[str, Any]] = deque()
        self._chaos: tuple[float, random.Random] | None = None
        self.limits = EnforcedLimits()
        super().__init__(port)

    def queue_faults(self, *faults: dict[str, Any]) -> None:
        with self._lock:
            self._faults.extend(faults)

    def saved(self) -> dict[str, Any]:
        """Its cards (a later revision updates one by its message id), uuids and apps, for `make dev` to keep."""
        with self._lock:
            uuids = {uuid: list(sent) for uuid, sent in self._uuids.items()}
            return {"apps": dict(self.apps), "messages": dict(self.messages), "log": list(self.log), "uuids": uuids}

    def restore(self, saved: dict[str, Any]) -> None:
        with self._lock:
            self.apps.update(saved.get("apps", {}))
            self.messages.update(saved.get("messages", {}))
            self.log[:0] = saved.get("log", [])
            self._uuids.update({uuid: (message_id, at) for uuid, (message_id, at) in saved.get("uuids", {}).items()})

    def add_app(self, app_id: str, app_secret: str) -> None:
        with self._lock:
            self.apps[app_id] = app_secret

    def _outage(self, app_id: str) -> Response | None:
        status = self._outage_status(app_id)
        return _error(status, "this app is out of service", status) if status else None

    def age(self, message_id: str, days: float) -> None:
        """The message was sent `days` earlier than it was (Feishu edits a card only within 14 days of its send)."""
        with self._lock:
            self.messages[message_id]["sent_at"] -= days * 86_400

    def recall(self, message_id: str) -> None:
        """Someone recalled the message: Feishu no longer edits it."""
        with self._lock:
            self.messages[message_id]["recalled"] = True

    def revoke_tokens(self) -> None:
        """Every issued token becomes invalid (as after a secret rotation)."""
        with self._lock:
            self._tokens.clear()

    # ------------------------------------------------------------------ HTTP
    def _handle(self, request: Request) -> Response:
        if request.path == TOKEN_PATH and request.method == "POST":
            return self._token(request)
        if request.path == MESSAGES_PATH and request.method == "POST":
            return self._authorized(request, self._send)
        if request.path.startswith(MESSAGES_PATH + "/") and request.method == "PATCH":
            return self._authorized(request, self._update)
        if request.path.startswith("/__fake/"):
            return self._control(request)
        if request.path == "/" and request.method == "GET":
            return 200, self._page(), "text/html; charset=utf-8"
        return _error(404, "no such API", 404)

    def _control(self, request: Request) -> Response:
        with self._lock:
            if request.path == "/__fake/messages" and request.method == "DELETE":
                self.messages.clear()
                self.log.clear()
                self._faults.clear()
                self._chaos = None
                return 200, {"ok": True}, _JSON
            if request.path == "/__fake/messages":
                return 200, list(self.log), _JSON
            if request.path == "/__fake/stats":
                held = dict(self.held_refusals)
                return 200, {**self.stats, "rate_limited": dict(self.limits.refused), "held_refusals": held}, _JSON
            if request.path == "/__fake/chaos" and request.method == "POST":
                body = request.json() or {}
                rate = float(body.get("rate", 0))
                self._chaos = (rate, random.Random(body.get("seed"))) if rate > 0 else None
                return 200, {"ok": True}, _JSON
        if request.path == "/__fake/faults" and request.method == "POST":
            self.queue_faults(*request.json())
            return 200, {"ok": True}, _JSON
        if request.path == "/__fake/limits" and request.method == "POST":
            limits = request.json() or {}
            per_second = {kind: int(limits.get(f"{kind}_per_second", 0)) for kind in ("app", "chat")}
            self.limits.configure(per_second, int(limits.get("latency_ms", 0)))
            return 200, {"ok": True}, _JSON
        if request.path == "/__fake/apps" and request.method == "POST":
            app = request.json() or {}
            self.add_app(str(app["app_id"]), str(app["app_secret"]))
            return 200, {"ok": True}, _JSON
        if request.path == "/__fake/outage" and request.method == "POST":
            outage = request.json() or {}
            self.set_outage(str(outage["app_id"]), outage_status(outage))
            return 200, {"ok": True}, _JSON
        if request.path == "/__fake/age" and request.method == "POST":
            aged = request.json() or {}
            self.age(str(aged["message_id"]), float(aged.get("days", 15)))
            return 200, {"ok": True}, _JSON
        if request.path == "/__fake/hold" and request.method == "POST":
            hold = request.json() or {}
            self.hold(str(hold["receive_id"]), float(hold.get("seconds", 35)))
            return 200, {"ok": True}, _JSON
        if request.path == "/__fake/recall" and request.method == "POST":
            self.recall(str((request.json() or {})["message_id"]))
            return 200, {"ok": True}, _JSON
        if request.path == "/__fake/revoke-tokens" and request.method == "POST":
            self.revoke_tokens()
            return 200, {"ok": True}, _JSON
        return _error(404, "no such control", 404)

    def _take_fault(self, op: str, receive_id: str = "") -> dict[str, Any] | None:
        with self._lock:
            for fault in self._faults:
                if fault.get("op", "send") == op and fault.get("receive_id", receive_id) == receive_id:
                    self._faults.remove(fault)
                    return fault
            if op != "token" and self._chaos is not None:
                rate, rng = self._chaos
                if rng.random() < rate:
                    return {"op": op, "code": 99991400, "status": 429}
        return None

    def _token(self, request: Request) -> Response:
        with self._lock:
            self.stats["token_requests"] += 1
        fault = self._take_fault("token")
        if fault is not None:
            return _error(int(fault.get("code", 99991400)), "injected token failure", int(fault.get("status", 503)))
        body = request.json() or {}
        app_id = str(body.get("app_id", ""))
        if outage := self._outage(app_id):
            return outage
        with self._lock:
            known = app_id in self.apps and body.get("app_secret") == self.apps[app_id]
        if not known:
            return _error(10014, "app secret invalid")
        token = f"t-{secrets.token_hex(16)}"
        with self._lock:
            self._tokens[token] = (time.time() + self.token_ttl_s, app_id)
        return 200, {"code": 0, "msg": "ok", "tenant_access_token": token, "expire": self.token_ttl_s}, _JSON

    def _authorized(self, request: Request, then: Any) -> Response:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        with self._lock:
            issued = self._tokens.get(token) if scheme == "Bearer" else None
        if issued is None or issued[0] < time.time():
            return _error(
                99991663, "Invalid access token for authorization. Please make a request with token attached."
            )
        if outage := self._outage(issued[1]):
            return outage
        return then(request, issued[1])  # type: ignore[no-any-return]

    @staticmethod
    def _card(content: Any) -> dict[str, Any] | str:
        """The card, or why it is not a valid interactive content string."""
        if not isinstance(content, str):
            return "content must be a JSON string"
        try:
            card = json.loads(content)
        except ValueError:
            return "content is not JSON"
        if not isinstance(card, dict) or "elements" not in card:
            return "an interactive card needs elements"
        return card

    def _send(self, request: Request, app_id: str) -> Response:
        receive_id_type = request.query.get("receive_id_type", "")
        if receive_id_type not in RECEIVE_ID_TYPES:
            return _error(230001, f"invalid receive_id_type {receive_id_type!r}")
        body = request.json() or {}
        if body.get("msg_type") != "interactive" or not body.get("receive_id"):
            return _error(230001, "receive_id and msg_type interactive are required")
        card = self._card(body.get("content"))
        if isinstance(card, str):
            return _error(230001, card)
        fault = self._take_fault("send", str(body["receive_id"]))
        if fault is not None and not fault.get("after_send") and not fault.get("hang"):
            with self._lock:
                self.stats["refused"] += 1
            return _error(int(fault.get("code", 99991400)), "injected failure", int(fault.get("status", 400)))
        over = self._over_limit(app_id, str(body["receive_id"]))
        if over is not None:
            return over
        uuid = str(body.get("uuid") or "")
        with self._lock:
            first = self._uuids.get(uuid) if uuid else None
            if first is not None and time.time() - first[1] < self.uuid_window_s:
                return 200, {"code": 0, "msg": "success", "data": {"message_id": first[0]}}, _JSON
            message_id = f"om_{secrets.token_hex(16)}"
            message = {
                "message_id": message_id,
                "receive_id_type": receive_id_type,
                "receive_id": body["receive_id"],
                "uuid": uuid,
                "cards": [card],
                "app_id": app_id,
                "sent_at": time.time(),
            }
            self.messages[message_id] = message
            if uuid:
                self._uuids[uuid] = (message_id, time.time())
            self.stats["sends"] += 1
            self.log.append({"op": "send", **self._summary(message, card)})
        log.info("Feishu card -> %s %s: %s", receive_id_type, body["receive_id"], self._title(card))
        return self._answer(fault, {"code": 0, "msg": "success", "data": {"message_id": message_id}})

    def hold(self, receive_id: str, seconds: float) -> None:
        """Refuse every send and update to `receive_id` for `seconds` as Feishu's frequency control does: HTTP 429,
        99991400, and `x-ogw-ratelimit-reset` (the seconds left, rounded up); each refusal counted by chat."""
        with self._lock:
            self.holds[receive_id] = time.monotonic() + seconds

    def _held(self, receive_id: str) -> Response | None:
        with self._lock:
            left = self.holds.get(receive_id, 0.0) - time.monotonic()
            if left <= 0:
                return None
            self.held_refusals[receive_id] = self.held_refusals.get(receive_id, 0) + 1
        body = WithHeaders({"code": 99991400, "msg": "request trigger frequency limit"}, {
            "x-ogw-ratelimit-limit": "50", "x-ogw-ratelimit-reset": str(math.ceil(left)),
        })  # fmt: skip
        return 429, body, _JSON

    def _over_limit(self, app_id: str, receive_id: str) -> Response | None:
        """Feishu's answer to a send or update over its rate limits, or held (nothing done), or None."""
        if (held := self._held(receive_id)) is not None:
            return held
        over = self.limits.admit({"app": app_id, "chat": f"{app_id}:{receive_id}"})
        if over == "app":
            return _error(99991400, "request trigger frequency limit", 429)
        if over == "chat":
            return _error(230020, "This operation triggers the frequency limit.")
        return None

    def _answer(self, fault: dict[str, Any] | None, done: dict[str, Any]) -> Response:
        """The answer to a write Feishu did: as it should be, or as a fault has it (late, or a 500)."""
        self.limits.answer_delay()
        if fault is not None and fault.get("hang"):
            time.sleep(float(fault["hang"]))
        elif fault is not None and "answer" in fault:
            return 500, fault["answer"], _JSON
        elif fault is not None:
            return 500, "internal error", "text/plain"
        return 200, done, _JSON

    def _update(self, request: Request, app_id: str) -> Response:
        message_id = request.path.rsplit("/", 1)[-1]
        card = self._card((request.json() or {}).get("content"))
        if isinstance(card, str):
            return _error(230001, card)
        with self._lock:
            message = self.messages.get(message_id)
        if message is None or message["app_id"] != app_id:  # an app updates only the messages it sent
            return _error(230011, "message not found")
        if message.get("recalled"):
            return _error(230011, "the message was recalled")
        if time.time() - message.get("sent_at", time.time()) >= EDIT_WINDOW_S:
            return _error(230031, "the message was sent more than 14 days ago and can no longer be updated")
        if not all(c.get("config", {}).get("update_multi") for c in (message["cards"][0], card)):
            return _error(230099, "only shared cards (config.update_multi) can be updated")
        fault = self._take_fault("update")
        if fault is not None and not fault.get("after_send") and not fault.get("hang"):
            with self._lock:
                self.stats["refused"] += 1
            return _error(int(fault.get("code", 99991400)), "injected failure", int(fault.get("status", 400)))
        over = self._over_limit(app_id, str(message["receive_id"]))
        if over is not None:
            return over
        with self._lock:
            message["cards"].append(card)
            self.stats["updates"] += 1
            self.log.append({"op": "update", **self._summary(message, card)})
        log.info("Feishu card updated %s: %s", message_id, self._title(card))
        return self._answer(fault, {"code": 0, "msg": "success", "data": {}})

    @staticmethod
    def _title(card: dict[str, Any]) -> str:
        return str(card.get("header", {}).get("title", {}).get("content", ""))

    def _summary(self, message: dict[str, Any], card: dict[str, Any]) -> dict[str, Any]:
        return {
            "message_id": message["message_id"],
            "receive_id_type": message["receive_id_type"],
            "receive_id": message["receive_id"],
            "title": self._title(card),
            "card": card,
            "app_id": message["app_id"],
            "at_ms": time.time_ns() // 1_000_000,
        }

    def _page(self) -> str:
        with self._lock:
            rows = "".join(
                f"<tr><td>{html.escape(e['op'])}</td><td>{html.escape(e['receive_id'])}</td>"
                f"<td>{html.escape(e['message_id'])}</td><td>{html.escape(e['title'])}</td></tr>"
                for e in reversed(self.log)
            )
        return (
            "<!doctype html><meta charset=utf-8><meta http-equiv=refresh content=2><title>Fake Feishu</title>"
            "<h1>Cards received by the fake Feishu</h1><table border=1 cellpadding=4>"
            f"<tr><th>op</th><th>to</th><th>message</th><th>title</th></tr>{rows}</table>"
        )
