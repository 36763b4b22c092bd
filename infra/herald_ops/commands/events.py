"""herald-ops events: the lanes a failed or UNKNOWN job holds up, one job in full, and its resolution (recorded with
who and when)."""

from __future__ import annotations

import os
from typing import Any

import click
from herald_ops.commands import pauses
from herald_ops.commands.common import (
    F,
    looked_until,
    print_record,
    print_rows,
    refuse,
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
def events_blocked(service: str | None, wait: int, **where: Any) -> int:
    return _blocked(False, service, wait, where)


@events.command(
    "unknown",
    help="jobs whose side effect may or may not have happened: those Herald still settles (next_settle_at_ms) and "
    "those it left to you (awaiting_operator), with its evidence (check Feishu, then resolve)",
)
@blocked_options
@stack_options
def events_unknown(service: str | None, wait: int, **where: Any) -> int:
    return _blocked(True, service, wait, where)


@events.command(
    "show",
    help="one job as Herald recorded it: status, outcome, evidence and resolutions (a superseded revision names "
    "the revision sent instead)",
)
@click.argument("job")
@stack_options
def events_show(job: str, **where: Any) -> int:
    from herald.events.operations import describe

    try:
        found = _event_operations(stack_of(**where)).get(job)
    except HeraldError as error:
        return refuse(error.message)
    print_record(describe(found))
    return 0


@events.command("resolve", help="resolve a blocked job (recorded with who and when)")
@click.argument("job")
@click.option("--sent", metavar="MESSAGE_ID", help="it did arrive in Feishu: record this message id")
@click.option("--requeue", is_flag=True, help="run it again (it did not arrive, or the cause is fixed)")
@click.option("--skip", is_flag=True, help="give up on it: not delivered, its lane goes on")
@click.option("--by", default=lambda: os.environ.get("USER", "operator"), help="who resolves (recorded)")
@click.option("--note", default="", help="why (recorded)")
@stack_options
def events_resolve(job: str, sent: str | None, requeue: bool, skip: bool, by: str, note: str, **where: Any) -> int:
    from herald.events.operations import describe

    if [bool(sent), requeue, skip].count(True) != 1:
        raise click.UsageError("give exactly one of --sent MESSAGE_ID, --requeue, --skip")
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


STATUS_WEBHOOKS = Listing(
    ("service_id", "tenant", "url", "statuses", "updated_at_ms", "previous_secret_until_ms"),
    "No service has a status webhook.",
)


@events.command("webhooks", help="partners' status webhooks: service, tenant, URL and statuses (never a secret)")
@stack_options
def events_webhooks(**where: Any) -> int:
    from herald.events.webhooks.wiring import status_webhooks

    stack = stack_of(**where)
    print_rows([webhook.view() for webhook in status_webhooks(stack.container).all()], STATUS_WEBHOOKS)
    return 0


def _pause_key(service: str, target: str | None) -> str:
    """A service's pause, or one target's (the lane of a service that posts `order: target`)."""
    from herald.events.models import Lane, Target
    from herald.holds.models import Pause

    if target is None:
        return Pause.key_of(service)
    try:
        lane = Lane(service, Target.parse(target).key).key
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--target") from error
    return Pause.key_of(service, lane)


def pause_options(command: F) -> F:
    command = click.option("--target", metavar="TYPE:ID", help="only this target's lane (chat_id:oc_..., ...)")(command)
    return click.option("--service", required=True, help="the partner service whose deliveries to hold")(command)


@events.command("pause", help="hold a service's (or one target's) deliveries: intake goes on, nothing is sent")
@pause_options
@pauses.noted
@stack_options
def events_pause(service: str, target: str | None, by: str, note: str, **where: Any) -> int:
    return pauses.pause(_pause_key(service, target), by, note, where)


@events.command("resume", help="end a pause: what it held is delivered at once, in order, at the governed pace")
@pause_options
@stack_options
def events_resume(service: str, target: str | None, **where: Any) -> int:
    return pauses.resume(_pause_key(service, target), where)


@events.command("paused", help="every pause (events' and pushes'): since when, by whom, why, and what it holds")
@pauses.waiting
@stack_options
def events_paused(wait: int, **where: Any) -> int:
    return pauses.listed(wait, where)
