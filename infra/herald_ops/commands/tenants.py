"""herald-ops tenants: each app_code's own Tencent IM and Feishu apps (secrets stay in SSM), and whether it
is served."""

from __future__ import annotations

from typing import Any

import click
from herald_ops.commands.audit import audited, named, reads_only, record_detail
from herald_ops.commands.common import (
    print_record,
    print_rows,
    refuse,
    stack_of,
    stack_options,
)
from herald_ops.output import Listing, printable
from herald_ops.stack import Stack

from herald.errors import HeraldError


@click.group(help="tenants: each app_code's own Tencent IM and Feishu apps (secrets stay in SSM)")
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
@click.option(
    "--weight",
    type=int,
    help="its weight (1-100) in a provider app it shares with other tenants (default: as it was, or 1)",
)
@stack_options
@audited(named("app_code"))
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
    weight: int | None,
    **where: Any,
) -> int:
    registry = _tenants(stack_of(**where))
    rules = registry.rules
    try:
        im = feishu = None
        if tencent_im_sdk_app_id is not None or tencent_im_secret_parameter is not None:
            if tencent_im_sdk_app_id is None or tencent_im_secret_parameter is None:
                return refuse(
                    "a tenant's own Tencent IM app needs --tencent-im-sdk-app-id and --tencent-im-secret-parameter"
                )
            im = rules.tencent_im(
                tencent_im_sdk_app_id, tencent_im_admin, tencent_im_secret_parameter, tencent_im_base_url
            )
        if feishu_app_id is not None or feishu_secret_parameter is not None:
            if feishu_app_id is None or feishu_secret_parameter is None:
                return refuse("a tenant's own Feishu app needs --feishu-app-id and --feishu-secret-parameter")
            feishu = rules.feishu(feishu_app_id, feishu_secret_parameter, feishu_base_url)
        print_record(registry.set(app_code, display_name, im, feishu, weight).view())
    except HeraldError as error:
        return refuse(error.message)
    return 0


@tenants.command("list", help="every registered tenant (never a secret: only the names of their SSM parameters)")
@stack_options
@reads_only
def tenants_list(**where: Any) -> int:
    print_rows([tenant.view() for tenant in _tenants(stack_of(**where)).all()], TENANTS)
    return 0


@tenants.command("show", help="one tenant as registered")
@click.argument("app_code")
@stack_options
@reads_only
def tenants_show(app_code: str, **where: Any) -> int:
    try:
        print_record(_tenants(stack_of(**where)).show(app_code).view())
    except HeraldError as error:
        return refuse(error.message)
    return 0


def _switch_tenant(app_code: str, enabled: bool, where: dict[str, Any]) -> int:
    stack = stack_of(**where)
    try:
        from herald.tenants.wiring import switch_tenant

        tenant, released = switch_tenant(app_code, enabled, stack.container)
    except HeraldError as error:
        return refuse(error.message)
    shown = tenant.view()
    if enabled:
        shown["resumed_deliveries"] = released
        record_detail(resumed_deliveries=released)
    else:
        shown["closed_connections"] = _close_connections(stack, app_code)
    print_record(shown)
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
    help="refuse the tenant's requests (403 tenant_disabled), close its WebSocket connections; its deliveries are held",
)
@click.argument("app_code")
@stack_options
@audited(named("app_code"))
def tenants_disable(app_code: str, **where: Any) -> int:
    return _switch_tenant(app_code, False, where)


@tenants.command("enable", help="serve a disabled tenant again: its held deliveries go back on their queues at once")
@click.argument("app_code")
@stack_options
@audited(named("app_code"))
def tenants_enable(app_code: str, **where: Any) -> int:
    return _switch_tenant(app_code, True, where)
