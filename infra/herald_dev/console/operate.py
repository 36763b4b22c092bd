"""The Operate panel: `herald-ops`' own operations on the stack (`herald_ops.views`): what is dead-lettered,
blocked or stuck, and the operator's acts on it (peek, plan, redrive; resolve a job; repair a confirm)."""

from __future__ import annotations

import threading
import time
from typing import Any

from fastapi import APIRouter, Body, HTTPException
from herald_ops import views
from herald_ops.stack import Stack

from herald_dev.console.steer import BY_PATTERN, CONSOLE, recorded


def operate_routes(stack: Stack) -> APIRouter:
    router = APIRouter()
    reading = threading.Lock()  # the page's poll and an operator's click never read the DLQs at once
    router.include_router(_dead_letter_routes(stack, reading))
    router.include_router(_resolve_routes(stack))

    @router.get("/console/operate")
    def operate() -> dict[str, Any]:
        """Polled: each DLQ's depth from its attributes, and the oldest message's age from a peek (which
        puts what it read back at once) only where there is something to see and no click is reading it."""
        sqs, now = stack.client("sqs"), _now_ms()
        return {
            "dlqs": [_dead_letter_row(sqs, queue, now, reading) for queue in views.dead_letter_queues(stack)],
            "blocked": views.blocked_services(stack),
            "stuck": views.stuck_confirms(stack, grace_s=0),
            "tenants": views.tenants(stack),
        }

    @router.post("/console/confirms/{app_code}/{confirm_id}/repair")
    def repair(
        app_code: str, confirm_id: str, by: str = Body("", embed=True, max_length=64, pattern=BY_PATTERN)
    ) -> dict[str, Any]:
        from herald.confirms.models import view
        from herald.confirms.wiring import confirm_operations

        act = lambda: confirm_operations(stack.container).repair(app_code, confirm_id)  # noqa: E731
        repaired = recorded(stack, "confirms repair", confirm_id, {"app_code": app_code}, act, by)
        return {**view(repaired.confirm), "resent": list(repaired.resent)}

    return router


def _resolve_routes(stack: Stack) -> APIRouter:
    """One blocked job resolved from its form: sent (with its Feishu message id), requeue or skip."""
    router = APIRouter()

    @router.post("/console/events/{job_id:path}/resolve")  # a lane's job id holds a "/"
    def resolve(
        job_id: str,
        action: str = Body(embed=True),
        message_id: str = Body("", embed=True),
        note: str = Body("", embed=True),
        by: str = Body("", embed=True, max_length=64, pattern=BY_PATTERN),
    ) -> dict[str, Any]:
        from herald.events.operations import describe
        from herald.events.wiring import operations

        ops = operations(stack.container)
        who = by or CONSOLE

        def act() -> dict[str, Any]:
            if action == "sent" and message_id:
                return describe(ops.sent(job_id, message_id, who, note))
            if action in ("requeue", "skip"):
                return describe(ops.requeue(job_id, who, note) if action == "requeue" else ops.skip(job_id, who, note))
            raise HTTPException(400, "action: sent (with message_id), requeue or skip")

        arguments = {"action": action, "message_id": message_id, "note": note}
        return recorded(stack, "events resolve", job_id, arguments, act, by)

    return router


def _dead_letter_routes(stack: Stack, reading: threading.Lock) -> APIRouter:
    """A peek, plan or redrive reads a DLQ's messages by holding them: it waits for the page's poll, which
    holds them too for a moment (a read while another holds them sees an empty queue)."""
    router = APIRouter()

    @router.post("/console/dlq/{name}/{step}")
    def dlq(
        name: str,
        step: str,
        confirm: str = Body("", embed=True, max_length=200),
        by: str = Body("", embed=True, max_length=64, pattern=BY_PATTERN),
    ) -> Any:
        with reading:
            return _dead_letter_step(stack, name, step, confirm, by)

    return router


def _dead_letter_row(sqs: Any, queue: Any, now_ms: int, reading: threading.Lock) -> dict[str, Any]:
    from herald_ops.dlq import depth, describe

    count = depth(sqs, queue.url)
    row = {"dlq": queue.logical_id, "kind": queue.kind, "source": queue.source_logical_id, "depth": count}
    if count and reading.acquire(blocking=False):  # else an operator's click reads it now: its depth alone
        try:
            row = describe(sqs, queue, now_ms, wait_s=0)
        finally:
            reading.release()
    return {**row, "redrivable": queue.redrivable}


def _dead_letter_step(stack: Stack, name: str, step: str, confirm: str, by: str) -> Any:
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
        redrive = Redrive(sqs, queue, journal, rate_per_s=10.0, visibility_s=60, wait_s=0)
        return recorded(stack, "dlq redrive", name, {}, lambda: redrive.run(1000).as_dict(), by)
    raise HTTPException(400, "peek, plan, or redrive with {'confirm': <the DLQ's name>}")


def _now_ms() -> int:
    return time.time_ns() // 1_000_000
