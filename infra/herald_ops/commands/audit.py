"""herald-ops audit: every act of an operator that changes anything, one append-only record each (herald.audit);
and how a verb is recorded: `@audited` writes its record before it runs and its outcome after, `@reads_only` says
a verb changes nothing. Every verb carries one of the two (a test walks the command tree)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click
from herald_ops.commands.common import REFUSAL, F, print_rows, since_ms, stack_of, stack_options
from herald_ops.output import Listing

WHERE = frozenset({"stack_name", "profile", "region", "state_file", "template"})
KIND = "herald_audit"  # on a command's callback: "audited" or "reads"
_DETAIL = "herald_ops.audit_detail"


def named(*names: str) -> Callable[[dict[str, Any]], str]:
    """A verb's target: the values of these arguments, those given, joined by "/"."""
    return lambda arguments: "/".join(str(arguments[name]) for name in names if arguments.get(name))


def reads_only(command: F) -> F:
    """A verb that changes nothing: no record."""
    setattr(command, KIND, "reads")
    return command


def audited(
    target: Callable[[dict[str, Any]], str], acts: Callable[[dict[str, Any]], bool] = lambda _: True
) -> Callable[[F], F]:
    """Record the verb in the audit log: before it runs (who, verb, `target(arguments)`, its arguments but where it
    acts), then its outcome (ok, refused and why, or the error that stopped it). `acts(arguments)`: whether this
    run changes anything (a plan without --execute does not, and is not recorded)."""

    def wrap(command: F) -> F:
        @functools.wraps(command)
        def recorded(**kwargs: Any) -> int:
            if not acts(kwargs):
                return int(command(**kwargs))
            from herald.audit.wiring import audit_log

            stack = stack_of(**{name: kwargs[name] for name in WHERE})
            log = audit_log(stack.container)
            context = click.get_current_context()
            verb = context.command_path.split(" ", 1)[-1]
            arguments = {k: v for k, v in kwargs.items() if k not in WHERE and v not in (None, (), "", False)}
            record = log.begin(stack.actor, verb, target(kwargs), arguments)
            try:
                code = int(command(**kwargs))
            except BaseException as error:
                log.finish(record, f"failed: {type(error).__name__}: {error}"[:500])
                raise
            detail = context.meta.get(_DETAIL, "")
            log.finish(record, f"ok{detail}" if code == 0 else f"refused: {context.meta.get(REFUSAL, code)}")
            return code

        setattr(recorded, KIND, "audited")
        return recorded  # type: ignore[return-value]

    return wrap


def record_detail(**facts: object) -> None:
    """What the act made, for its record's outcome (a new key's id, how many deliveries a resume put back)."""
    context = click.get_current_context()
    context.meta[_DETAIL] = "".join(f" {name}={value}" for name, value in facts.items())


AUDIT = Listing(
    ("at_ms", "actor", "verb", "target", "outcome", "arguments"),
    "No operator act is recorded in this window.",
)


@click.command("audit", help="what operators did, newest first: when, who, the verb, its target, its outcome")
@click.option("--since", metavar="TIME", help="from this ISO date or time on (local time unless it says)")
@click.option("--actor", help="only acts whose actor contains this")
@click.option("--verb", help="only verbs containing this (e.g. resolve)")
@click.option("--limit", type=click.IntRange(1, 1000), default=200, show_default=True)
@stack_options
@reads_only
def audit_command(since: str | None, actor: str | None, verb: str | None, limit: int, **where: Any) -> int:
    from herald.audit.wiring import audit_log

    found = audit_log(stack_of(**where).container).listed(since_ms(since), actor, verb, limit)
    print_rows([record.view() for record in found], AUDIT)
    return 0
