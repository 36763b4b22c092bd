"""herald-ops confirms: confirms the janitor could not settle, and their repair from the owner."""

from __future__ import annotations

from typing import Any

import click
from herald_ops.commands import pauses
from herald_ops.commands.audit import audited, named, reads_only
from herald_ops.commands.common import (
    F,
    app_option,
    print_record,
    print_rows,
    refuse,
    stack_of,
    stack_options,
)
from herald_ops.output import Listing
from herald_ops.stack import Stack

from herald.errors import HeraldError


@click.group(help="action confirms")
def confirms() -> None:
    pass


STUCK = Listing(
    ("app_code", "confirm_id", "status", "why", "overdue_s", "last_error"),
    "No confirm is stuck and no push failed for good.",
)


def _confirm_operations(stack: Stack) -> Any:
    from herald.confirms.wiring import confirm_operations

    return confirm_operations(stack.container)


@confirms.command("stuck", help="confirms the janitor did not settle, and pushes that failed for good")
@click.option("--grace", type=int, default=120, help="seconds past expiry/lease before it counts as stuck")
@stack_options
@reads_only
def confirms_stuck(grace: int, **where: Any) -> int:
    from herald_ops.views import stuck_confirms

    print_rows(stuck_confirms(stack_of(**where), grace), STUCK)
    return 0


@confirms.command("repair", help="settle a confirm from its owner now and resend its failed pushes")
@click.argument("confirm_id")
@app_option
@stack_options
@audited(named("confirm_id"))
def confirms_repair(confirm_id: str, app: str | None, **where: Any) -> int:
    from herald.confirms.models import view

    stack = stack_of(**where)
    try:
        repaired = _confirm_operations(stack).repair(app or stack.settings.default_app_code, confirm_id)
    except HeraldError as error:
        return refuse(error.message)
    print_record({**view(repaired.confirm), "resent": list(repaired.resent)})
    return 0


def tenant_option(command: F) -> F:
    return click.option("--tenant", "app_code", required=True, metavar="APP_CODE", help="whose pushes")(command)


@confirms.command("pause", help="hold a tenant's IM pushes (its users are still served): nothing is sent")
@tenant_option
@pauses.noted
@stack_options
@audited(named("app_code"))
def confirms_pause(app_code: str, by: str, note: str, **where: Any) -> int:
    return pauses.pause(_pushes_key(app_code), by, note, where)


@confirms.command("resume", help="end a tenant's pause: its held pushes go out at once, in order")
@tenant_option
@stack_options
@audited(named("app_code"))
def confirms_resume(app_code: str, **where: Any) -> int:
    return pauses.resume(_pushes_key(app_code), where)


def _pushes_key(app_code: str) -> str:
    from herald_ops.pause_keys import pushes_pause_key

    try:
        return pushes_pause_key(app_code)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--tenant") from error


@confirms.command("paused", help="every pause (pushes' and events'): since when, by whom, why, and what it holds")
@pauses.waiting
@stack_options
@reads_only
def confirms_paused(wait: int, **where: Any) -> int:
    return pauses.listed(wait, where)
