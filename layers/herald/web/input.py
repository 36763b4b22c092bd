"""The input policy at the HTTP edge: every JSON body is parsed strictly and checked whole before any
route reads it, so nothing a client can send reaches DynamoDB unstorable (contract §0)."""

from __future__ import annotations

import json
import re
from typing import Annotated, Any

from fastapi import Request
from pydantic import AfterValidator, Field
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from herald.errors import HeraldError, InvalidArgument, PayloadTooLarge
from herald.input_policy import (
    BODY_LIMITS,
    FREE_FORM_LIMITS,
    PolicyViolation,
    check_body,
    check_free_form,
    parse_body,
)

RAW_BODY = "herald.body"  # the request's body as read, in its ASGI scope: an error handler tells what was wrong
_JSON_TYPE = re.compile(r"^application/(?:[\w.+-]+\+)?json\s*(?:;.*)?$", re.IGNORECASE)


class BodyRecorder:
    """Keeps what a request's body was (RAW_BODY) as the app reads it: FastAPI parses a body before Herald's
    checks run, and its own failure ("There was an error parsing the body") says nothing a client can act on."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        kept = scope.setdefault(RAW_BODY, bytearray())

        async def recorded() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                kept.extend(message.get("body", b""))
            return message

        await self._app(scope, recorded, send)


def body_refusal(raw: bytes, content_type: str) -> HeraldError | None:
    """What is wrong with a route's body, in Herald's words with the field to change; None: nothing."""
    if len(raw) > BODY_LIMITS.max_bytes:
        return PayloadTooLarge(
            f"the body is {len(raw)} bytes; send at most {BODY_LIMITS.max_bytes}", details={"field": "body"}
        )
    if not _JSON_TYPE.match(content_type or ""):
        return InvalidArgument(
            f"the body is JSON: send it with content-type: application/json, not {content_type or 'none'!r}",
            details={"field": "content-type"},
        )
    try:
        check_body(parse_body(raw))
    except PolicyViolation as exc:
        return InvalidArgument(str(exc), reason="input_policy", details={"field": exc.field})
    return None


def refusal_of(request: Request) -> HeraldError | None:
    """The body's refusal, from what the request's body was (RAW_BODY)."""
    raw = bytes(request.scope.get(RAW_BODY, b""))
    return body_refusal(raw, request.headers.get("content-type", "")) if raw else None


_LEADING_NAME = re.compile(r"^([a-z_][a-z0-9_]*(?:\.[a-z0-9_]+)*)(?=[: ])")


def field_named(message: str, request: Request) -> str | None:
    """The request's field a refusal's message starts with (`page_token is malformed`), if it names one the request
    sent, where FastAPI's own validation would name it: `query.page_token`, `path.confirm_id`, `body.reason`."""
    match = _LEADING_NAME.match(message)
    if match is None:
        return None
    name = match.group(1)
    top = name.split(".", 1)[0]
    if top in request.query_params:
        return f"query.{name}"
    if top in request.path_params:
        return f"path.{name}"
    try:
        body = json.loads(bytes(request.scope.get(RAW_BODY, b"")) or b"null")
    except ValueError:
        return None
    return f"body.{name}" if isinstance(body, dict) and top in body else None


async def strict_json_body(request: Request) -> None:
    """For routes that read a body (a body sent to one that reads none is ignored, as before)."""
    route = request.scope.get("route")
    if getattr(route, "body_field", None) is None:
        return
    raw = await request.body()
    if raw and (refusal := body_refusal(raw, request.headers.get("content-type", ""))) is not None:
        raise refusal


def _free_form(value: dict[str, Any]) -> dict[str, Any]:
    check_free_form(value, "payload")
    return value


FreeFormJson = Annotated[
    dict[str, Any],
    AfterValidator(_free_form),
    Field(description="the producer's own JSON, shown back as given: " + FREE_FORM_LIMITS.describe()),
]
