"""What every herald-ops command shares: where it acts (a deployed stack or the local cloud), how it prints
(a table or one record's fields for people, JSON lines with `--json`), and how it refuses (`error: ...`, exit 2)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import click
from herald_ops.output import TABLE_WIDTH, Listing, json_lines, printable, record_text, table
from herald_ops.stack import DEFAULT_STATE, DEFAULT_TEMPLATE, Stack

from herald.clock import now_ms

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")
WAIT_CHOICES = click.IntRange(0, 20)
AS_JSON = "herald_ops.json"
WIDE = "herald_ops.wide"
REFUSAL = "herald_ops.refusal"


def _remember_json(context: click.Context, _: click.Parameter, as_json: bool) -> None:
    context.meta[AS_JSON] = as_json


def _remember_wide(context: click.Context, _: click.Parameter, wide: bool) -> None:
    context.meta[WIDE] = wide


def stack_options(command: F) -> F:
    """--stack/--profile/--region (a deployed stack) or --state-file (the local cloud), --template, --json."""
    options = [
        click.option(
            "--json",
            is_flag=True,
            expose_value=False,
            callback=_remember_json,
            help="one JSON object a line, as Herald records it (times in epoch milliseconds)",
        ),
        click.option(
            "--wide",
            is_flag=True,
            expose_value=False,
            callback=_remember_wide,
            help=f"a listing's every column whole (default: its lines fit {TABLE_WIDTH} characters)",
        ),
        click.option("--stack", "stack_name", help="a deployed stack (default: the running local cloud)"),
        click.option("--profile"),
        click.option("--region"),
        click.option(
            "--state-file",
            default=lambda: os.environ.get("HERALD_LOCAL_STATE", str(DEFAULT_STATE)),
            help="the running local cloud's state",
        ),
        click.option("--template", default=str(DEFAULT_TEMPLATE), help="where the DLQs are declared"),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def app_option(command: F) -> F:
    """--app: the tenant a command acts in."""
    return click.option("--app", help="the app_code (default: the stack's default_app_code)")(command)


def stack_of(stack_name: str | None, profile: str | None, region: str | None, state_file: str, template: str) -> Stack:
    return Stack(stack_name, profile, region, Path(state_file), Path(template))


def looked_until(read: Callable[[], T], shows: Callable[[T], bool], wait_s: int) -> T:
    """`read()`, read again every half second until `shows` what a script waits for or `wait_s` passed (0: once)."""
    deadline = time.monotonic() + wait_s
    found = read()
    while not shows(found) and time.monotonic() < deadline:
        time.sleep(0.5)
        found = read()
    return found


def since_ms(since: str | None) -> int:
    """A `--since` ISO date or time (local time unless it says) in epoch milliseconds; none: 0."""
    if not since:
        return 0
    try:
        return int(datetime.fromisoformat(since).timestamp() * 1000)
    except ValueError as error:
        raise click.BadParameter("a date or time, e.g. 2026-12-01 or 2026-12-01T09:30", param_hint="--since") from error


def refuse(message: str) -> int:
    context = click.get_current_context(silent=True)
    if context is not None:
        context.meta[REFUSAL] = message  # for the audit record of the verb it stops
    click.echo(f"error: {printable(message)}", err=True)
    return 2


def as_json() -> bool:
    return bool(click.get_current_context().meta.get(AS_JSON))


def print_record(value: dict[str, Any]) -> None:
    """One record: its fields for people, or one JSON line."""
    click.echo(json_lines([value]) if as_json() else record_text(value, now_ms()))


def print_rows(rows: list[dict[str, Any]], listing: Listing) -> None:
    """A listing: a table for people, or JSON lines; when it is empty, a line saying so (stderr with --json)."""
    if rows:
        width = None if click.get_current_context().meta.get(WIDE) else TABLE_WIDTH
        click.echo(json_lines(rows) if as_json() else table(rows, listing, now_ms(), width))
    else:
        click.echo(f"# {listing.nothing}" if as_json() else listing.nothing, err=as_json())


def run(group: click.Group, argv: list[str] | None, prog_name: str) -> int:
    """Run one command of `group`; its exit code (2 for a refusal or a usage error, 1 when aborted)."""
    try:
        result = group.main(args=argv, prog_name=prog_name, standalone_mode=False)
    except click.exceptions.Exit as done:
        return done.exit_code
    except click.ClickException as error:
        error.show()
        return error.exit_code
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 1
    return int(result or 0)
