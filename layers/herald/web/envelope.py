"""The response envelope and the one mapping from error codes to HTTP statuses (contract §0)."""

from __future__ import annotations

import warnings
from typing import Any, Generic, TypeVar

from fastapi import Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from pydantic.warnings import UnsupportedFieldAttributeWarning

T = TypeVar("T")

STATUS_BY_CODE = {
    "INVALID_ARGUMENT": 400,
    "UNAUTHORIZED": 401,
    "PERMISSION_DENIED": 403,
    "NOT_FOUND": 404,
    "METHOD_NOT_ALLOWED": 405,
    "CONFLICT": 409,
    "PAYLOAD_TOO_LARGE": 413,
    "RATE_LIMITED": 429,
    "INTERNAL": 500,
    "UPSTREAM_ERROR": 502,
    "UNAVAILABLE": 503,
}


class ApiModel(BaseModel):
    """Every body and answer of the HTTP API. Its validator is built when it is first used, not when its module
    loads or a route naming it is registered: a cold start builds only what its first request needs."""

    model_config = ConfigDict(defer_build=True)


# FastAPI wraps a body's type with its `Body(alias=...)` for validation and hides pydantic's warning that the
# alias means nothing there; a deferred build happens later, outside FastAPI's filter, so it is hidden here.
warnings.filterwarnings("ignore", category=UnsupportedFieldAttributeWarning, message="The 'alias' attribute")


class Envelope(ApiModel, Generic[T]):
    code: str = "OK"
    message: str = ""
    data: T
    request_id: str


class ErrorData(ApiModel):
    """`reason` (for some reasons with the facts behind it, e.g. a reused event id's stored hash), and `field`
    where the refusal is about one field of the request."""

    model_config = ConfigDict(extra="allow")

    reason: str | None = Field(None, description="why, by name (contract §0), where there is a named reason")
    field: str | None = Field(
        None, description="the request's field to change: body.<path>, query.<name>, path.<name> or content-type"
    )


class ErrorEnvelope(ApiModel):
    code: str
    message: str
    data: ErrorData | None = None
    request_id: str


def errors(*codes: str) -> dict[int | str, dict[str, Any]]:
    """The error responses one route can really give, for its OpenAPI `responses` (never a 500: that is a bug)."""
    return {STATUS_BY_CODE[code]: {"model": ErrorEnvelope, "description": code} for code in codes}


# What every route behind a credential can answer, whatever it does.
# (UNAVAILABLE: DynamoDB still throttling after the retries.)
APP = ("UNAUTHORIZED", "RATE_LIMITED", "UNAVAILABLE")  # a JWT: missing/invalid; the user's rate limit
SERVICE = ("UNAUTHORIZED", "PERMISSION_DENIED", "RATE_LIMITED", "UNAVAILABLE")  # a key: invalid; no route; limit

# OpenAPI tags, one per audience: what an app client, a partner service, an agent engine or an operator calls.
APP_AUDIENCE, PARTNER, ENGINE, OPERATOR = "app", "partner", "engine", "operator"


def request_id_of(request: Request) -> str:
    return str(getattr(request.state, "request_id", ""))


def ok(request: Request, data: T) -> Envelope[T]:
    return Envelope[T](data=data, request_id=request_id_of(request))


def error_response(
    request: Request, code: str, message: str, reason: str | None = None, details: dict[str, Any] | None = None
) -> JSONResponse:
    body: dict[str, Any] = {
        "code": code,
        "message": message,
        "data": {**(details or {}), **({"reason": reason} if reason else {})} or None,
        "request_id": request_id_of(request),
    }
    return JSONResponse(status_code=STATUS_BY_CODE.get(code, 500), content=body)
