"""A fake Tencent IM REST server on loopback.

It checks what the real one checks for `v4/openim/sendmsg` — the query (`sdkappid`, `identifier`,
`usersig` by the TLS v2 algorithm, `random`, `contenttype=json`) and the C2C body shape — and records
every message it accepts, so tests can count deliveries and `make dev` can show them arriving
(log lines, and a page at its root). Faults can be queued: an HTTP status or a Tencent ErrorCode.

Also `admin_getroammsg` over what it received (one page). Control API (tests): GET /__fake/messages,
DELETE /__fake/messages, POST /__fake/faults [{...}], GET /__fake/stats, and POST /__fake/limits
{"sendmsg_per_second": 200, "latency_ms": 100}: `sendmsg` over that many calls a second for the app is refused
with `60011` (nothing sent) and every send is answered that late (benchmarks).

Several IM applications, as Tencent hosts them (tenants): POST /__fake/apps {"sdk_app_id", "admin",
"secret_key"} adds one, each checked against its own key; each message records the SDKAppID it came through.
POST /__fake/outage {"sdk_app_id": N, "status": 503} answers every call of that app with that status until
it is set to 0 (one app's outage); {"sdk_app_id": N, "hang": true} accepts them and never answers until then.
"""

from __future__ import annotations

import html
import json
import logging
import time
import uuid
from collections import deque
from typing import Any

from herald.providers.tencent_im import ROAMMSG_PATH, SENDMSG_PATH, verify_user_sig
from herald_dev.fakes._server import LoopbackFake, Request, Response, outage_status
from herald_dev.fakes.limits import EnforcedLimits

log = logging.getLogger("fake-tencent-im")


def _fail(code: int, info: str) -> Response:
    return 200, {"ActionStatus": "FAIL", "ErrorCode": code, "ErrorInfo": info}, "application/json"


