"""A status-webhook receiver on loopback: what a partner runs to try Herald's webhooks (`herald webhooks receive`),
and what the tests post to. Each post is verified with the SDK (`herald_client.verify_webhook`) against the secret
it was given; a post that does not verify is answered 401 and kept apart. A path can be told to fail (500) or to
hang (an answer dripped a byte a second, past any total deadline), so the tests can show what a bad endpoint does
and does not hold up."""

from __future__ import annotations

import threading
from typing import Any, Literal

from herald_client.webhooks import WebhookVerificationError, verify_webhook
from herald_dev.fakes._server import Dribble, LoopbackFake, Request, Response

Behaviour = Literal["ok", "fail", "hang"]


class WebhookReceiver(LoopbackFake):
    def __init__(self, secret: str = "", port: int = 0) -> None:
        super().__init__(port=port)
        self.secret = secret
        self.received: list[dict[str, Any]] = []  # verified: {"path", "webhook_id", "document", "headers", "body"}
        self.refused: list[str] = []  # why each post that did not verify was refused
        self._behaviour: dict[str, Behaviour] = {}
        self.posted = threading.Condition(self._lock)

    def behave(self, path: str, behaviour: Behaviour) -> None:
        with self._lock:
            self._behaviour[path] = behaviour

    def documents(self, path: str | None = None) -> list[dict[str, Any]]:
        with self._lock:
            return [entry["document"] for entry in self.received if path in (None, entry["path"])]

    def _handle(self, request: Request) -> Response:
        with self._lock:
            behaviour = self._behaviour.get(request.path, "ok")
        if behaviour == "hang":
            return 200, Dribble(b"{}", interval_s=1.0), "application/json"
        if behaviour == "fail":
            return 500, {"error": "the receiver is failing on purpose"}, "application/json"
        try:
            document = verify_webhook(self.secret, request.headers, request.body)
        except (WebhookVerificationError, ValueError) as exc:
            with self._lock:
                self.refused.append(str(exc))
            return 401, {"error": "signature does not verify"}, "application/json"
        with self.posted:
            entry = {
                "path": request.path,
                "webhook_id": request.headers.get("webhook-id"),
                "document": document,
                "headers": request.headers,
                "body": request.body,
            }
            self.received.append(entry)
            self.posted.notify_all()
        return 204, "", "text/plain"
