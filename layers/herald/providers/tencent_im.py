"""Tencent IM (腾讯云即时通信 IM) REST API: `v4/openim/sendmsg` with an admin UserSig.

UserSig follows the TLS v2 algorithm (the one `tls-sig-api-v2` implements; tests compare the two): an
HMAC-SHA256 over the identifier, SDKAppID, time and expiry, packed with them in JSON, zlib-compressed and
base64-encoded with Tencent's URL alphabet (`+/=` -> `*-_`). Failures are classified so the caller retries
only what may succeed later; the caller passes the same `MsgRandom` on every retry of one message.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from herald import budgets
from herald.circuits import CallGuard, Unguarded
from herald.confirms.models import CustomMessage, SendResult
from herald.errors import DeliveryError
from herald.providers import http

SENDMSG_PATH = "/v4/openim/sendmsg"
ROAMMSG_PATH = "/v4/openim/admin_getroammsg"

# ErrorCodes worth retrying: Tencent's internal errors, timeouts and rate limits. Everything else that
# Tencent answers with ActionStatus FAIL is a property of the request (bad account, blocked, too long,
# bad signature or configuration) and will fail the same way again.
RETRYABLE_ERROR_CODES = frozenset(
    {
        20004,  # network error inside IM
        20005,  # IM internal server error
        70169,  # login service timeout
        90992,  # internal error
        90994,  # internal error
        90995,  # internal error
        91000,  # internal error
        93000,  # internal timeout
        90025,  # sending rate limited ("频率限制")
        70001,  # UserSig expired: clock skew; a fresh signature is made on the next attempt
    }
)
# Tencent IM's REST API common errors for a call over its frequency limit (REST API 简介, 公共错误码): the call
# was refused, so nothing was sent; the caller slows down (docs/side-effects.md).
THROTTLED_ERROR_CODES = frozenset({60007, 60011, 60018, 60019})


def _hmac_base64(secret_key: str, identifier: str, sdk_app_id: int, issued_at: int, expire: int) -> str:
    content = f"TLS.identifier:{identifier}\nTLS.sdkappid:{sdk_app_id}\nTLS.time:{issued_at}\nTLS.expire:{expire}\n"
    digest = hmac.new(secret_key.encode(), content.encode(), hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


def _url_b64encode(data: bytes) -> str:
    return base64.b64encode(data).decode().replace("+", "*").replace("/", "-").replace("=", "_")


def _url_b64decode(text: str) -> bytes:
    return base64.b64decode(text.replace("*", "+").replace("-", "/").replace("_", "="))


def user_sig(sdk_app_id: int, secret_key: str, identifier: str, expire_s: int, issued_at: int | None = None) -> str:
    issued = int(time.time()) if issued_at is None else issued_at
    document = {
        "TLS.ver": "2.0",
        "TLS.identifier": identifier,
        "TLS.sdkappid": sdk_app_id,
        "TLS.expire": expire_s,
        "TLS.time": issued,
        "TLS.sig": _hmac_base64(secret_key, identifier, sdk_app_id, issued, expire_s),
    }
    return _url_b64encode(zlib.compress(json.dumps(document).encode()))


def verify_user_sig(
    sig: str, sdk_app_id: int, secret_key: str, identifier: str, now_s: int | None = None
) -> str | None:
    """None when valid, else why not (what Tencent's side checks; used by the loopback fake)."""
    try:
        document = json.loads(zlib.decompress(_url_b64decode(sig)))
    except (ValueError, zlib.error):
        return "usersig is not decodable"
    if document.get("TLS.identifier") != identifier or document.get("TLS.sdkappid") != sdk_app_id:
        return "usersig was issued for another identifier or SDKAppID"
    expected = _hmac_base64(secret_key, identifier, sdk_app_id, int(document["TLS.time"]), int(document["TLS.expire"]))
    if not hmac.compare_digest(expected, str(document.get("TLS.sig", ""))):
        return "usersig signature mismatch"
    now = int(time.time()) if now_s is None else now_s
    if now > int(document["TLS.time"]) + int(document["TLS.expire"]):
        return "usersig expired"
    return None


def send_body(message: CustomMessage) -> dict[str, Any]:
    """The sendmsg request body of a custom message (a TIMCustomElem)."""
    body: dict[str, Any] = {
        "SyncOtherMachine": 1 if message.sync_other_machine else 2,
        "From_Account": message.from_account,
        "To_Account": message.to_account,
        "MsgRandom": message.msg_random,
        "MsgBody": [
            {
                "MsgType": "TIMCustomElem",
                "MsgContent": {
                    "Data": json.dumps(message.data, separators=(",", ":"), ensure_ascii=False),
                    "Desc": message.desc,
                    "Ext": message.ext,
                },
            }
        ],
    }
    if message.send_msg_control:
        body["SendMsgControl"] = list(message.send_msg_control)
    return body


class TencentImError(DeliveryError):
    def __init__(self, message: str, *, retryable: bool, error_code: int | None = None, throttled: str = "") -> None:
        super().__init__(message, retryable=retryable, throttled=throttled)
        self.error_code = error_code


@dataclass
class TencentImClient:
    base_url: str
    sdk_app_id: int
    admin_identifier: str
    secret_key: Callable[[], str]
    timeout_s: float = budgets.PROVIDER_READ_S
    usersig_ttl_s: int = 86_400
    guard: CallGuard = field(default_factory=Unguarded)  # the app's circuit (herald.circuits)
    _sig: tuple[str, float, str] | None = field(default=None, init=False)  # (sig, expires at, key it was made with)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def _admin_sig(self) -> str:
        """Cached admin UserSig, renewed an hour before it expires, or at once when the key changed (a
        rotation: the secret source reads it again every few minutes)."""
        key = self.secret_key()
        with self._lock:
            now = time.time()
            if self._sig is None or self._sig[1] - now < 3600 or not hmac.compare_digest(self._sig[2], key):
                sig = user_sig(self.sdk_app_id, key, self.admin_identifier, self.usersig_ttl_s, int(now))
                self._sig = (sig, now + self.usersig_ttl_s, key)
            return self._sig[0]

    def _url(self, path: str) -> str:
        query = urlencode(
            {
                "sdkappid": self.sdk_app_id,
                "identifier": self.admin_identifier,
                "usersig": self._admin_sig(),
                "random": secrets.randbelow(2**32),  # a per-request nonce
                "contenttype": "json",
            }
        )
        return f"{self.base_url.rstrip('/')}{path}?{query}"

    def _call(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """One REST call; its answer when ActionStatus is OK, else TencentImError (retryable or not)."""
        try:
            response = http.request("POST", self._url(path), body=body, timeout_s=self.timeout_s, guard=self.guard)
        except http.TransportError as exc:
            raise TencentImError(str(exc), retryable=True) from exc
        if response.status == 429:
            raise TencentImError("Tencent IM answered HTTP 429", retryable=True, throttled="app")
        if response.status >= 500:
            raise TencentImError(f"Tencent IM answered HTTP {response.status}", retryable=True)
        if response.status != 200:
            raise TencentImError(f"Tencent IM answered HTTP {response.status}", retryable=False)
        try:
            result = response.json()
        except ValueError as exc:
            raise TencentImError("Tencent IM answered with a body that is not JSON", retryable=True) from exc
        if result.get("ActionStatus") == "OK" and int(result.get("ErrorCode", 0)) == 0:
            return result  # type: ignore[no-any-return]
        code = int(result.get("ErrorCode", -1))
        if code == 70001:
            with self._lock:
                self._sig = None
        info = str(result.get("ErrorInfo", ""))[:200]
        throttled = "app" if code in THROTTLED_ERROR_CODES else ""
        raise TencentImError(
            f"Tencent IM error {code}: {info}",
            retryable=bool(throttled) or code in RETRYABLE_ERROR_CODES,
            error_code=code,
            throttled=throttled,
        )

    def send(self, message: CustomMessage) -> SendResult:
        result = self._call(SENDMSG_PATH, send_body(message))
        return SendResult(msg_key=str(result.get("MsgKey", "")), msg_time=int(result.get("MsgTime", 0)))

    def find_sent(
        self, from_account: str, to_account: str, msg_random: int, since_s: int, until_s: int
    ) -> SendResult | None:
        """The message `from_account` sent with this MsgRandom, if the pair's history holds it
        (`admin_getroammsg`, followed page by page). How a send whose answer was lost is settled."""
        body: dict[str, Any] = {
            "Operator_Account": from_account,
            "Peer_Account": to_account,
            "MaxCnt": 100,
            "MinTime": since_s,
            "MaxTime": until_s,
        }
        while True:
            result = self._call(ROAMMSG_PATH, body)
            for message in result.get("MsgList", []):
                if message.get("From_Account") == from_account and int(message.get("MsgRandom", -1)) == msg_random:
                    return SendResult(
                        msg_key=str(message.get("MsgKey", "")), msg_time=int(message.get("MsgTimeStamp", 0))
                    )
            if int(result.get("Complete", 1)) == 1 or not result.get("LastMsgKey"):
                return None
            body["MaxTime"] = int(result["LastMsgTime"])
            body["LastMsgKey"] = result["LastMsgKey"]
