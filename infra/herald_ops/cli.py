"""`herald-ops`: what an operator runs against a deployed stack (`--stack NAME`) or the local cloud.

    herald-ops keys create|list|rotate|revoke      service keys
    herald-ops events blocked|unknown|show|resolve external events a failed or UNKNOWN job holds up (Herald settles
                                                  an UNKNOWN one itself where Feishu makes it provable)
    herald-ops dlq list|peek|redrive|purge         dead-letter queues
    herald-ops confirms stuck|repair               confirms the janitor could not settle
    herald-ops owners list|disable|enable|release|transfer   owner services' registered business types
    herald-ops tenants set|list|show|disable|enable   each app_code's own Tencent IM and Feishu apps
    herald-ops preflight --stack NAME              what a deploy still needs

Installed with Herald's runtime and `click` and `PyYAML` only (`pip install '.[ops]'`): no emulator, no test
dependency. Each command prints a table (or one record's fields) with local times and ages, and `--json` JSON
lines as Herald records them; an empty listing says so. A refusal prints `error: ...` and exits 2.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from herald_ops.output import Listing, json_lines, printable, record_text, table
from herald_ops.stack import DEFAULT_STATE, DEFAULT_TEMPLATE, NoLocalCloud, Stack

from herald.auth.models import EVENT_ORDERS, SERVICE_ORDER
from herald.clock import now_ms
from herald.errors import HeraldError

F = TypeVar("F", bound=Callable[..., Any])
WAIT_CHOICES = click.IntRange(0, 20)
AS_JSON = "herald_ops.json"


def _remember_json(context: click.Context, _: click.Parameter, as_json: bool) -> None:
    context.meta[AS_JSON] = as_json


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


def _stack(stack_name: str | None, profile: str | None, region: str | None, state_file: str, template: str) -> Stack:
    return Stack(stack_name, profile, region, Path(state_file), Path(template))


def _refused(message: str) -> int:
    click.echo(f"error: {printable(message)}", err=True)
    return 2


def _as_json() -> bool:
    return bool(click.get_current_context().meta.get(AS_JSON))


def _show(value: dict[str, Any]) -> None:
    """One record: its fields for people, or one JSON line."""
    click.echo(json_lines([value]) if _as_json() else record_text(value, now_ms()))


def _rows(rows: list[dict[str, Any]], listing: Listing) -> None:
    """A listing: a table for people, or JSON lines; when it is empty, a line saying so (stderr with --json)."""
    if rows:
        click.echo(json_lines(rows) if _as_json() else table(rows, listing, now_ms()))
    else:
        click.echo(f"# {listing.nothing}" if _as_json() else listing.nothing, err=_as_json())


@click.group(help=__doc__.split("\n\n")[0] if __doc__ else None)
def cli() -> None:
    pass


# ---------------------------------------------------------------------- keys
@cli.group(help="service keys")
def keys() -> None:
    pass


KEYS = Listing(
    (
        "key_id",
        "service_id",
        "capabilities",
        "app_codes",
        "order",
        "created_at_ms",
        "expires_at_ms",
        "revoked_at_ms",
        "last_used_at_ms",
    ),
    "No service keys: create one with `herald-ops keys create`.",
)


def _key_view(record: Any) -> dict[str, Any]:
    """A key as an operator sees it: never its secret or hash."""
    return {
        "key_id": record.key_id,
        "service_id": record.service_id,
        "capabilities": sorted(record.capabilities),
        "app_codes": sorted(record.app_codes),
        "targets": sorted(record.targets),
        "allow_markdown": record.allow_markdown,
        "target_rate": record.target_rate,
        "order": record.order,
        "created_at_ms": record.created_at_ms,
        "expires_at_ms": record.expires_at_ms,
        "revoked_at_ms": record.revoked_at_ms,
        "last_used_at_ms": record.last_used_at_ms,
        "rotated_from": record.rotated_from,
    }


def _new_key(key: str, record: Any) -> int:
    """The key alone on stdout (for `KEY=$(...)`); its rights on stderr, as a comment."""
    click.echo(key)
    rights = json_lines([_key_view(record)]) if _as_json() else record_text(_key_view(record), now_ms())
    click.echo("# the key is shown once; only its hash is stored", err=True)
    click.echo("\n".join(f"# {line}" for line in rights.splitlines()), err=True)
    return 0


def _service_keys(stack: Stack) -> Any:
    from herald.auth.wiring import service_keys

    return service_keys(stack.container)


@keys.command("create", help="create a key (printed once) with rights fixed for its life")
@click.option("--service", required=True)
@click.option("--cap", multiple=True, required=True, help="route prefix, e.g. /events/external")
@click.option("--app-code", multiple=True, help="a tenant the key acts for (repeatable; default: default_app_code)")
@click.option("--target", multiple=True, help="allowed external-event target, e.g. chat_id:oc_xxx")
@click.option("--expires-in-days", type=int, default=0, help="0: never expires")
@click.option("--allow-markdown", is_flag=True, help="its cards may opt into Feishu markdown")
@click.option(
    "--target-rate",
    type=int,
    help="its events a minute to one target, in place of the stack's HERALD_RATE_LIMIT_TARGET_PER_MINUTE",
)
@click.option(
    "--order",
    type=click.Choice(EVENT_ORDERS),
    default=SERVICE_ORDER,
    show_default=True,
    help="its events in one order for the service, or one lane per target (in order inside it, lanes in parallel)",
)
@stack_options
def keys_create(
    service: str,
    cap: tuple[str, ...],
    app_code: tuple[str, ...],
    target: tuple[str, ...],
    expires_in_days: int,
    allow_markdown: bool,
    target_rate: int | None,
    order: str,
    **where: Any,
) -> int:
    expires = now_ms() + expires_in_days * 86_400_000 if expires_in_days else None
    try:
        key, record = _service_keys(_stack(**where)).create_key(
            service,
            cap,
            app_code,
            target,
            expires,
            allow_markdown=allow_markdown,
            target_rate=target_rate,
            order=order,
        )
    except HeraldError as error:
        return _refused(error.message)
    return _new_key(key, record)


@keys.command("list", help="every key (or one service's): rights, expiry, revocation, last use")
@click.option("--service")
@stack_options
def keys_list(service: str | None, **where: Any) -> int:
    found = [_key_view(key) for key in _service_keys(_stack(**where)).list_keys(service)]
    _rows(found, KEYS)
    return 0


@keys.command("rotate", help="a new key with the same rights; the old one works until revoked")
@click.argument("key_id")
@click.option("--revoke-old-in", type=int, metavar="SECONDS", help="revoke the old key this much later")
@stack_options
def keys_rotate(key_id: str, revoke_old_in: int | None, **where: Any) -> int:
    try:
        key, record = _service_keys(_stack(**where)).rotate(
            key_id, revoke_old_in * 1000 if revoke_old_in is not None else None
        )
    except HeraldError as error:
        return _refused(error.message)
    return _new_key(key, record)


@keys.command("revoke", help="stop a key (refused everywhere within the key cache time)")
@click.argument("key_id")
@click.option("--in-seconds", type=int, default=0, help="revoke later instead of now")
@stack_options
def keys_revoke(key_id: str, in_seconds: int, **where: Any) -> int:
    try:
        record = _service_keys(_stack(**where)).revoke(key_id, in_ms=in_seconds * 1000)
    except HeraldError as error:
        return _refused(error.message)
    _show(_key_view(record))
    return 0


# ---------------------------------------------------------------------- events
@cli.group(help="external events")
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

    stack, deadline = _stack(**where), time.monotonic() + wait
    rows = blocked_services(stack, only_unknown, service)
    while not rows and time.monotonic() < deadline:
        time.sleep(0.5)
        rows = blocked_services(stack, only_unknown, service)
    _rows(rows, UNKNOWN_JOBS if only_unknown else BLOCKED_LANES)
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
        found = _event_operations(_stack(**where)).get(job)
    except HeraldError as error:
        return _refused(error.message)
    _show(describe(found))
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
    operations = _event_operations(_stack(**where))
    try:
        if sent:
            resolved = operations.sent(job, sent, by, note)
        elif requeue:
            resolved = operations.requeue(job, by, note)
        else:
            resolved = operations.skip(job, by, note)
    except HeraldError as error:
        return _refused(error.message)
    _show(describe(resolved))
    return 0


# ---------------------------------------------------------------------- dead-letter queues
@cli.group(help="dead-letter queues")
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
def dlq_list(wait: int, **where: Any) -> int:
    from herald_ops.dlq import describe

    stack = _stack(**where)
    sqs = stack.client("sqs")
    _rows([describe(sqs, queue, now_ms(), wait_s=wait) for queue in _dead_letter_queues(stack)], DLQS)
    return 0


@dlq.command("peek", help="messages with their group, receive count and failure reason (left in place)")
@click.argument("name", metavar="DLQ")
@click.option("--max", "most", type=int, default=10)
@wait_option
@stack_options
def dlq_peek(name: str, most: int, wait: int, **where: Any) -> int:
    from herald_ops.dlq import peek, peeked_view

    stack = _stack(**where)
    (queue,) = _dead_letter_queues(stack, name)
    seen = peek(stack.client("sqs"), queue, most, wait_s=wait)
    _rows([peeked_view(message) for message in seen.messages], PEEKED)
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
def dlq_redrive(
    name: str, execute: bool, most: int, rate: float, visibility: int, journal: str | None, wait: int, **where: Any
) -> int:
    from herald_ops import views
    from herald_ops.dlq import Journal, Redrive, plan

    stack = _stack(**where)
    (queue,) = _dead_letter_queues(stack, name)
    sqs = stack.client("sqs")
    if not queue.redrivable:
        return _refused(f"{queue.logical_id} holds {queue.kind}: nothing to send back (see README, Operating)")
    if not execute:
        _show({"dry_run": True, **plan(sqs, queue, most, wait_s=wait)})
        click.echo("# nothing moved: add --execute to redrive", err=True)
        return 0
    journal_path = Path(journal) if journal else views.journal_path(stack, queue.logical_id)
    redrive = Redrive(sqs, queue, Journal.open(journal_path), rate_per_s=rate, visibility_s=visibility, wait_s=wait)
    _show({"dlq": queue.logical_id, "to": queue.source_logical_id, **redrive.run(most).as_dict()})
    return 0


@dlq.command("purge", help="delete every message (asks first)")
@click.argument("name", metavar="DLQ")
@click.option("--yes", is_flag=True, help="do not ask")
@stack_options
def dlq_purge(name: str, yes: bool, **where: Any) -> int:
    from herald_ops.dlq import purge

    stack = _stack(**where)
    (queue,) = _dead_letter_queues(stack, name)
    if not yes:
        answer = click.prompt(f"Delete every message in {queue.logical_id}? Type its name to confirm", default="")
        if answer.strip() != queue.logical_id:
            return _refused("not confirmed: nothing deleted")
    purge(stack.client("sqs"), queue)
    _show({"dlq": queue.logical_id, "purged": True})
    return 0


# ---------------------------------------------------------------------- confirms
@cli.group(help="action confirms")
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
def confirms_stuck(grace: int, **where: Any) -> int:
    from herald_ops.views import stuck_confirms

    _rows(stuck_confirms(_stack(**where), grace), STUCK)
    return 0


@confirms.command("repair", help="settle a confirm from its owner now and resend its failed pushes")
@click.argument("confirm_id")
@app_option
@stack_options
def confirms_repair(confirm_id: str, app: str | None, **where: Any) -> int:
    from herald.confirms.models import view

    stack = _stack(**where)
    try:
        repaired = _confirm_operations(stack).repair(app or stack.settings.default_app_code, confirm_id)
    except HeraldError as error:
        return _refused(error.message)
    _show({**view(repaired.confirm), "resent": list(repaired.resent)})
    return 0


# ---------------------------------------------------------------------- owner services
@cli.group(help="owner services' registered business types")
def owners() -> None:
    pass


OWNERS = Listing(
    ("app_code", "business_type", "service_id", "enabled", "callback_url", "updated_at_ms"),
    "No owner service has registered a business type.",
)


def _registrations(stack: Stack) -> Any:
    from herald.confirms.wiring import registrations

    return registrations(stack.container)


@owners.command("list", help="every registration (all tenants unless --app); never a secret")
@click.option("--app", help="only this app_code")
@stack_options
def owners_list(app: str | None, **where: Any) -> int:
    from herald.owners.models import view

    _rows([view(registration) for registration in _registrations(_stack(**where)).all(app)], OWNERS)
    return 0


def _set_enabled(business_type: str, app: str | None, enabled: bool, where: dict[str, Any]) -> int:
    from herald.owners.models import view

    stack = _stack(**where)
    try:
        registration = _registrations(stack).set_enabled(app or stack.settings.default_app_code, business_type, enabled)
    except HeraldError as error:
        return _refused(error.message)
    _show(view(registration))
    return 0


@owners.command("disable", help="stop an owner's callbacks and new confirms (its open confirms wait)")
@click.argument("business_type")
@app_option
@stack_options
def owners_disable(business_type: str, app: str | None, **where: Any) -> int:
    return _set_enabled(business_type, app, False, where)


@owners.command("enable", help="resume a disabled owner (the janitor then settles what waited)")
@click.argument("business_type")
@app_option
@stack_options
def owners_enable(business_type: str, app: str | None, **where: Any) -> int:
    return _set_enabled(business_type, app, True, where)


@owners.command("release", help="free a (squatted) business type for any service to register; its confirms wait")
@click.argument("business_type")
@click.option("--confirm", "confirmed", default="", help="the business type again, to say you mean it")
@app_option
@stack_options
def owners_release(business_type: str, confirmed: str, app: str | None, **where: Any) -> int:
    from herald.owners.models import view

    if confirmed != business_type:
        return _refused(f"releasing deletes the registration: pass --confirm {business_type}")
    stack = _stack(**where)
    try:
        released = _registrations(stack).release(app or stack.settings.default_app_code, business_type)
    except HeraldError as error:
        return _refused(error.message)
    _show({**view(released), "released": True})
    return 0


@owners.command(
    "transfer",
    help="give a business type to another service: a new signing secret (printed once, for the new owner),"
    " disabled until the new owner registers its URLs and an operator enables it",
)
@click.argument("business_type")
@click.option("--to", "to_service", required=True, help="the service id that owns it from now on")
@app_option
@stack_options
def owners_transfer(business_type: str, to_service: str, app: str | None, **where: Any) -> int:
    from herald.auth.service_keys import validate_service_id
    from herald.owners.models import view

    stack = _stack(**where)
    try:
        moved, secret = _registrations(stack).transfer(
            app or stack.settings.default_app_code, business_type, validate_service_id(to_service)
        )
    except HeraldError as error:
        return _refused(error.message)
    _show({**view(moved), "signing_secret": secret})
    return 0


# ---------------------------------------------------------------------- tenants
@cli.group(help="tenants: each app_code's own Tencent IM and Feishu apps (secrets stay in SSM)")
def tenants() -> None:
    pass


TENANTS = Listing(
    ("app_code", "display_name", "enabled", "tencent_im", "feishu"),
    "No tenant is registered: every app_code uses the stack's own providers.",
)


def _tenants(stack: Stack) -> Any:
    from herald.tenants.wiring import tenants as registry

    return registry(stack.container)


@tenants.command("set", help="register a tenant, or replace its registration (enabled stays as it was)")
@click.argument("app_code")
@click.option("--tencent-im-sdk-app-id", type=int, help="its own Tencent IM application (default: the stack's)")
@click.option(
    "--tencent-im-admin", default="administrator", show_default=True, help="the admin account Herald sends as"
)
@click.option("--tencent-im-secret-parameter", help="the SSM SecureString holding its key (under the tenants' prefix)")
@click.option("--tencent-im-base-url", default="", help="default: the stack's")
@click.option("--feishu-app-id", help="its own Feishu app (default: the stack's)")
@click.option("--feishu-secret-parameter", help="the SSM SecureString holding its app secret")
@click.option("--feishu-base-url", default="", help="default: the stack's")
@click.option("--display-name", default="")
@stack_options
def tenants_set(
    app_code: str,
    tencent_im_sdk_app_id: int | None,
    tencent_im_admin: str,
    tencent_im_secret_parameter: str | None,
    tencent_im_base_url: str,
    feishu_app_id: str | None,
    feishu_secret_parameter: str | None,
    feishu_base_url: str,
    display_name: str,
    **where: Any,
) -> int:
    registry = _tenants(_stack(**where))
    rules = registry.rules
    try:
        im = feishu = None
        if tencent_im_sdk_app_id is not None or tencent_im_secret_parameter is not None:
            if tencent_im_sdk_app_id is None or tencent_im_secret_parameter is None:
                return _refused(
                    "a tenant's own Tencent IM app needs --tencent-im-sdk-app-id and --tencent-im-secret-parameter"
                )
            im = rules.tencent_im(
                tencent_im_sdk_app_id, tencent_im_admin, tencent_im_secret_parameter, tencent_im_base_url
            )
        if feishu_app_id is not None or feishu_secret_parameter is not None:
            if feishu_app_id is None or feishu_secret_parameter is None:
                return _refused("a tenant's own Feishu app needs --feishu-app-id and --feishu-secret-parameter")
            feishu = rules.feishu(feishu_app_id, feishu_secret_parameter, feishu_base_url)
        _show(registry.set(app_code, display_name, im, feishu).view())
    except HeraldError as error:
        return _refused(error.message)
    return 0


@tenants.command("list", help="every registered tenant (never a secret: only the names of their SSM parameters)")
@stack_options
def tenants_list(**where: Any) -> int:
    _rows([tenant.view() for tenant in _tenants(_stack(**where)).all()], TENANTS)
    return 0


@tenants.command("show", help="one tenant as registered")
@click.argument("app_code")
@stack_options
def tenants_show(app_code: str, **where: Any) -> int:
    try:
        _show(_tenants(_stack(**where)).show(app_code).view())
    except HeraldError as error:
        return _refused(error.message)
    return 0


def _switch_tenant(app_code: str, enabled: bool, where: dict[str, Any]) -> int:
    stack = _stack(**where)
    try:
        tenant = _tenants(stack).switch(app_code, enabled)
    except HeraldError as error:
        return _refused(error.message)
    shown = tenant.view()
    if not enabled:
        shown["closed_connections"] = _close_connections(stack, app_code)
    _show(shown)
    return 0


def _close_connections(stack: Stack, app_code: str) -> int | None:
    """Close the disabled tenant's open WebSocket connections, each told `tenant_disabled`. One this cannot close
    now (no right to the WebSocket API, say) is closed on its next frame or push: None, and a warning, says so."""
    from herald.realtime.wiring import realtime

    try:
        return realtime(stack.container).close_tenant(app_code, "tenant_disabled")
    except Exception as error:  # the tenant is disabled whatever happens here: say what was left, never fail
        click.echo(
            f"# open connections not closed now ({printable(str(error))}): each closes on its next frame or push",
            err=True,
        )
        return None


@tenants.command(
    "disable",
    help="refuse the tenant's requests (403 tenant_disabled), close its WebSocket connections; its deliveries wait",
)
@click.argument("app_code")
@stack_options
def tenants_disable(app_code: str, **where: Any) -> int:
    return _switch_tenant(app_code, False, where)


@tenants.command("enable", help="serve a disabled tenant again (its waiting deliveries resume)")
@click.argument("app_code")
@stack_options
def tenants_enable(app_code: str, **where: Any) -> int:
    return _switch_tenant(app_code, True, where)


# ---------------------------------------------------------------------- preflight
FINDINGS = Listing(("check", "ok", "detail"), "Nothing to check.")


@cli.command(
    "preflight", help="what a deployed stack needs: SSM secrets (its own, its tenants'), identity provider, ids"
)
@stack_options
def preflight_command(**where: Any) -> int:
    from herald_ops.preflight import preflight

    stack = _stack(**where)
    if not stack.name:
        return _refused("preflight checks a deployed stack: pass --stack NAME")
    client = stack.client
    findings = preflight(
        stack.name, client("cloudformation"), client("ssm"), client("kms"), client("apigateway"), _registered(stack)
    )
    _rows([finding.to_dict() for finding in findings], FINDINGS)
    return 0 if all(finding.ok for finding in findings) else 1


def _registered(stack: Stack) -> list[Any]:
    """The stack's registered tenants (none when the stack is missing or has no tenants table yet)."""
    from herald.tenants.dynamo import DynamoTenantStore

    try:
        table = stack.physical_ids.get("TenantsTable")
    except Exception:
        return []
    return DynamoTenantStore(table, stack.client("dynamodb")).all() if table else []


def main(argv: list[str] | None = None) -> int:
    """Run one command; its exit code (2 for a refusal or a usage error)."""
    try:
        result = cli.main(args=argv, prog_name="herald-ops", standalone_mode=False)
    except click.exceptions.Exit as done:
        return done.exit_code
    except click.ClickException as error:
        error.show()
        return error.exit_code
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 1
    except NoLocalCloud as error:
        return _refused(str(error))
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
