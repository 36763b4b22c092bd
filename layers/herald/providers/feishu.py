"""Feishu (飞书) open API: interactive cards sent to a chat or user and updated in place.

A thin client on the process's urllib3 pool rather than the official `lark-oapi` SDK: importing that SDK
alone takes 2.4-2.8 s on this project's machines (measured with `python -X importtime`), ten times a
worker's whole cold-start budget, and Herald needs three endpoints of it:

* `POST /open-apis/auth/v3/tenant_access_token/internal` — the tenant access token, cached until shortly
  before its `expire` and fetched again when Feishu calls it invalid;
* `POST /open-apis/im/v1/messages?receive_id_type=...` — send an interactive card; the `uuid` makes Feishu
  send at most one message per uuid within an hour, so a resend of the same job is dropped there;
* `PATCH /open-apis/im/v1/messages/{message_id}` — replace a shared card's content (`update_multi`).

Every failure says whether the message may have been acted on (`maybe_delivered`): only then is the
outcome unknown; an answer from Feishu with an error code, or a connection never made, is a clear "not
done", retryable or not.
"""

from __future__ import annotations

import hmac
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from herald import budgets
from herald.circuits import CallGuard, Unguarded
from herald.clock import utc_date
from herald.errors import DeliveryError
from herald.events.models import Card
from herald.providers import http

TOKEN_PATH = "/open-apis/auth/v3/tenant_access_token/internal"  # noqa: S105 - a path, not a secret
MESSAGES_PATH = "/open-apis/im/v1/messages"

TOKEN_INVALID_CODES = frozenset({99991661, 99991663, 99991668})  # missing, invalid or expired access token
# Codes that say "not now" rather than "never": rate limits and Feishu's internal errors.
RETRYABLE_CODES = frozenset({99991400, 230020, 11232, 1000004, 1000005, 99991401, 230019})
NOT_DONE_CODES = RETRYABLE_CODES | TOKEN_INVALID_CODES  # Feishu did not act, and may on another try
# Feishu's rate-limit answers: the app's frequency control (99991400, or HTTP 429), and a chat's or a
# person's message rate (230020). docs/side-effects.md cites them.
APP_THROTTLED_CODES = frozenset({99991400})
CHAT_THROTTLED_CODES = frozenset({230020})
# How long a refusal asks Herald to wait (seconds): Feishu's "恢复 limit 周期" header (频控策略), or a plain
# Retry-After. Honoured up to an hour (a larger figure is taken as an hour, never as a reason to stop).
RESET_HEADERS = ("x-ogw-ratelimit-reset", "retry-after")
MAX_RESET_S = 3600
_TOKEN_REFRESH_MARGIN_S = 300


class FeishuError(DeliveryError):
    """Feishu refused or did not answer a call (its error code in `code`, where it gave one)."""


def card_json(card: Card) -> dict[str, Any]:
    """The Feishu interactive card an external event shows: shared, so later revisions update it for all."""
    template = {"failed": "red", "succeeded": "green", "success": "green", "running": "blue"}.get(
        card.status.lower(), "grey"
    )
    return {
        "config": {"wide_screen_mode": True, "update_multi": True},
        "header": {"title": {"tag": "plain_text", "content": card.title}, "template": template},
        "elements": [
            {
                "tag": "div",
                "text": {"tag": "lark_md" if card.markdown else "plain_text", "content": card.summary or " "},
            },
            {"tag": "note", "elements": [{"tag": "plain_text", "content": f"{card.status} · {card.event_type}"}]},
            *_continuation(card),
        ],
    }


def _continuation(card: Card) -> list[dict[str, Any]]:
    """A new card continuing one Feishu no longer edits says so, with the earlier card's date."""
    if card.continues_from_ms is None:
        return []
    since = f" of {utc_date(card.continues_from_ms)}" if card.continues_from_ms else ""
    return [{"tag": "note", "elements": [{"tag": "plain_text", "content": f"Continues the card{since}"}]}]


def _content_string(card: Card) -> str:
    return json.dumps(card_json(card), separators=(",", ":"), ensure_ascii=False)


