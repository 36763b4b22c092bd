"""herald-ops dlq: the dead-letter queues, peeked in place, redriven after a plan with a journal, purged
after asking."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from herald_ops.commands.audit import audited, named, reads_only
from herald_ops.commands.common import (
    WAIT_CHOICES,
    F,
    print_record,
    print_rows,
    refuse,
    stack_of,
    stack_options,
)
from herald_ops.output import Listing
from herald_ops.stack import Stack

from herald.clock import now_ms


@click.group(help="dead-letter queues")
def dlq() -> None:
    pass


DLQS = Listing(("dlq", "kind", "source", "depth", "oldest_age_s"), "No dead-letter queue is declared.")
PEEKED = Listing(("message_id", "group", "sent_at_ms", "receive_count", "failure_reason"), "The queue is empty.")


def _dead_letter_queues(stack: Stack, name: str | None = None) -> list[Any]:
    from herald_ops.views import dead_letter_queues

    queues = dead_letter_queues(stack)
    if name is None:
        return queues
    chosen = [q for q in queues if q.logical_id.lower() == name.lower()]
    if not chosen:
        raise click.UsageError(f"no dead-letter queue {name!r}; one of: {', '.join(q.logical_id for q in queues)}")
    return chosen


def wait_option(command: F) -> F:
    from herald_ops.dlq import WAIT_SECONDS

    return click.option(
        "--wait",
        type=WAIT_CHOICES,
        default=WAIT_SECONDS,
        help=f"seconds each receive waits for messages (long polling; default {WAIT_SECONDS})",
    )(command)


@dlq.command("list", help="every DLQ: depth, oldest message age, source")
@wait_option
@stack_options
@reads_only
def dlq_list(wait: int, **where: Any) -> int:
    from herald_ops.dlq import describe

    stack = stack_of(**where)
    sqs = stack.client("sqs")
    print_rows([describe(sqs, queue, now_ms(), wait_s=wait) for queue in _dead_letter_queues(stack)], DLQS)
    return 0


@dlq.command("peek", help="messages with their group, receive count and failure reason (left in place)")
@click.argument("name", metavar="DLQ")
@click.option("--max", "most", type=int, default=10)
@wait_option
@stack_options
@reads_only
def dlq_peek(name: str, most: int, wait: int, **where: Any) -> int:
    from herald_ops.dlq import peek, peeked_view

    stack = stack_of(**where)
    (queue,) = _dead_letter_queues(stack, name)
    seen = peek(stack.client("sqs"), queue, most, wait_s=wait)
    print_rows([peeked_view(message) for message in seen.messages], PEEKED)
    click.echo(f"# {len(seen.messages)} shown of {seen.depth} in {queue.logical_id}", err=True)
    if seen.not_shown and len(seen.messages) < most:
        click.echo(
            f"# {seen.not_shown} not shown: in flight elsewhere, or behind the shown ones of their FIFO group",
            err=True,
        )
    return 0


@dlq.command("redrive", help="plan (default) or move messages back to their queue, group order kept")
@click.argument("name", metavar="DLQ")
@click.option("--execute", is_flag=True, help="move them (without it: print the plan only)")
@click.option("--max", "most", type=int, default=1000, help="at most this many messages")
@click.option("--rate", type=float, default=10.0, help="messages per second")
@click.option("--visibility", type=int, default=60, help="seconds a batch stays hidden while moved")
@click.option("--journal", help="where progress is kept (default .herald/redrive/<stack>-<dlq>.json)")
@wait_option
@stack_options
@audited(named("name"), acts=lambda a: bool(a["execute"]))
def dlq_redrive(
    name: str, execute: bool, most: int, rate: float, visibility: int, journal: str | None, wait: int, **where: Any
) -> int:
    from herald_ops import views
    from herald_ops.dlq import Journal, Redrive, plan

    stack = stack_of(**where)
    (queue,) = _dead_letter_queues(stack, name)
    sqs = stack.client("sqs")
    if not queue.redrivable:
        return refuse(f"{queue.logical_id} holds {queue.kind}: nothing to send back (see README, Operating)")
    if not execute:
        print_record({"dry_run": True, **plan(sqs, queue, most, wait_s=wait)})
        click.echo("# nothing moved: add --execute to redrive", err=True)
        return 0
    journal_path = Path(journal) if journal else views.journal_path(stack, queue.logical_id)
    redrive = Redrive(sqs, queue, Journal.open(journal_path), rate_per_s=rate, visibility_s=visibility, wait_s=wait)
    print_record({"dlq": queue.logical_id, "to": queue.source_logical_id, **redrive.run(most).as_dict()})
    return 0


@dlq.command("purge", help="delete every message (asks first)")
@click.argument("name", metavar="DLQ")
@click.option("--yes", is_flag=True, help="do not ask")
@stack_options
@audited(named("name"))
def dlq_purge(name: str, yes: bool, **where: Any) -> int:
    from herald_ops.dlq import purge

    stack = stack_of(**where)
    (queue,) = _dead_letter_queues(stack, name)
    if not yes:
        answer = click.prompt(f"Delete every message in {queue.logical_id}? Type its name to confirm", default="")
        if answer.strip() != queue.logical_id:
            return refuse("not confirmed: nothing deleted")
    purge(stack.client("sqs"), queue)
    print_record({"dlq": queue.logical_id, "purged": True})
    return 0
