"""The WebSocket API's routes ($connect, $disconnect, $default), as API Gateway invokes them."""

from __future__ import annotations

import json
from typing import Any

from herald.auth.tokens import JwtVerifier
from herald.errors import HeraldError, PermissionDenied, RateLimited
from herald.observability import logger
from herald.realtime.service import Realtime


def _response(status: int, body: str = "") -> dict[str, Any]:
    return {"statusCode": status, "body": body}


def handle_websocket_event(event: dict[str, Any], verifier: JwtVerifier, realtime: Realtime) -> dict[str, Any]:
    """A tenant the stack does not serve (disabled, or not registered where it must be) is refused on connect
    (403) and its open connections are closed with a reason frame on their next frame."""
    context = event.get("requestContext", {})
    route = context.get("routeKey")
    connection_id = str(context.get("connectionId", ""))
    if route == "$connect":
        token = (event.get("queryStringParameters") or {}).get("token", "")
        try:
            principal = verifier.verify(token)
        except HeraldError as exc:
            logger.info("websocket connect refused", code=exc.code)
            return _response(401, "Unauthorized")
        try:
            realtime.connect(connection_id, principal)
        except PermissionDenied as exc:
            logger.info("websocket connect refused", code=exc.code, reason=exc.reason, app_code=principal.app_code)
            return _response(403, "Forbidden")
        except RateLimited:
            logger.info("websocket connect refused", code="RATE_LIMITED", user_id=principal.user_id)
            return _response(429, "Too Many Requests")
        logger.info("websocket connected", connection_id=connection_id, user_id=principal.user_id)
        return _response(200)
    if route == "$disconnect":
        realtime.disconnect(connection_id)
        return _response(200)
    return _default_route(event, connection_id, realtime)


def _default_route(event: dict[str, Any], connection_id: str, realtime: Realtime) -> dict[str, Any]:
    """Clients only listen; the one message they may send is a ping, answered with a pong. Any other frame,
    however malformed (binary, not JSON, a number past Python's digit limit, nested too deep), gets an error
    frame and the connection stays open."""
    try:
        realtime.admit_frame(connection_id)
    except PermissionDenied as exc:
        logger.info("websocket closed: tenant refused", connection_id=connection_id, reason=exc.reason)
        return _response(200)
    except RateLimited as exc:
        realtime.send(connection_id, {"type": "error", "code": exc.code, "message": exc.message})
        return _response(200)
    message = _frame(event)
    if isinstance(message, dict) and message.get("action") == "ping":
        realtime.send(connection_id, {"type": "pong"})
        return _response(200)
    problem = "unknown action" if isinstance(message, dict) else "a frame is a JSON object as text"
    realtime.send(connection_id, {"type": "error", "code": "INVALID_ARGUMENT", "message": problem})
    return _response(200)


def _frame(event: dict[str, Any]) -> Any:
    if event.get("isBase64Encoded"):
        return None
    try:
        return json.loads(event.get("body") or "{}")
    except (ValueError, RecursionError):  # JSONDecodeError is a ValueError; so is int's digit limit
        return None
