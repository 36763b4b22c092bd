"""herald-ops events: the lanes a failed or UNKNOWN job holds up, one job in full, and its resolution (recorded with
who and when)."""

from __future__ import annotations

import os
from typing import Any

import click
from herald_ops.commands import pauses
from herald_ops.commands.audit import audited, named, reads_only, record_detail
from herald_ops.commands.common import (
    F,
    looked_until,
    print_record,
    print_rows,
    refuse,
    since_ms,
    stack_of,
    stack_options,
)
from herald_ops.output import Listing
from herald_ops.stack import Stack

from herald.errors import HeraldError


@click.group(help="external events")
def events() -> None:
    pass


BLOCKED_LANES = Listing(
    ("lane", "job_id", "status", "why", "blocked_at_ms", "waiting_behind"),
    "Nothing is blocked: every lane's events are moving.",
)
UNKNOWN_JOBS = Listing(
    ("lane", "job_id", "why", "first_marked_at_ms", "awaiting_operator", "next_settle_at_ms"),
    "No job is UNKNOWN.",
)


def _event_operations(stack: Stack) -> Any:
    from herald.events.wiring import operations

    return operations(stack.container)


def _blocked(only_unknown: bool, service: str | None, wait: int, where: dict[str, Any]) -> int:
    """The blocked lanes (or UNKNOWN jobs); with `wait`, looked at again until one shows or that many seconds
    passed (a script that just caused one)."""
    from herald_ops.views import blocked_services

    stack = stack_of(**where)
    found = looked_until(lambda: blocked_services(stack, only_unknown, service), bool, wait)
    print_rows(found, UNKNOWN_JOBS if only_unknown else BLOCKED_LANES)
    return 0


def blocked_options(command: F) -> F:
    """--service and --wait of `events blocked` and `events unknown`."""
    command = click.option("--service", help="only this service's lanes")(command)
    return click.option(
        "--wait", type=click.IntRange(0, 300), default=0, help="seconds to wait for one to show (default: look once)"
    )(command)


@events.command(
    "blocked",
    help="lanes (services, or a service's targets) stopped by a failed or UNKNOWN job: the job, why, "
    "since when, how many wait",
)
@blocked_options
@stack_options
@reads_only
def events_blocked(service: str | None, wait: int, **where: Any) -> int:
    return _blocked(False, service, wait, where)


@events.command(
    "unknown",
    help="jobs whose side effect may or may not have happened: those Herald still settles (next_settle_at_ms) and "
    "those it left to you (awaiting_operator), with its evidence (check Feishu, then resolve)",
)
@blocked_options
@stack_options
@reads_only
def events_unknown(service: str | None, wait: int, **where: Any) -> int:
    return _blocked(True, service, wait, where)


@events.command(
    "show",
    help="one job as Herald recorded it: status, outcome, evidence and resolutions (a superseded revision names "
    "the revision sent instead)",
)
@click.argument("job")
@stack_options
@reads_only
def events_show(job: str, **where: Any) -> int:
    from herald.events.operations import describe

    try:
        found = _event_operations(stack_of(**where)).get(job)
    except HeraldError as error:
        return refuse(error.message)
    print_record(describe(found))
    return 0


@events.command(
    "resolve",
    help="resolve a blocked job (recorded with who and when); or, with --service instead of JOB, every blocked job "
    "of a service that matches: planned first, acted on only with --execute, lane by lane",
)
@click.argument("job", required=False)
@click.option("--sent", metavar="MESSAGE_ID", help="it did arrive in Feishu: record this message id")
@click.option("--requeue", is_flag=True, help="run it again (it did not arrive, or the cause is fixed)")
@click.option("--skip", is_flag=True, help="give up on it: not delivered, its lane goes on")
@click.option("--by", default=lambda: os.environ.get("USER", "operator"), help="who resolves (recorded)")
@click.option("--note", default="", help="why (recorded)")
@click.option("--service", help="bulk: this service's blocked jobs")
@click.option("--target", metavar="TYPE:ID", help="bulk: only this target's lane")
@click.option("--status", type=click.Choice(["failed", "unknown"]), help="bulk: only jobs blocked so")
@click.option("--all-blocked", is_flag=True, help="bulk: every blocked job of the service, failed or unknown")
@click.option("--since", metavar="TIME", help="bulk: only jobs blocked at this ISO date or time or later")
@click.option("--execute", is_flag=True, help="bulk: act on the plan (without it: print the plan only)")
@stack_options
@audited(named("job", "service", "target"), acts=lambda a: bool(a["job"]) or bool(a["execute"]))
def events_resolve(
    job: str | None, sent: str | None, requeue: bool, skip: bool, by: str, note: str, **given: Any
) -> int:
    bulk = {name: given.pop(name) for name in ("service", "target", "status", "all_blocked", "since", "execute")}
    if [bool(sent), requeue, skip].count(True) != 1:
        raise click.UsageError("give exactly one of --sent MESSAGE_ID, --requeue, --skip")
    if job is None:
        if sent:
            raise click.UsageError(
                "--sent records one job's Feishu message: give its JOB (a bulk takes --requeue|--skip)"
            )
        return _resolve_many(requeue, by, note, bulk, given)
    if any(bulk.values()):
        raise click.UsageError("give a JOB, or --service (and its filters) for a bulk resolution, not both")
    return _resolve_one(job, sent, requeue, by, note, given)


