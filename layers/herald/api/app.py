"""The FastAPI application: routers of every bounded context, the envelope, request ids."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from fastapi import Depends, FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import HTMLResponse
from fastapi.routing import APIRoute
from pynamodb.exceptions import PynamoDBException
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from herald.api import health
from herald.api.examples import add_examples
from herald.api.routing import LazyRoutes
from herald.container import current
from herald.errors import HeraldError, InvalidArgument, RateLimited, Unavailable
from herald.input_policy import BODY_LIMITS, FREE_FORM_LIMITS
from herald.observability import logger
from herald.tables import aws_unavailable, is_unavailable
from herald.web.envelope import error_response
from herald.web.input import BodyRecorder, field_named, refusal_of, strict_json_body

API_DESCRIPTION = f"""Herald's HTTP API. Errors are the envelope; each operation lists only the errors it can give.

**Input policy.** Every JSON body: {BODY_LIMITS.describe()}. A client's own JSON (an inbox `payload`):
{FREE_FORM_LIMITS.describe()}. Types are strict (a boolean is `true`/`false`, an integer is never a string
or a boolean); ids match their pattern whole. Anything else is `400 INVALID_ARGUMENT` naming the field.

**Rate limits.** Per minute, as configured: per app user (default 120), per service key (600), per target of a
service's events (300, or the key's own), per invited user (30), per owner business type (300) and per receiver
of owner services' confirms (10). Over one, `429 RATE_LIMITED` with `Retry-After` (seconds). An inviter has
at most 10 invitations waiting for an answer, a target at most 5
(`409`, `data.reason` `too_many_pending_invitations` / `target_has_too_many_invitations`).
"""

_HTTP_CODES = {404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED", 413: "PAYLOAD_TOO_LARGE"}


def _request_id(request: Request) -> str:
    event = request.scope.get("aws.event")
    if isinstance(event, dict):
        request_id = event.get("requestContext", {}).get("requestId")
        if isinstance(request_id, str) and request_id:
            return request_id
    return uuid.uuid4().hex


def _describe_validation(exc: RequestValidationError) -> str:
    parts = []
    for error in exc.errors()[:5]:
        location = ".".join(str(part) for part in error.get("loc", ()))
        parts.append(f"{location}: {error.get('msg', 'invalid')}")
    return "; ".join(parts) or "invalid request"


def _document_400_not_422(app: FastAPI, include_every_route: Callable[[], None]) -> None:
    """FastAPI documents a 422 for every validated route (and for the owner callbacks Herald makes); Herald
    answers those with 400 (contract §0), and an owner answers what docs/owner-services.md says. The document
    is of every route, included first."""
    build = app.openapi

    def operations(paths: dict[str, Any]) -> Iterator[dict[str, Any]]:
        for path in paths.values():
            for operation in path.values():
                yield operation
                for callback in operation.get("callbacks", {}).values():
                    yield from operations(callback)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            include_every_route()
            schema = build()
            for operation in operations(schema.get("paths", {})):
                operation.get("responses", {}).pop("422", None)
            for path in schema.get("paths", {}).values():  # a body over the limit (contract §0), never a callback's
                for operation in path.values():
                    if "requestBody" in operation:
                        answer = operation["responses"].get("400") or operation["responses"]["401"]
                        operation["responses"]["413"] = {**answer, "description": "PAYLOAD_TOO_LARGE"}
            add_examples(schema)
            schema.get("components", {}).get("schemas", {}).pop("HTTPValidationError", None)
            schema.get("components", {}).get("schemas", {}).pop("ValidationError", None)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


class ConfiguredCors:
    """The CORS policy API Gateway applies (template.yaml's CorsConfiguration), answered here too, so a
    preflight that reaches the function (locally, or through the OPTIONS routes) gets the same answer. Built
    on the first request: settings are read then, never at import."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app
        self._inner: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._inner is None:
            origins = [origin.strip() for origin in current().settings.cors_allow_origins.split(",") if origin.strip()]
            self._inner = self._app
            if origins:
                self._inner = CORSMiddleware(
                    self._app,
                    allow_origins=origins,
                    allow_methods=["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS"],
                    allow_headers=["authorization", "content-type"],
                    expose_headers=["retry-after", "x-request-id"],
                    max_age=600,
                )
        await self._inner(scope, receive, send)


def operation_id(route: APIRoute) -> str:
    """Short, stable operation ids for client generators: `<context>.<endpoint in camelCase>`, e.g.
    `inbox.unreadCount`, `events.postExternalEvent` (the context is the routes' package)."""
    parts = route.endpoint.__module__.split(".")
    context = parts[-2] if parts[-1] == "routes" else parts[-1]
    first, *rest = route.name.split("_")
    return f"{context}.{first}{''.join(word.title() for word in rest)}"


def create_app() -> FastAPI:
    app = FastAPI(
        generate_unique_id_function=operation_id,
        title="Herald",
        version="0.1.0",
        openapi_url="/api/v1/openapi.json",
        docs_url=None,  # herald.api.reference: the reference without a CDN
        redoc_url=None,
        dependencies=[Depends(strict_json_body)],
        description=API_DESCRIPTION,
    )

    @app.middleware("http")
    async def assign_request_id(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        request.state.request_id = _request_id(request)
        routes.for_path(request.url.path)
        response = await call_next(request)
        response.headers["x-request-id"] = request.state.request_id
        return response

    _answer_errors(app)
    app.add_middleware(BodyRecorder)  # innermost of the middlewares: what the routes read, kept for the error map
    app.add_middleware(ConfiguredCors)
    app.include_router(health.router)

    @app.get("/api/v1/docs", include_in_schema=False)
    def api_reference() -> HTMLResponse:
        from herald.api.reference import CSP, reference_page

        return HTMLResponse(reference_page(app.openapi()), headers={"Content-Security-Policy": CSP})

    routes = LazyRoutes(app)  # every bounded context's routes, each when a request first needs it
    _document_400_not_422(app, routes.all)
    return app


async def _herald_error(request: Request, exc: HeraldError) -> Response:
    details = exc.details
    if isinstance(exc, InvalidArgument) and "field" not in details and (named := field_named(exc.message, request)):
        details = {**details, "field": named}
    response = error_response(request, exc.code, exc.message, exc.reason, details)
    if isinstance(exc, RateLimited | Unavailable):
        response.headers["Retry-After"] = str(exc.retry_after_s)
    if response.status_code >= 500:
        logger.exception("request failed", code=exc.code, path=request.url.path)
    else:
        logger.info("request refused", code=exc.code, reason=exc.reason, path=request.url.path)
    return response


async def _unexpected_error(request: Request, exc: Exception) -> Response:
    logger.exception("unexpected error", path=request.url.path)
    return error_response(request, "INTERNAL", "internal error")


def _answer_errors(app: FastAPI) -> None:
    """The one error map: every failure a request can meet, as the envelope with its status (contract §0)."""
    app.add_exception_handler(HeraldError, _herald_error)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, _unexpected_error)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> Response:
        """A body Herald cannot read is told as such (its size, encoding, nesting, content type) before any field;
        otherwise the fields, the first named in data.field."""
        errors = exc.errors()
        if any(error.get("loc", ("",))[0] == "body" for error in errors) and (refusal := refusal_of(request)):
            return await _herald_error(request, refusal)
        first = ".".join(str(part) for part in errors[0].get("loc", ())) if errors else ""
        details = {"field": first} if first else None
        return error_response(request, "INVALID_ARGUMENT", _describe_validation(exc), details=details)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 400 and (refusal := refusal_of(request)) is not None:  # FastAPI could not parse it
            return await _herald_error(request, refusal)
        code = _HTTP_CODES.get(exc.status_code, "INVALID_ARGUMENT" if exc.status_code < 500 else "INTERNAL")
        return error_response(request, code, str(exc.detail))

    _answer_aws_errors(app)


def _answer_aws_errors(app: FastAPI) -> None:
    """AWS still failing or silent after every retry is 503 with Retry-After; a request of ours it refused is a
    fault (500)."""

    @app.exception_handler(PynamoDBException)
    async def table_error(request: Request, exc: PynamoDBException) -> Response:
        if is_unavailable(exc):  # throttling, DynamoDB's own errors, a dropped connection or a timeout
            return await _herald_error(request, Unavailable("Herald is busy; try again shortly"))
        return await _unexpected_error(request, exc)

    @app.exception_handler(ClientError)
    @app.exception_handler(BotoCoreError)
    async def aws_error(request: Request, exc: Exception) -> Response:
        if aws_unavailable(exc):  # SQS, the WebSocket API, SSM failing on their side or silent
            return await _herald_error(request, Unavailable("Herald is busy; try again shortly"))
        return await _unexpected_error(request, exc)