@dataclass
class FeishuClient:
    base_url: str
    app_id: str
    app_secret: Callable[[], str]
    timeout_s: float = budgets.PROVIDER_READ_S
    clock: Callable[[], float] = time.time
    guard: CallGuard = field(default_factory=Unguarded)  # the app's circuit (herald.circuits)
    _token: tuple[str, float, str] | None = field(default=None, init=False)  # (token, expires at, its secret)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def _url(self, path: str) -> str:
        return f"{self.base_url.rstrip('/')}{path}"

    def tenant_access_token(self) -> str:
        """The cached token, or a new one when it is missing, expires within five minutes, or was issued for
        a secret since changed (a rotation: the secret source reads it again every few minutes)."""
        secret = self.app_secret()
        with self._lock:
            token = self._token
            if (
                token is not None
                and token[1] - self.clock() > _TOKEN_REFRESH_MARGIN_S
                and hmac.compare_digest(token[2], secret)
            ):
                return token[0]
            body = {"app_id": self.app_id, "app_secret": secret}
            try:
                response = http.request(
                    "POST", self._url(TOKEN_PATH), body=body, timeout_s=self.timeout_s, guard=self.guard
                )
            except http.TransportError as exc:
                raise FeishuError(f"token request failed: {exc}", retryable=True) from exc
            except budgets.OutOfTime as exc:
                raise FeishuError(f"token request not started: {exc}", retryable=True) from exc
            result = self._json(response, "token request")
            if result.get("code") != 0 or not result.get("tenant_access_token"):
                code = int(result.get("code", -1))
                raise FeishuError(
                    f"Feishu refused the token request: {code} {str(result.get('msg', ''))[:200]}",
                    retryable=response.status >= 500 or code in RETRYABLE_CODES,
                    code=code,
                )
            self._token = (str(result["tenant_access_token"]), self.clock() + int(result.get("expire", 7200)), secret)
            return self._token[0]

    def forget_token(self) -> None:
        with self._lock:
            self._token = None

    def send_card(self, receive_id_type: str, receive_id: str, card: Card, uuid: str) -> str:
        """Send the card; returns Feishu's message id."""
        path = f"{MESSAGES_PATH}?receive_id_type={quote(receive_id_type)}"
        body = {"receive_id": receive_id, "msg_type": "interactive", "content": _content_string(card), "uuid": uuid}
        result = self._call("POST", path, body, "send")
        message_id = (result.get("data") or {}).get("message_id")
        if not message_id:
            raise FeishuError("Feishu answered a send without a message_id", retryable=False, maybe_delivered=True)
        return str(message_id)

    def update_card(self, message_id: str, card: Card) -> None:
        self._call("PATCH", f"{MESSAGES_PATH}/{quote(message_id)}", {"content": _content_string(card)}, "update")

    # ------------------------------------------------------------------ internals
    def _call(self, method: str, path: str, body: dict[str, Any], what: str) -> dict[str, Any]:
        token = self.tenant_access_token()
        try:
            response = http.request(
                method,
                self._url(path),
                body=body,
                headers={"authorization": f"Bearer {token}"},
                timeout_s=self.timeout_s,
                guard=self.guard,
            )
        except http.TransportError as exc:
            raise FeishuError(
                f"{what} failed in transit: {exc}", retryable=True, maybe_delivered=exc.maybe_delivered
            ) from exc
        except budgets.OutOfTime as exc:  # nothing left this machine
            raise FeishuError(f"{what} not started: {exc}", retryable=True) from exc
        if response.status >= 500:
            # Feishu may have acted before failing: only its own error code says it did not.
            result = self._json(response, what, maybe_delivered=True)
            code = int(result.get("code", -1))
            raise FeishuError(
                f"{what}: Feishu answered HTTP {response.status} ({code})",
                retryable=True,
                maybe_delivered=code not in NOT_DONE_CODES,
                code=code,
            )
        result = self._json(response, what, maybe_delivered=True)
        code = int(result.get("code", -1))
        if code == 0:
            return result
        if code in TOKEN_INVALID_CODES:
            self.forget_token()
        throttled = "chat" if code in CHAT_THROTTLED_CODES else ""
        if code in APP_THROTTLED_CODES or response.status == 429:
            throttled = "app"
        wait_s = response.seconds(*RESET_HEADERS) if throttled else None
        raise FeishuError(
            f"{what}: Feishu error {code}: {str(result.get('msg', ''))[:200]}",
            retryable=code in NOT_DONE_CODES or response.status == 429,
            code=code,
            throttled=throttled,
            retry_after_ms=round(min(wait_s, MAX_RESET_S) * 1000) if wait_s is not None else 0,
        )

    @staticmethod
    def _json(response: http.HttpResponse, what: str, maybe_delivered: bool = False) -> dict[str, Any]:
        try:
            result = response.json()
        except ValueError as exc:
            raise FeishuError(
                f"{what}: Feishu answered HTTP {response.status} with a body that is not JSON",
                retryable=True,
                maybe_delivered=maybe_delivered,
            ) from exc
        if not isinstance(result, dict):
            raise FeishuError(f"{what}: unexpected Feishu answer", retryable=True, maybe_delivered=maybe_delivered)
        return result