def _resolve_one(job: str, sent: str | None, requeue: bool, by: str, note: str, where: dict[str, Any]) -> int:
    from herald.events.operations import describe

    operations = _event_operations(stack_of(**where))
    try:
        if sent:
            resolved = operations.sent(job, sent, by, note)
        elif requeue:
            resolved = operations.requeue(job, by, note)
        else:
            resolved = operations.skip(job, by, note)
    except HeraldError as error:
        return refuse(error.message)
    print_record(describe(resolved))
    return 0


RESOLUTION_PLAN = Listing(("lane", "job_id", "status", "why", "blocked_at_ms", "becomes"), "Nothing matches: no job.")


def _lane(service: str, target: str) -> str:
    from herald_ops.pause_keys import lane_key

    try:
        return lane_key(service, target)
    except ValueError as error:
        raise click.UsageError(str(error)) from error


def _resolve_many(requeue: bool, by: str, note: str, bulk: dict[str, Any], where: dict[str, Any]) -> int:
    """Plan which blocked jobs a bulk resolution takes and what each becomes; with --execute, resolve them in the
    plan's order, each printed with its outcome."""
    from herald_ops.views import resolution_plan, resolve_planned

    if not bulk["service"]:
        raise click.UsageError("give a JOB, or --service for a bulk resolution")
    if bool(bulk["status"]) == bulk["all_blocked"]:
        raise click.UsageError("a bulk resolution needs --status failed|unknown or --all-blocked (not both)")
    lane = _lane(bulk["service"], bulk["target"]) if bulk["target"] else None
    stack = stack_of(**where)
    plan = resolution_plan(stack, bulk["service"], lane, bulk["status"], since_ms(bulk["since"]), requeue)
    if not bulk["execute"]:
        print_rows(plan, RESOLUTION_PLAN)
        click.echo(f"# {len(plan)} job(s) planned, nothing changed: add --execute to resolve them", err=True)
        return 0
    done = resolve_planned(stack, plan, requeue, by, note)
    record_detail(resolved=done, planned=len(plan))
    print_rows(plan, Listing((*RESOLUTION_PLAN.columns, "outcome"), RESOLUTION_PLAN.nothing))
    return 0 if done == len(plan) else refuse(f"{len(plan) - done} of {len(plan)} planned job(s) were not resolved")


STATUS_WEBHOOKS = Listing(
    ("service_id", "tenant", "url", "statuses", "updated_at_ms", "previous_secret_until_ms"),
    "No service has a status webhook.",
)


@events.command("webhooks", help="partners' status webhooks: service, tenant, URL and statuses (never a secret)")
@stack_options
@reads_only
def events_webhooks(**where: Any) -> int:
    from herald.events.webhooks.wiring import status_webhooks

    stack = stack_of(**where)
    print_rows([webhook.view() for webhook in status_webhooks(stack.container).all()], STATUS_WEBHOOKS)
    return 0


def _pause_key(service: str | None, target: str | None, tenant: str | None = None) -> str:
    """A service's pause, one target's (the lane of a service that posts `order: target`), or a tenant's."""
    from herald_ops.pause_keys import events_pause_key

    try:
        return events_pause_key(service, target, tenant)
    except ValueError as error:
        raise click.UsageError(str(error)) from error


def pause_options(command: F) -> F:
    command = click.option("--tenant", metavar="APP_CODE", help="every service's deliveries of this tenant")(command)
    command = click.option("--target", metavar="TYPE:ID", help="only this target's lane (chat_id:oc_..., ...)")(command)
    return click.option("--service", help="the partner service whose deliveries to hold")(command)


@events.command(
    "pause", help="hold a service's (one target's, or a tenant's) deliveries: intake goes on, nothing is sent"
)
@pause_options
@pauses.noted
@stack_options
@audited(named("service", "target", "tenant"))
def events_pause(service: str | None, target: str | None, tenant: str | None, by: str, note: str, **where: Any) -> int:
    return pauses.pause(_pause_key(service, target, tenant), by, note, where)


@events.command("resume", help="end a pause: what it held is delivered at once, in order, at the governed pace")
@pause_options
@stack_options
@audited(named("service", "target", "tenant"))
def events_resume(service: str | None, target: str | None, tenant: str | None, **where: Any) -> int:
    return pauses.resume(_pause_key(service, target, tenant), where)


@events.command("paused", help="every pause (events' and pushes'): since when, by whom, why, and what it holds")
@pauses.waiting
@stack_options
@reads_only
def events_paused(wait: int, **where: Any) -> int:
    return pauses.listed(wait, where)
