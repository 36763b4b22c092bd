"""herald-ops find: what Herald issued or recorded under an id, of whatever kind, with its timeline."""

from __future__ import annotations

from typing import Any

import click
from herald_ops.commands.audit import reads_only
from herald_ops.commands.common import print_record, stack_of, stack_options
from herald_ops.stack import Stack


def finder(stack: Stack) -> Any:
    from herald_ops.find import SEARCHED, Finder

    settings = stack.settings
    return Finder(stack.client("dynamodb"), {name: getattr(settings, name) for name in SEARCHED})


@click.command(
    "find",
    help="what an id names (confirm, invitation, event job, event_id with --service, Feishu message id, IM "
    "MsgRandom, notification, turn, message) and its timeline: created, each delivery attempt, decisions, "
    "resolutions",
)
@click.argument("wanted", metavar="ID")
@click.option("--service", help="the partner service an event_id was posted by")
@stack_options
@reads_only
def find_command(wanted: str, service: str | None, **where: Any) -> int:
    wanted = wanted.strip()
    if not wanted or len(wanted) > 512:
        raise click.BadParameter("an id of 1 to 512 characters", param_hint="ID")
    results = finder(stack_of(**where)).find(wanted, service)
    if not results:
        click.echo(f"Nothing Herald recorded is known by {wanted!r}.", err=True)
        return 1
    for n, result in enumerate(results):
        if n:
            click.echo("")
        print_record(result.view())
    return 0
