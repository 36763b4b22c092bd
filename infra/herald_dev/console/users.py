"""The panels that act as app users (IM, Inbox, Sessions): the page's configuration, a token for a user (locally
the console mints it, as `herald token` does), and the real HTTP API called with it."""

from __future__ import annotations

import time
from typing import Any

import httpx
import jwt
from fastapi import APIRouter, Body, HTTPException, Request, Response

from herald_dev.console.cloud import Shown
from herald_dev.local_identity import LOCAL_JWT_SECRET

PROXIED = ("api/v1/",)  # the console acts as app users only; services and operators act through Operate


def user_routes(shown: Shown, page_token: str, api: httpx.AsyncClient) -> APIRouter:
    router = APIRouter()

    @router.get("/console/config")
    def config() -> dict[str, Any]:
        """What the page needs first, its token among it (same-origin only: no page elsewhere can read it)."""
        if shown.stack.name:
            return {"stack": shown.stack.name, "local": False, "page_token": page_token}
        return {
            "stack": "local",
            "local": True,
            "ws_url": shown.local("ws_url"),
            "fakes": shown.local("fakes") or {},
            "page_token": page_token,
        }

    @router.post("/console/token")
    def token(user_id: str = Body(embed=True), app_code: str | None = Body(None, embed=True)) -> dict[str, str]:
        shown.local("http_url")  # local cloud only: a deployed stack's users sign in with its identity provider
        now = int(time.time())
        tenant = app_code or shown.default_app_code
        claims = {"sub": user_id, "app_code": tenant, "iat": now, "exp": now + 3600}
        return {"token": jwt.encode(claims, LOCAL_JWT_SECRET, algorithm="HS256")}

    @router.api_route("/console/app/{path:path}", methods=["GET", "POST", "PUT", "DELETE"])
    async def app_api(path: str, request: Request) -> Response:
        """The real HTTP API, called with the user's token the page holds (same origin, so no CORS); awaited, so
        one slow answer holds up no other request of the page."""
        if not path.startswith(PROXIED):
            raise HTTPException(404, "only app routes")
        answer = await api.request(
            request.method,
            f"{shown.local('http_url')}/{path}",
            params=request.query_params,
            content=await request.body(),
            headers={k: v for k, v in request.headers.items() if k in ("authorization", "content-type")},
        )
        return Response(answer.content, answer.status_code, media_type="application/json")

    return router
