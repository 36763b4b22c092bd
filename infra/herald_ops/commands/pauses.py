"""What `events pause|resume|paused` and `confirms pause|resume|paused` share: an operator's pause kept with who,
when and why (herald.holds), its end putting back what it held, and the listing of every pause."""

from __future__ import annotations

import os
from typing import Any

import click
from herald_ops.commands.audit import record_detail
from herald_ops.commands.common import F, looked_until, print_record, print_rows, refuse, stack_of
from herald_ops.output import Listing

from herald.errors import HeraldError

PAUSES = Listing(("paused", "by", "note", "since_ms", "held"), "Nothing is paused: every delivery is moving.")


def noted(command: F) -> F:
    command = click.option("--note", default="", help="why (recorded)")(command)
    by = click.option("--by", default=lambda: os.environ.get("USER", "operator"), help="who pauses (recorded)")
    return by(command)


def waiting(command: F) -> F:
    wait = click.option(
        "--wait", default=0, type=click.IntRange(0, 300), metavar="SECONDS", help="look again until a pause holds one"
    )
    return wait(command)


def pause(key: str, by: str, note: str, where: dict[str, Any]) -> int:
    from herald.holds.wiring import holds

    paused = holds(stack_of(**where).container).pause(key, by, note)
    print_record({"paused": paused.key, "by": paused.by, "note": paused.note, "since_ms": paused.since_ms})
    return 0


def resume(key: str, where: dict[str, Any]) -> int:
    from herald.holds.wiring import holds

    try:
        released = holds(stack_of(**where).container).resume(key)
    except HeraldError as error:
        return refuse(error.message)
    record_detail(released=released)
    print_record({"resumed": key, "released": released})
    return 0


def listed(wait: int, where: dict[str, Any]) -> int:
    """Every pause; with `wait`, looked at again until one holds something or that many seconds passed."""
    from herald.holds.wiring import holds

    service = holds(stack_of(**where).container)
    found = looked_until(service.paused, lambda pauses: any(held for _, held in pauses), wait)
    rows = [{"paused": p.key, "by": p.by, "note": p.note, "since_ms": p.since_ms, "held": held} for p, held in found]
    print_rows(rows, PAUSES)
    return 0