class FakeTencentIm(LoopbackFake):
    def __init__(
        self,
        sdk_app_id: int = 1400000001,
        admin: str = "administrator",
        secret_key: str = "fake-tencent-im-key",  # noqa: S107 - a fake's own key
        port: int = 0,
    ) -> None:
        self.sdk_app_id = sdk_app_id
        self.admin = admin
        self.secret_key = secret_key
        self.apps: dict[int, tuple[str, str]] = {sdk_app_id: (admin, secret_key)}  # SDKAppID -> (admin, key)
        self.messages: list[dict[str, Any]] = []
        self.requests = 0
        self._faults: deque[dict[str, Any]] = deque()
        self.limits = EnforcedLimits()
        super().__init__(port)

    def queue_faults(self, *faults: dict[str, Any]) -> None:
        """Each fault answers one request: {"status": 500} or {"error_code": 20003, "info": "..."}."""
        with self._lock:
            self._faults.extend(faults)

    def saved(self) -> dict[str, Any]:
        """What it received and its apps, for `make dev` to keep across restarts."""
        with self._lock:
            apps = [[app_id, admin, key] for app_id, (admin, key) in self.apps.items()]
            return {"apps": apps, "messages": list(self.messages)}

    def restore(self, saved: dict[str, Any]) -> None:
        with self._lock:
            self.apps.update({int(app_id): (admin, key) for app_id, admin, key in saved.get("apps", [])})
            self.messages[:0] = saved.get("messages", [])

    def add_app(self, sdk_app_id: int, admin: str, secret_key: str) -> None:
        with self._lock:
            self.apps[sdk_app_id] = (admin, secret_key)

    # ------------------------------------------------------------------ HTTP
    def _handle(self, request: Request) -> Response:
        if request.path == SENDMSG_PATH and request.method == "POST":
            return self._sendmsg(request)
        if request.path == ROAMMSG_PATH and request.method == "POST":
            return self._getroammsg(request)
        if request.path == "/__fake/messages":
            if request.method == "DELETE":
                with self._lock:
                    self.messages.clear()
                    self._faults.clear()
                return 200, {"ok": True}, "application/json"
            with self._lock:
                return 200, list(self.messages), "application/json"
        if request.path == "/__fake/faults" and request.method == "POST":
            self.queue_faults(*request.json())
            return 200, {"ok": True}, "application/json"
        if request.path == "/__fake/apps" and request.method == "POST":
            app = request.json() or {}
            self.add_app(int(app["sdk_app_id"]), str(app["admin"]), str(app["secret_key"]))
            return 200, {"ok": True}, "application/json"
        if request.path == "/__fake/outage" and request.method == "POST":
            outage = request.json() or {}
            self.set_outage(int(outage["sdk_app_id"]), outage_status(outage))
            return 200, {"ok": True}, "application/json"
        if request.path == "/__fake/limits" and request.method == "POST":
            limits = request.json() or {}
            self.limits.configure(
                {"sendmsg": int(limits.get("sendmsg_per_second", 0))}, int(limits.get("latency_ms", 0))
            )
            return 200, {"ok": True}, "application/json"
        if request.path == "/__fake/stats":
            with self._lock:
                sent = len(self.messages)
            stats = {"requests": self.requests, "sent": sent, "rate_limited": dict(self.limits.refused)}
            return 200, stats, "application/json"
        if request.path == "/" and request.method == "GET":
            return 200, self._page(), "text/html; charset=utf-8"
        return 404, {"ActionStatus": "FAIL", "ErrorCode": 404, "ErrorInfo": "no such API"}, "application/json"

    def _check_query(self, query: dict[str, str]) -> Response | None:
        for name in ("sdkappid", "identifier", "usersig", "random", "contenttype"):
            if not query.get(name):
                return _fail(90001, f"missing query parameter {name}")
        if query["contenttype"] != "json":
            return _fail(90001, "contenttype must be json")
        if not query["random"].isdigit() or int(query["random"]) >= 2**32:
            return _fail(90001, "random must be a 32-bit unsigned integer")
        app = self.apps.get(int(query["sdkappid"])) if query["sdkappid"].isdigit() else None
        if app is None:
            return _fail(70016, "SDKAppID does not match")
        admin, secret_key = app
        if query["identifier"] != admin:
            return _fail(90009, "identifier is not an app administrator")
        problem = verify_user_sig(query["usersig"], int(query["sdkappid"]), secret_key, admin)
        if problem:
            return _fail(70001 if problem == "usersig expired" else 70003, problem)
        return None

    @staticmethod
    def _check_body(body: Any) -> str | None:
        if not isinstance(body, dict):
            return "body must be a JSON object"
        for name in ("From_Account", "To_Account"):
            if not isinstance(body.get(name), str) or not body[name]:
                return f"{name} must be a non-empty string"
        random = body.get("MsgRandom")
        if not isinstance(random, int) or not 0 <= random < 2**32:
            return "MsgRandom must be a 32-bit unsigned integer"
        if body.get("SyncOtherMachine", 1) not in (1, 2):
            return "SyncOtherMachine must be 1 or 2"
        elements = body.get("MsgBody")
        if not isinstance(elements, list) or not elements:
            return "MsgBody must be a non-empty array"
        for element in elements:
            content = element.get("MsgContent") if isinstance(element, dict) else None
            if element.get("MsgType") != "TIMCustomElem" or not isinstance(content, dict):
                return "only TIMCustomElem is expected here"
            if not all(isinstance(content.get(k), str) for k in ("Data", "Desc", "Ext")):
                return "TIMCustomElem needs string Data, Desc and Ext"
        return None

    def _sendmsg(self, request: Request) -> Response:
        with self._lock:
            self.requests += 1
            fault = self._faults.popleft() if self._faults else None
        if fault and "status" in fault:
            return int(fault["status"]), {"error": "injected"}, "application/json"
        if outage := self._outage(request.query):
            return outage
        refused = self._check_query(request.query)
        if refused:
            return refused
        try:
            body = request.json()
        except ValueError:
            return _fail(90001, "body is not JSON")
        problem = self._check_body(body)
        if problem:
            return _fail(90002, problem)
        if fault and "error_code" in fault:
            return _fail(int(fault["error_code"]), str(fault.get("info", "injected failure")))
        if self.limits.admit({"sendmsg": request.query["sdkappid"]}) is not None:
            return _fail(60011, "SDKAppID request frequency over the limit")  # refused: nothing sent
        message = _received(body, request.query)
        with self._lock:
            self.messages.append(message)
        self.limits.answer_delay()
        data = message["data"]
        log.info(
            "IM %s -> %s: %s %s [%s] %s",
            message["from"],
            message["to"],
            data.get("type"),
            data.get("confirm_id"),
            data.get("status"),
            data.get("msg", ""),
        )
        answer = {"ActionStatus": "OK", "ErrorInfo": "", "ErrorCode": 0, "MsgTime": message["msg_time"]}
        return 200, {**answer, "MsgKey": message["msg_key"]}, "application/json"

    def _outage(self, query: dict[str, str]) -> Response | None:
        status = self._outage_status(query.get("sdkappid", ""))
        return (status, {"error": "this app is out of service"}, "application/json") if status else None

    def _getroammsg(self, request: Request) -> Response:
        """The pair's history in [MinTime, MaxTime] of the app asked (one page, Complete: 1), as
        admin_getroammsg lists it."""
        if outage := self._outage(request.query):
            return outage
        refused = self._check_query(request.query)
        if refused:
            return refused
        app = int(request.query["sdkappid"])
        body = request.json() or {}
        pair = {body.get("Operator_Account"), body.get("Peer_Account")}
        low, high = int(body.get("MinTime", 0)), int(body.get("MaxTime", 0))
        with self._lock:
            found = [
                m
                for m in self.messages
                if m["sdk_app_id"] == app and {m["from"], m["to"]} == pair and low <= m["msg_time"] <= high
            ]
        listed = [
            {
                "From_Account": m["from"],
                "To_Account": m["to"],
                "MsgRandom": m["msg_random"],
                "MsgTimeStamp": m["msg_time"],
                "MsgKey": m["msg_key"],
                "MsgFlagBits": 0,
            }
            for m in found
        ]
        answer = {"ActionStatus": "OK", "ErrorInfo": "", "ErrorCode": 0, "Complete": 1, "MsgCnt": len(listed)}
        return 200, {**answer, "MsgList": listed}, "application/json"

    def _page(self) -> str:
        with self._lock:
            rows = "".join(
                f"<tr><td>{html.escape(m['from'])}</td><td>{html.escape(m['to'])}</td>"
                f"<td>{html.escape(str(m['data'].get('type')))}</td><td>{html.escape(str(m['data'].get('status')))}</td>"
                f"<td>{html.escape(str(m['data'].get('msg', '')))}</td></tr>"
                for m in reversed(self.messages)
            )
        return (
            "<!doctype html><meta charset=utf-8><meta http-equiv=refresh content=2><title>Fake Tencent IM</title>"
            "<h1>Messages received by the fake Tencent IM</h1><table border=1 cellpadding=4>"
            f"<tr><th>from</th><th>to</th><th>type</th><th>status</th><th>msg</th></tr>{rows}</table>"
        )


def _received(body: dict[str, Any], query: dict[str, str]) -> dict[str, Any]:
    """A sendmsg the fake accepted, as it keeps it: who to whom, the custom message, and its own key and time."""
    content = body["MsgBody"][0]["MsgContent"]
    return {
        "from": body["From_Account"],
        "to": body["To_Account"],
        "msg_random": body["MsgRandom"],
        "sync_other_machine": body.get("SyncOtherMachine", 1),
        "send_msg_control": body.get("SendMsgControl", []),
        "desc": content["Desc"],
        "ext": content["Ext"],
        "data": json.loads(content["Data"]),
        "msg_key": f"{int(time.time())}_{uuid.uuid4().hex[:8]}",
        "msg_time": int(time.time()),
        "received_at_ms": time.time_ns() // 1_000_000,
        "sdk_app_id": int(query["sdkappid"]),
        "usersig": query["usersig"],
    }
