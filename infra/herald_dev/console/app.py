"""The console's server: the page, and what the page asks for.

It runs on the operator's machine, on loopback, against the running local cloud or a deployed stack (`--stack`,
through the operator's AWS credentials): no admin surface is deployed. Users' actions go to the real HTTP API
with that user's token (locally the console mints it, as `herald token` does); the IM and Feishu panels read
what the local cloud's fakes received; Operate runs `herald-ops`' own operations (`herald_ops.views`).

It answers only its own origin (`guard`): a `Host` other than 127.0.0.1, localhost or [::1] with the console's
own port is refused (a DNS-rebinding page names its own host), so is any `Origin` but the console's, and a
request that changes something needs `content-type: application/json` and the per-start token the page read
from `/console/config` (a header: a cross-site form or page can send neither).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import jwt
from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError
from fastapi import APIRouter, Body, FastAPI, HTTPException, Request, Response
from fastapi.responses import FileResponse, JSONResponse
from herald_ops import views
from herald_ops.stack import NoLocalCloud, Stack

from herald.errors import HeraldError
from herald_dev.local_identity import LOCAL_JWT_SECRET

STATIC = Path(__file__).parent / "static"
PROXIED = ("api/v1/",)  # the console acts as app users only; services and operators act through Operate
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
PAGE_HEADER = "x-herald-console-token"
SAFE_METHODS = ("GET", "HEAD")


def create_console(stack: Stack, extra_host: str | None = None) -> FastAPI:
    """The console app; `extra_host` is a non-loopback name it also answers to (`--allow-non-loopback`)."""
    app = FastAPI(title="Herald console", docs_url=None, redoc_url=None, openapi_url=None)
    http = httpx.Client(timeout=30)
    page_token = secrets.token_urlsafe(32)
    guard(app, page_token, extra_host)

    def local(key: str) -> Any:
        if stack.name:
            raise HTTPException(404, f"{key} exists only on the local cloud")
        try:
            return stack.local_state[key]
        except NoLocalCloud as exc:
            raise HTTPException(503, str(exc)) from exc

    def fake(name: str) -> str:
        url = (local("fakes") or {}).get(name)
        if not url:
            raise HTTPException(404, f"no fake {name}: the local cloud runs with a real provider")
        return str(url)

    answer_errors(app, stack)
    page_routes(app)

    @app.get("/console/sessions/{session_id}")
    def session(session_id: str, app_code: str = "lalu") -> dict[str, Any]:
        """A session's members and agents with each agent's turn state (the operator's view of the store)."""
        from herald.turns.wiring import turn_store

        store = turn_store(stack.container)
        found = store.session(app_code, session_id)
        if found is None:
            raise HTTPException(404, "no such session")
        agents = [store.agent(app_code, session_id, agent) for agent in found.agents]
        return {
            "members": dict(found.members),
            "status": str(found.status),
            "owner_service": found.owner_service,
            "agents": [
                {
                    "agent": a.agent,
                    "state": str(a.state),
                    "turn_id": a.turn.turn_id if a.turn else None,
                    "waiting": len(a.queue),
                }
                for a in agents
            ],
        }

    @app.get("/console/config")
    def config() -> dict[str, Any]:
        """What the page needs first, its token among it (same-origin only: no page elsewhere can read it)."""
        if stack.name:
            return {"stack": stack.name, "local": False, "page_token": page_token}
        return {
            "stack": "local",
            "local": True,
            "ws_url": local("ws_url"),
            "fakes": local("fakes") or {},
            "page_token": page_token,
        }

    @app.post("/console/token")
    def token(user_id: str = Body(embed=True), app_code: str = Body("lalu", embed=True)) -> dict[str, str]:
        local("http_url")  # local cloud only: a deployed stack's users sign in with its identity provider
        now = int(time.time())
        claims = {"sub": user_id, "app_code": app_code, "iat": now, "exp": now + 3600}
        return {"token": jwt.encode(claims, LOCAL_JWT_SECRET, algorithm="HS256")}

    @app.api_route("/console/app/{path:path}", methods=["GET", "POST", "PUT", "DELETE"])
    async def app_api(path: str, request: Request) -> Response:
        """The real HTTP API, called with the user's token the page holds (same origin, so no CORS)."""
        if not path.startswith(PROXIED):
            raise HTTPException(404, "only app routes")
        answer = http.request(
            request.method,
            f"{local('http_url')}/{path}",
            params=request.query_params,
            content=await request.body(),
            headers={k: v for k, v in request.headers.items() if k in ("authorization", "content-type")},
        )
        return Response(answer.content, answer.status_code, media_type="application/json")

    @app.get("/console/im")
    def im(a: str, b: str) -> list[dict[str, Any]]:
        messages = http.get(f"{fake('tencent_im')}/__fake/messages").json()
        return [m for m in messages if {m["from"], m["to"]} == {a, b}]

    @app.get("/console/feishu")
    def feishu() -> list[dict[str, Any]]:
        """Every card the fake received, with its history and the revision Herald recorded for it."""
        cards: dict[str, dict[str, Any]] = {}
        for entry in http.get(f"{fake('feishu')}/__fake/messages").json():
            card = cards.setdefault(
                entry["message_id"],
                {"message_id": entry["message_id"], "chat": entry["receive_id"], "history": []},
            )
            status, summary = _status_line(entry["card"]), _summary_text(entry["card"])
            card["title"], card["card"], card["status"] = entry["title"], entry["card"], status
            shown = {"title": entry["title"], "status": status, "summary": summary}
            card["history"].append({"op": entry["op"], "at_ms": entry["at_ms"], **shown})
        revisions = _card_revisions(stack)
        for card in cards.values():
            card["revision"] = revisions.get(card["message_id"])
        return sorted(cards.values(), key=lambda c: c["history"][-1]["at_ms"], reverse=True)

    app.include_router(operate_routes(stack))
    return app


def operate_routes(stack: Stack) -> APIRouter:
    """Operate: `herald-ops`' operations on the stack (DLQs, blocked services, stuck confirms, tenants)."""
    router = APIRouter()

    @router.get("/console/operate")
    def operate() -> dict[str, Any]:
        """Polled: each DLQ's depth from its attributes, and the oldest message's age from a peek (which
        puts what it read back at once) only where there is something to see."""
        from herald_ops.dlq import depth, describe

        sqs, now = stack.client("sqs"), _now_ms()
        dlqs = []
        for queue in views.dead_letter_queues(stack):
            empty = {"dlq": queue.logical_id, "kind": queue.kind, "source": queue.source_logical_id, "depth": 0}
            row = describe(sqs, queue, now, wait_s=0) if depth(sqs, queue.url) else empty
            dlqs.append({**row, "redrivable": queue.redrivable})
        return {
            "dlqs": dlqs,
            "blocked": views.blocked_services(stack),
            "stuck": views.stuck_confirms(stack, grace_s=0),
            "tenants": views.tenants(stack),
        }

    @router.post("/console/dlq/{name}/{step}")
    def dlq(name: str, step: str, confirm: str = Body("", embed=True)) -> Any:
        from herald_ops.dlq import Journal, Redrive, describe, peek, peeked_view, plan

        queues = [q for q in views.dead_letter_queues(stack) if q.logical_id == name]
        if not queues:
            raise HTTPException(404, "no such dead-letter queue")
        queue, sqs = queues[0], stack.client("sqs")
        if step == "peek":
            messages = [peeked_view(m) for m in peek(sqs, queue, 10, wait_s=0).messages]
            return {**describe(sqs, queue, _now_ms(), wait_s=0), "messages": messages}
        if step == "plan":
            return plan(sqs, queue, 1000, wait_s=0)
        if step == "redrive" and queue.redrivable and confirm == name:
            journal = Journal.open(views.journal_path(stack, name))
            return Redrive(sqs, queue, journal, rate_per_s=10.0, visibility_s=60, wait_s=0).run(1000).as_dict()
        raise HTTPException(400, "peek, plan, or redrive with {'confirm': <the DLQ's name>}")

    @router.post("/console/events/{job_id:path}/resolve")  # a lane's job id holds a "/"
    def resolve(
        job_id: str,
        action: str = Body(embed=True),
        message_id: str = Body("", embed=True),
        note: str = Body("", embed=True),
        by: str = Body("console", embed=True),
    ) -> dict[str, Any]:
        from herald.events.operations import describe
        from herald.events.wiring import operations

        ops = operations(stack.container)
        if action == "sent" and message_id:
            return describe(ops.sent(job_id, message_id, by, note))
        if action == "requeue":
            return describe(ops.requeue(job_id, by, note))
        if action == "skip":
            return describe(ops.skip(job_id, by, note))
        raise HTTPException(400, "action: sent (with message_id), requeue or skip")

    @router.post("/console/confirms/{app_code}/{confirm_id}/repair")
    def repair(app_code: str, confirm_id: str) -> dict[str, Any]:
        from herald.confirms.models import view
        from herald.confirms.wiring import confirm_operations

        repaired = confirm_operations(stack.container).repair(app_code, confirm_id)
        return {**view(repaired.confirm), "resent": list(repaired.resent)}

    return router


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
        return JSONResponse({"error": error.message, "reason": error.reason}, status_code=409)

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


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _status_line(card: dict[str, Any]) -> str:
    """A Herald card's status line (its `note`: the event's status and type), as a person sees it on the card."""
    notes = [element for element in card.get("elements", []) if element.get("tag") == "note"]
    return " ".join(str(part.get("content", "")) for note in notes for part in note.get("elements", []))


def _summary_text(card: dict[str, Any]) -> str:
    return " ".join(str(e["text"].get("content", "")) for e in card.get("elements", []) if "text" in e).strip()


def _card_revisions(stack: Stack) -> dict[str, int]:
    """Feishu message id -> the revision Herald's card mapping holds (what the card shows now)."""
    table = stack.settings.events_table
    dynamodb = stack.client("dynamodb")
    found: dict[str, int] = {}
    for page in dynamodb.get_paginator("scan").paginate(
        TableName=table,
        FilterExpression="item_type = :card",
        ExpressionAttributeValues={":card": {"S": "card"}},
    ):
        for item in page["Items"]:
            found[item["message_id"]["S"]] = int(item["revision"]["N"])
    return found
