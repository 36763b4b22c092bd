"""The Operate panel's steering: pauses (list, pause, resume), a bulk resolution (plan, then execute), the search
box (`herald-ops find`) and the Audit tab. Every act here is written to the audit log as the console's, before it
runs and with its outcome after, like herald-ops' own verbs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

from fastapi import APIRouter, Body, HTTPException, Query
from herald_ops import views
from herald_ops.stack import Stack

from herald.errors import HeraldError

T = TypeVar("T")
CONSOLE = "console"
BY_PATTERN = r"^[^\x00-\x1f\x7f]*$"  # the operator's name as the page keeps it: printable


def recorded(stack: Stack, verb: str, target: str, arguments: dict[str, Any], act: Callable[[], T], by: str = "") -> T:
    """Run `act` as the console's audited act `verb` on `target`, by the operator the page named (`by`)."""
    from herald.audit.wiring import audit_log

    log = audit_log(stack.container)
    actor = f"{CONSOLE} ({by})" if by else CONSOLE
    record = log.begin(actor, f"console: {verb}", target, {k: v for k, v in arguments.items() if v})
    try:
        result = act()
    except HeraldError as error:
        log.finish(record, f"refused: {error.message}")
        raise
    except HTTPException as error:
        log.finish(record, f"refused: {error.detail}")
        raise
    except BaseException as error:
        log.finish(record, f"failed: {type(error).__name__}")
        raise
    log.finish(record, "ok")
    return result


def steer_routes(stack: Stack) -> APIRouter:
    router = APIRouter()
    router.include_router(_pause_routes(stack))
    router.include_router(_bulk_routes(stack))
    router.include_router(_look_routes(stack))
    return router


def _pause_routes(stack: Stack) -> APIRouter:
    router = APIRouter()

    @router.get("/console/pauses")
    def pauses() -> list[dict[str, Any]]:
        from herald.holds.wiring import holds

        return [
            {"paused": p.key, "by": p.by, "note": p.note, "since_ms": p.since_ms, "held": held}
            for p, held in holds(stack.container).paused()
        ]

    @router.post("/console/pauses")
    def pause(
        what: Literal["events", "pushes"] = Body(embed=True),
        service: str | None = Body(None, embed=True, max_length=64),
        target: str | None = Body(None, embed=True, max_length=256),
        tenant: str | None = Body(None, embed=True, max_length=32),
        note: str = Body("", embed=True, max_length=500),
        by: str = Body("", embed=True, max_length=64, pattern=BY_PATTERN),
    ) -> dict[str, Any]:
        from herald.holds.wiring import holds

        key = _pause_key(what, service or None, target or None, tenant or None)
        act = lambda: holds(stack.container).pause(key, by or CONSOLE, note)  # noqa: E731
        paused = recorded(stack, "pause", key, {"note": note}, act, by)
        return {"paused": paused.key, "by": paused.by, "note": paused.note, "since_ms": paused.since_ms}

    @router.post("/console/pauses/resume")
    def resume(
        key: str = Body(embed=True, max_length=400), by: str = Body("", embed=True, max_length=64, pattern=BY_PATTERN)
    ) -> dict[str, Any]:
        from herald.holds.wiring import holds

        released = recorded(stack, "resume", key, {}, lambda: holds(stack.container).resume(key), by)
        return {"resumed": key, "released": released}

    return router


def _bulk_routes(stack: Stack) -> APIRouter:
    router = APIRouter()

    @router.post("/console/events/resolve-many")
    def resolve_many(
        service: str = Body(embed=True, max_length=64),
        action: Literal["requeue", "skip"] = Body(embed=True),
        status: Literal["failed", "unknown"] | None = Body(None, embed=True),
        job_ids: Annotated[list[str] | None, Body(embed=True, max_length=500)] = None,
        execute: bool = Body(False, embed=True),
        note: str = Body("", embed=True, max_length=500),
        by: str = Body("", embed=True, max_length=64, pattern=BY_PATTERN),
    ) -> dict[str, Any]:
        """The plan of a bulk resolution (of the selected jobs only, when `job_ids` names them); with `execute`,
        that plan done, lane by lane."""
        requeue = action == "requeue"
        plan = views.resolution_plan(stack, service, None, status, 0, requeue)
        if job_ids is not None:
            chosen = set(job_ids)
            plan = [row for row in plan if row["job_id"] in chosen]
        if not execute:
            return {"plan": plan}
        arguments = {"action": action, "status": status, "jobs": [row["job_id"] for row in plan], "note": note}
        done = recorded(
            stack,
            "events resolve",
            service,
            arguments,
            lambda: views.resolve_planned(stack, plan, requeue, by or CONSOLE, note),
            by,
        )
        return {"resolved": done, "plan": plan}

    return router


def _look_routes(stack: Stack) -> APIRouter:
    """The search box and the Audit tab: reads only."""
    router = APIRouter()

    @router.get("/console/find")
    def find(
        id: str = Query(min_length=1, max_length=512),
        service: str | None = Query(None, max_length=64),
    ) -> list[dict[str, Any]]:
        from herald_ops.commands.find import finder

        return [found.view() for found in finder(stack).find(id.strip(), service or None)]

    @router.get("/console/audit")
    def audit(
        verb: str | None = Query(None, max_length=100), actor: str | None = Query(None, max_length=200)
    ) -> list[dict[str, Any]]:
        from herald.audit.wiring import audit_log

        return [record.view() for record in audit_log(stack.container).listed(0, actor or None, verb or None, 200)]

    return router


def _pause_key(what: str, service: str | None, target: str | None, tenant: str | None) -> str:
    from herald_ops.pause_keys import events_pause_key, pushes_pause_key

    try:
        if what == "pushes":
            return pushes_pause_key(tenant or "")
        return events_pause_key(service, target, tenant)
    except ValueError as error:
        raise HTTPException(400, str(error)) from error
