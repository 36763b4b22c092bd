"""What an operator looks at, as rows: the CLI prints them as JSON lines, the console draws them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from herald_ops.stack import REPO_ROOT, Stack

from herald.clock import now_ms


def blocked_services(stack: Stack, only_unknown: bool = False, service: str | None = None) -> list[dict[str, Any]]:
    """Each lane (a service, or one target of a service ordering by target) stopped by a failed or UNKNOWN job:
    the job (its `lane` among its fields), why, its age and how many events wait in the lane."""
    from herald.events.operations import describe
    from herald.events.wiring import operations

    now, rows = now_ms(), []
    for job, head in operations(stack.container).blocked():
        if (only_unknown and str(job.status) != "unknown") or service not in (None, job.service_id):
            continue
        row = describe(job)
        row["age_s"] = round((now - job.blocked_at_ms) / 1000, 1)
        row["waiting_behind"] = max(0, head.next_seq - job.seq)
        rows.append(row)
    return rows


def resolution_plan(
    stack: Stack, service: str, lane: str | None, status: str | None, since_ms: int, requeue: bool
) -> list[dict[str, Any]]:
    """A bulk resolution's plan: each blocked job it takes (a lane's head, lane by lane) and what it becomes."""
    from herald.events.jobs import JobStatus
    from herald.events.operations import describe
    from herald.events.wiring import operations

    chosen = operations(stack.container).blocked_of(service, lane, JobStatus(status) if status else None, since_ms)
    return [{**describe(job), "becomes": "queued" if requeue else "skipped"} for job in chosen]


def resolve_planned(stack: Stack, plan: list[dict[str, Any]], requeue: bool, by: str, note: str) -> int:
    """Resolve each planned job in the plan's order, its `outcome` set on its row (one changed since the plan is
    refused alone); how many were resolved."""
    from herald.errors import HeraldError
    from herald.events.wiring import operations

    ops, done = operations(stack.container), 0
    act = ops.requeue if requeue else ops.skip
    for row in plan:
        try:
            row["outcome"] = str(act(row["job_id"], by, note).status)
            done += 1
        except HeraldError as error:
            row["outcome"] = f"refused: {error.message}"
    return done


def tenants(stack: Stack) -> list[dict[str, Any]]:
    """Each registered tenant as an operator sees it: its apps (never a secret) and whether it is enabled."""
    from herald.tenants.wiring import tenants as registry

    return [tenant.view() for tenant in registry(stack.container).all()]


def stuck_confirms(stack: Stack, grace_s: int) -> list[dict[str, Any]]:
    """Confirms the janitor did not settle, and pushes that failed for good."""
    from herald.confirms.models import view
    from herald.confirms.wiring import confirm_operations

    operations, now, rows = confirm_operations(stack.container), now_ms(), []
    for confirm in operations.stuck(grace_s * 1000):
        pending = str(confirm.status) == "pending"
        due = confirm.expire_at_ms if pending else confirm.lock_until_ms
        why = "past its expiry" if pending else "past its lease"
        rows.append({"app_code": confirm.app_code, **view(confirm), "why": why, "overdue_s": (now - due) / 1000})
    for delivery in operations.failed_deliveries():
        rows.append(
            {
                "app_code": delivery.app_code,
                "confirm_id": delivery.confirm_id,
                "push": delivery.key,
                "why": "push failed for good",
                "last_error": delivery.last_error,
                "attempts": delivery.attempts,
            }
        )
    return rows


def dead_letter_queues(stack: Stack) -> list[Any]:
    from herald_ops.dlq import dead_letter_queues as declared
    from herald_ops.template import StackTemplate

    template = StackTemplate.from_file(stack.template, parameter_overrides={"Stage": "local"})
    return declared(template, stack.physical_ids)


def journal_path(stack: Stack, logical_id: str) -> Path:
    """Where a redrive keeps its progress (a resumed redrive sends nothing twice)."""
    return REPO_ROOT / ".herald" / "redrive" / f"{stack.name or 'local'}-{logical_id}.json"
