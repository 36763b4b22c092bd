"""The console's server: the page, and what the page asks for.

It runs on the operator's machine, on loopback, against the running local cloud or a deployed stack (`--stack`,
through the operator's AWS credentials): no admin surface is deployed. Users' actions go to the real HTTP API
with that user's token (locally the console mints it, as `herald token` does: `users`); the IM, Sessions and
Cards panels read what the local cloud's fakes received and the store holds (`conversations`, `cards`); Operate
runs `herald-ops`' own operations (`operate`).

It answers only its own origin (`guard`): a `Host` other than 127.0.0.1, localhost or [::1] with the console's
own port is refused (a DNS-rebinding page names its own host), so is any `Origin` but the console's, and a
request that changes something needs `content-type: application/json` and the per-start token the page read
from `/console/config` (a header: a cross-site form or page can send neither).
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError
from fastapi import FastAPI, HTTPException, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from herald_ops.stack import Stack

from herald.errors import HeraldError
from herald.web.envelope import STATUS_BY_CODE
from herald_dev.console.cards import card_routes
from herald_dev.console.cloud import Shown
from herald_dev.console.conversations import conversation_routes
from herald_dev.console.operate import operate_routes
from herald_dev.console.steer import steer_routes
from herald_dev.console.users import user_routes

STATIC = Path(__file__).parent / "static"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
PAGE_HEADER = "x-herald-console-token"
SAFE_METHODS = ("GET", "HEAD")


def create_console(stack: Stack, extra_host: str | None = None) -> FastAPI:
    """The console app, one router a panel; `extra_host` is a non-loopback name it also answers to
    (`--allow-non-loopback`)."""
    app = FastAPI(title="Herald console", docs_url=None, redoc_url=None, openapi_url=None)
    page_token = secrets.token_urlsafe(32)
    guard(app, page_token, extra_host)
    answer_errors(app, stack)
    page_routes(app)
    shown, http = Shown(stack), httpx.Client(timeout=30)
    app.include_router(user_routes(shown, page_token, httpx.AsyncClient(timeout=30)))
    app.include_router(conversation_routes(shown, http))
    app.include_router(card_routes(shown, http))
    app.include_router(operate_routes(stack))
    app.include_router(steer_routes(stack))
    return app


def page_routes(app: FastAPI) -> None:
    """The page and its own files, nothing beside them."""

    @app.get("/")
    def page() -> FileResponse:
        return FileResponse(STATIC / "index.html")

    @app.get("/favicon.ico")
    def no_icon() -> Response:
        return Response(status_code=204)

    @app.get("/static/{name}")
    def asset(name: str) -> FileResponse:
        path = STATIC / name
        if path.parent != STATIC or not path.is_file():
            raise HTTPException(404, "no such file")
        return FileResponse(path)


def guard(app: FastAPI, page_token: str, extra_host: str | None) -> None:
    """Only the console's own origin: its loopback Host, its own Origin, and for every change a JSON body and
    the page's token in a header (what neither a rebinding page nor a cross-site form can send)."""
    names = (*LOOPBACK_NAMES, *([extra_host] if extra_host else []))

    @app.middleware("http")
    async def own_origin_only(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        port = (request.scope.get("server") or ("", 0))[1]
        allowed = {f"{name}:{port}" for name in names}
        host = request.headers.get("host", "")
        if host not in allowed:
            return refused(421, f"the console answers only on {', '.join(sorted(allowed))}, not {host!r}")
        origin = request.headers.get("origin")
        if origin is not None and origin not in {f"http://{h}" for h in allowed}:
            return refused(403, f"the console refuses requests from another origin ({origin!r})")
        if request.method not in SAFE_METHODS:
            media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
            if media_type != "application/json":
                return refused(415, "a request that changes something is JSON (content-type: application/json)")
            if not secrets.compare_digest(request.headers.get(PAGE_HEADER, ""), page_token):
                return refused(403, f"a request that changes something carries the page's {PAGE_HEADER}")
        return await call_next(request)


def refused(status: int, why: str) -> JSONResponse:
    return JSONResponse({"error": why}, status_code=status)


def answer_errors(app: FastAPI, stack: Stack) -> None:
    """Every failure the page can meet, as JSON with an `error` it shows (never a bare 500)."""

    @app.exception_handler(HeraldError)
    def refused(request: Request, error: HeraldError) -> JSONResponse:
        """Herald's refusals with the status the HTTP API gives them (404 not found, 409 conflict, ...)."""
        answer = {"error": error.message, "code": error.code, "reason": error.reason}
        return JSONResponse(answer, status_code=STATUS_BY_CODE.get(error.code, 500))

    @app.exception_handler(RequestValidationError)
    def bad_input(request: Request, error: RequestValidationError) -> JSONResponse:
        """A body or query the page (or a careless script) got wrong: 400, naming the field."""
        first = error.errors()[0] if error.errors() else {}
        field = ".".join(str(part) for part in first.get("loc", ())[1:])
        return JSONResponse({"error": f"{field}: {first.get('msg', 'invalid')}".strip(": ")}, status_code=400)

    @app.exception_handler(httpx.TransportError)
    def api_or_fake_down(request: Request, error: httpx.TransportError) -> JSONResponse:
        return not_answering(stack, str(error.request.url.copy_with(path="/", query=None)))

    @app.exception_handler(EndpointConnectionError)
    def aws_down(request: Request, error: EndpointConnectionError) -> JSONResponse:
        return not_answering(stack, str(error.kwargs.get("endpoint_url", "AWS")))

    @app.exception_handler(BotoCoreError)
    @app.exception_handler(ClientError)
    def aws_refused(request: Request, error: Exception) -> JSONResponse:
        """Missing credentials, a denied permission, a throttle: AWS's own words, for the operator to act on."""
        return JSONResponse({"error": f"AWS refused: {error}"}, status_code=502)


def not_answering(stack: Stack, url: str) -> JSONResponse:
    """What the page shows when the cloud behind it is gone, rather than a bare 500."""
    hint = f"is the stack {stack.name} reachable with your AWS credentials?" if stack.name else "is `make dev` running?"
    return JSONResponse({"error": f"{url} is not answering: {hint}"}, status_code=503)
