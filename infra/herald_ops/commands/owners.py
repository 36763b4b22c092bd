"""herald-ops owners: owner services' registered business types, disabled, enabled, released or transferred."""

from __future__ import annotations

from typing import Any

import click
from herald_ops.commands.audit import audited, named, reads_only
from herald_ops.commands.common import (
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


@click.group(help="owner services' registered business types")
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
@reads_only
def owners_list(app: str | None, **where: Any) -> int:
    from herald.confirms.owners.models import view

    print_rows([view(registration) for registration in _registrations(stack_of(**where)).all(app)], OWNERS)
    return 0


def _set_enabled(business_type: str, app: str | None, enabled: bool, where: dict[str, Any]) -> int:
    from herald.confirms.owners.models import view

    stack = stack_of(**where)
    try:
        registration = _registrations(stack).set_enabled(app or stack.settings.default_app_code, business_type, enabled)
    except HeraldError as error:
        return refuse(error.message)
    print_record(view(registration))
    return 0


@owners.command("disable", help="stop an owner's callbacks and new confirms (its open confirms wait)")
@click.argument("business_type")
@app_option
@stack_options
@audited(named("business_type"))
def owners_disable(business_type: str, app: str | None, **where: Any) -> int:
    return _set_enabled(business_type, app, False, where)


@owners.command("enable", help="resume a disabled owner (the janitor then settles what waited)")
@click.argument("business_type")
@app_option
@stack_options
@audited(named("business_type"))
def owners_enable(business_type: str, app: str | None, **where: Any) -> int:
    return _set_enabled(business_type, app, True, where)


@owners.command("release", help="free a (squatted) business type for any service to register; its confirms wait")
@click.argument("business_type")
@click.option("--confirm", "confirmed", default="", help="the business type again, to say you mean it")
@app_option
@stack_options
@audited(named("business_type"))
def owners_release(business_type: str, confirmed: str, app: str | None, **where: Any) -> int:
    from herald.confirms.owners.models import view

    if confirmed != business_type:
        return refuse(f"releasing deletes the registration: pass --confirm {business_type}")
    stack = stack_of(**where)
    try:
        released = _registrations(stack).release(app or stack.settings.default_app_code, business_type)
    except HeraldError as error:
        return refuse(error.message)
    print_record({**view(released), "released": True})
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
@audited(named("business_type"))
def owners_transfer(business_type: str, to_service: str, app: str | None, **where: Any) -> int:
    from herald.auth.service_keys import validate_service_id
    from herald.confirms.owners.models import view

    stack = stack_of(**where)
    try:
        moved, secret = _registrations(stack).transfer(
            app or stack.settings.default_app_code, business_type, validate_service_id(to_service)
        )
    except HeraldError as error:
        return refuse(error.message)
    print_record({**view(moved), "signing_secret": secret})
    return 0
