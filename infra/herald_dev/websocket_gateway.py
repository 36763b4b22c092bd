"""API Gateway's WebSocket API, locally: the same route events and the same management API.

Clients connect to `ws://host:port/?token=...`. `$connect` is invoked before the handshake completes (a
non-2xx answer refuses the connection with that status), each frame is routed by the API's route selection
expression (`$request.body.action`) or to `$default`, and `$disconnect` follows a close. Handlers push with
the management API (`POST /@connections/{id}`, `GoneException` for a closed connection), exactly as in AWS.

API Gateway's size quotas hold here too: a message over 128 KB, or a frame over 32 KB, closes the connection
with 1009 (message too big). Starlette hands over whole messages, not frames, so a message is taken as one
frame (as browsers send them); a binary frame reaches the route base64-encoded, with `isBase64Encoded`.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import secrets
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from herald_dev.meter import process_meter
from herald_dev.runtime import FunctionError, LocalFunction

log = logging.getLogger("local-cloud")
# API Gateway WebSocket quotas: one frame, one message (a message may span frames).
FRAME_LIMIT_BYTES = 32 * 1024
MESSAGE_LIMIT_BYTES = 128 * 1024
MESSAGE_TOO_BIG = 1009


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass
class _Connection:
    websocket: WebSocket
    connected_at_ms: int
    source_ip: str
    user_agent: str
    last_active_ms: int = field(default_factory=_now_ms)


class WebSocketGateway:
    def __init__(
        self, routes: dict[str, LocalFunction], api_id: str, stage: str, selection_key: str = "action"
    ) -> None:
        self.routes = routes
        self.api_id = api_id
        self.stage = stage
        self.selection_key = selection_key
        self.connections: dict[str, _Connection] = {}
        self.domain = "127.0.0.1"

    def asgi(self) -> Starlette:
        management = ["POST", "GET", "DELETE"]
        return Starlette(
            routes=[
                Route("/@connections/{connection_id}", self._manage, methods=management),
                Route("/{stage}/@connections/{connection_id}", self._manage, methods=management),
                WebSocketRoute("/", self._serve),
                WebSocketRoute("/{stage}", self._serve),
            ]
        )

    # ------------------------------------------------------------------ client side
    def _event(
        self, route_key: str, event_type: str, connection_id: str, conn: _Connection, **extra: Any
    ) -> dict[str, Any]:
        now = _now_ms()
        context = {
            "routeKey": route_key,
            "eventType": event_type,
            "extendedRequestId": uuid.uuid4().hex,
            "requestTime": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime()),
            "messageDirection": "IN",
            "stage": self.stage,
            "connectedAt": conn.connected_at_ms,
            "requestTimeEpoch": now,
            "identity": {"sourceIp": conn.source_ip, "userAgent": conn.user_agent},
            "requestId": uuid.uuid4().hex,
            "domainName": self.domain,
            "connectionId": connection_id,
            "apiId": self.api_id,
        }
        context.update(extra.pop("context", {}))
        return {"requestContext": context, "isBase64Encoded": False, **extra}

    async def _invoke(self, route_key: str, event: dict[str, Any]) -> int:
        function = self.routes.get(route_key)
        if function is None:
            return 200
        try:
            result = await asyncio.to_thread(function.invoke, event)
        except FunctionError:
            return 500
        status = result.get("statusCode", 200) if isinstance(result, dict) else 200
        return int(status)

    async def _serve(self, websocket: WebSocket) -> None:
        connection_id = secrets.token_urlsafe(9) + "="
        client = websocket.client
        conn = _Connection(
            websocket=websocket,
            connected_at_ms=_now_ms(),
            source_ip=client.host if client else "127.0.0.1",
            user_agent=websocket.headers.get("user-agent", ""),
        )
        query = dict(websocket.query_params)
        connect_event = self._event(
            "$connect",
            "CONNECT",
            connection_id,
            conn,
            headers=dict(websocket.headers),
            queryStringParameters=query or None,
        )
        status = await self._invoke("$connect", connect_event)
        if not 200 <= status < 300:
            await websocket.send_denial_response(Response(status_code=status if status >= 400 else 403))
            return
        await websocket.accept()
        self.connections[connection_id] = conn
        log.info("websocket %s connected", connection_id)
        close_code = 1000
        try:
            close_code = await self._relay(connection_id, conn)
        except WebSocketDisconnect as exc:
            close_code = exc.code
        finally:
            self.connections.pop(connection_id, None)
            await self._invoke(
                "$disconnect",
                self._event(
                    "$disconnect",
                    "DISCONNECT",
                    connection_id,
                    conn,
                    context={"disconnectStatusCode": close_code, "disconnectReason": ""},
                ),
            )
            log.info("websocket %s disconnected", connection_id)

    async def _relay(self, connection_id: str, conn: _Connection) -> int:
        """Each frame the client sends, to the route its body selects, until it closes; its close code (1009 for a
        frame over API Gateway's quota, which closes it)."""
        websocket = conn.websocket
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return int(message.get("code", 1000))
            text = message.get("text")
            raw = str(text).encode() if text is not None else bytes(message.get("bytes") or b"")
            if len(raw) > FRAME_LIMIT_BYTES:
                await websocket.close(code=MESSAGE_TOO_BIG, reason="Message too big")
                return MESSAGE_TOO_BIG
            conn.last_active_ms = _now_ms()
            if (meter := process_meter(functions=False)) is not None:
                meter.count("websocket.messages")  # a frame received is a message, as one sent
            body = str(text) if text is not None else base64.b64encode(raw).decode()
            route = self._select_route(body) if text is not None else "$default"
            event = self._event(
                route, "MESSAGE", connection_id, conn, body=body, context={"messageId": uuid.uuid4().hex}
            )
            event["isBase64Encoded"] = text is None
            await self._invoke(route, event)

    def _select_route(self, body: str) -> str:
        try:
            parsed = json.loads(body)
        except (ValueError, RecursionError):  # not JSON, a number past int's digit limit, nested too deep
            return "$default"
        key = parsed.get(self.selection_key) if isinstance(parsed, dict) else None
        return key if isinstance(key, str) and key in self.routes else "$default"

    # ------------------------------------------------------------------ management API
    async def _manage(self, request: Request) -> Response:
        connection_id = request.path_params["connection_id"]
        conn = self.connections.get(connection_id)
        if conn is None:
            return JSONResponse({"message": None}, status_code=410, headers={"x-amzn-ErrorType": "GoneException"})
        if request.method == "GET":
            return JSONResponse(
                {
                    "ConnectedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(conn.connected_at_ms / 1000)),
                    "Identity": {"SourceIp": conn.source_ip, "UserAgent": conn.user_agent},
                    "LastActiveAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(conn.last_active_ms / 1000)),
                }
            )
        if request.method == "DELETE":
            await conn.websocket.close()
            return Response(status_code=204)
        data = await request.body()
        try:
            await conn.websocket.send_text(data.decode())
        except UnicodeDecodeError:
            await conn.websocket.send_bytes(data)
        except Exception:  # the socket closed under us: to the caller it is gone
            self.connections.pop(connection_id, None)
            return JSONResponse({"message": None}, status_code=410, headers={"x-amzn-ErrorType": "GoneException"})
        return Response(status_code=200)

    async def close_all(self) -> None:
        for conn in list(self.connections.values()):
            try:
                await conn.websocket.close(code=1001)
            except RuntimeError:
                continue
