"""herald-ops keys: service keys, each printed once with rights fixed for its life, listed without a secret,
rotated and revoked."""

from __future__ import annotations

from typing import Any

import click
from herald_ops.commands.audit import audited, named, reads_only, record_detail
from herald_ops.commands.common import (
    as_json,
    print_record,
    print_rows,
    refuse,
    stack_of,
    stack_options,
)
from herald_ops.output import Listing, json_lines, record_text
from herald_ops.stack import Stack

from herald.clock import now_ms
from herald.errors import HeraldError
from herald.targets import EVENT_ORDERS, SERVICE_ORDER


@click.group(help="service keys")
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
        "weight": record.weight,
        "created_at_ms": record.created_at_ms,
        "expires_at_ms": record.expires_at_ms,
        "revoked_at_ms": record.revoked_at_ms,
        "last_used_at_ms": record.last_used_at_ms,
        "rotated_from": record.rotated_from,
    }


def _new_key(key: str, record: Any) -> int:
    """The key alone on stdout (for `KEY=$(...)`); its rights on stderr, as a comment."""
    record_detail(key_id=record.key_id)
    click.echo(key)
    rights = json_lines([_key_view(record)]) if as_json() else record_text(_key_view(record), now_ms())
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
@click.option(
    "--weight",
    type=int,
    default=1,
    show_default=True,
    help="its service's weight (1-100) in a provider app shared with other services of its tenant",
)
@stack_options
@audited(named("service"))
def keys_create(
    service: str,
    cap: tuple[str, ...],
    app_code: tuple[str, ...],
    target: tuple[str, ...],
    expires_in_days: int,
    allow_markdown: bool,
    target_rate: int | None,
    order: str,
    weight: int,
    **where: Any,
) -> int:
    expires = now_ms() + expires_in_days * 86_400_000 if expires_in_days else None
    if unknown := [capability for capability in cap if not known_capability(capability)]:
        return refuse(f"no route of Herald's is under {', '.join(unknown)}: one of {', '.join(known_capabilities())}")
    stack = stack_of(**where)
    _warn_unregistered(stack, app_code)
    try:
        key, record = _service_keys(stack).create_key(
            service,
            cap,
            app_code,
            target,
            expires,
            allow_markdown=allow_markdown,
            target_rate=target_rate,
            order=order,
            weight=weight,
        )
    except HeraldError as error:
        return refuse(error.message)
    return _new_key(key, record)


def known_capabilities() -> list[str]:
    """The route prefixes a key may be given: each service route's path up to its first parameter (the published
    OpenAPI document's), and the owner services' marker capability."""
    import json

    from herald_ops.stack import REPO_ROOT

    from herald.auth.models import OWNER_CAPABILITY

    paths = json.loads((REPO_ROOT / "events" / "openapi.json").read_text())["paths"]
    fixed = {path.split("/{", 1)[0] for path in paths if path.startswith(("/internal/", "/events/"))}
    return sorted(fixed | {OWNER_CAPABILITY})


def known_capability(capability: str) -> bool:
    """Whether `capability` is a known prefix or lies under one (a narrower key, e.g. /events/external/webhook)."""
    wanted = capability.rstrip("/")
    return any(wanted == known or wanted.startswith(known + "/") or known.startswith(wanted + "/")
               for known in known_capabilities())  # fmt: skip


def _warn_unregistered(stack: Stack, app_codes: tuple[str, ...]) -> None:
    """A key for an app_code no tenant is registered as works with the stack's own providers: say so."""
    from herald.tenants.wiring import tenants

    registry = tenants(stack.container)
    default = stack.settings.default_app_code
    for app_code in app_codes:
        if app_code != default and registry.find(app_code) is None:
            click.echo(
                f"# warning: {app_code!r} is not a registered tenant: the key acts for it with the stack's providers"
                " (`herald-ops tenants set` registers it)",
                err=True,
            )


@keys.command("list", help="every key (or one service's): rights, expiry, revocation, last use")
@click.option("--service")
@stack_options
@reads_only
def keys_list(service: str | None, **where: Any) -> int:
    found = [_key_view(key) for key in _service_keys(stack_of(**where)).list_keys(service)]
    print_rows(found, KEYS)
    return 0


@keys.command("rotate", help="a new key with the same rights; the old one works until revoked")
@click.argument("key_id")
@click.option("--revoke-old-in", type=int, metavar="SECONDS", help="revoke the old key this much later")
@stack_options
@audited(named("key_id"))
def keys_rotate(key_id: str, revoke_old_in: int | None, **where: Any) -> int:
    try:
        key, record = _service_keys(stack_of(**where)).rotate(
            key_id, revoke_old_in * 1000 if revoke_old_in is not None else None
        )
    except HeraldError as error:
        return refuse(error.message)
    return _new_key(key, record)


@keys.command("revoke", help="stop a key (refused everywhere within the key cache time)")
@click.argument("key_id")
@click.option("--in-seconds", type=int, default=0, help="revoke later instead of now")
@stack_options
@audited(named("key_id"))
def keys_revoke(key_id: str, in_seconds: int, **where: Any) -> int:
    try:
        record = _service_keys(stack_of(**where)).revoke(key_id, in_ms=in_seconds * 1000)
    except HeraldError as error:
        return refuse(error.message)
    print_record(_key_view(record))
    return 0
