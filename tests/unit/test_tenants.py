"""The tenant registry: what a registration may name, who is admitted (registered, enabled), how a change
reaches a warm function, and each tenant's provider client built once for its app as registered."""

from __future__ import annotations

import pytest

from herald.auth.models import ServiceCaller
from herald.errors import InvalidArgument, NotFound, PermissionDenied
from herald.tenants.models import (
    FeishuApp,
    TenantDisabled,
    TenantPaused,
    TenantRules,
    TenantUnknown,
    TencentImApp,
)
from herald.tenants.service import NoRegistry, Tenants
from herald.tenants.wiring import PerTenant
from tests.support.clock import FakeClock
from tests.support.fakes import InMemoryTenantStore

RULES = TenantRules("herald/tenants")
IM = TencentImApp(1400000777, "admin", "/herald/tenants/acme/im")


def registry(required: bool = False, clock: FakeClock | None = None, cache_ms: int = 0) -> Tenants:
    return Tenants(InMemoryTenantStore(), RULES, required=required, clock=clock or FakeClock(0), cache_ms=cache_ms)


@pytest.mark.parametrize(
    ("build", "why"),
    [
        (lambda: RULES.tencent_im(0, "admin", "herald/tenants/a", ""), "SDKAppID 0"),
        (lambda: RULES.tencent_im(2**32, "admin", "herald/tenants/a", ""), "SDKAppID past 32 bits"),
        (lambda: RULES.tencent_im(1400000001, "ad min", "herald/tenants/a", ""), "an admin with a space"),
        (lambda: RULES.tencent_im(1400000001, "admin", "herald/dev/tencent-im-secret-key", ""), "the stack's secret"),
        (lambda: RULES.tencent_im(1400000001, "admin", "/herald/tenants/../dev/key", ""), "a path climbing out"),
        (lambda: RULES.tencent_im(1400000001, "admin", "herald/tenants/a", "http://im.example"), "http in AWS"),
        (lambda: RULES.feishu("cli_a", "herald/tenants/a", "https://user:pw@open.feishu.cn"), "credentials"),
        (lambda: RULES.feishu("cli_a", "herald/tenants/a", "https://open.feishu.cn/?x=1"), "a query"),
        (lambda: RULES.feishu("app_a", "herald/tenants/a", ""), "not a Feishu app id"),
        (lambda: RULES.tenant("Acme!", "", None, None, 0), "an app_code out of its alphabet"),
        (lambda: RULES.tenant("acme", "x" * 65, None, None, 0), "a display name too long"),
    ],
)
def test_a_registration_naming_anything_out_of_bounds_is_refused(build: object, why: str) -> None:
    with pytest.raises(InvalidArgument):
        build()  # type: ignore[operator]


def test_a_secret_parameter_is_kept_by_its_full_name_under_the_prefix() -> None:
    assert (
        RULES.tencent_im(1400000001, "admin", "herald/tenants/acme/im", "").secret_parameter
        == "/herald/tenants/acme/im"
    )
    assert RULES.feishu("cli_a", "/herald/tenants/acme/feishu", "https://open.feishu.cn/").base_url == (
        "https://open.feishu.cn"
    )


def test_an_unregistered_tenant_is_admitted_unless_registration_is_required() -> None:
    registry().admit("ghost")
    with pytest.raises(TenantUnknown) as refused:
        registry(required=True).admit("ghost")
    assert refused.value.reason == "tenant_unknown"


def test_a_disabled_tenant_is_refused_whether_or_not_registration_is_required_and_its_deliveries_pause() -> None:
    for required in (False, True):
        tenants = registry(required)
        tenants.set("acme", "Acme", IM, None)
        tenants.admit("acme")
        tenants.switch("acme", enabled=False)
        with pytest.raises(TenantDisabled):
            tenants.admit("acme")
        clients = PerTenant(tenants, lambda tenant: tenant.tencent_im, lambda app: "own", lambda: "stack")
        with pytest.raises(TenantPaused):
            clients("acme")
        assert clients("ghost") == "stack"


def test_setting_a_tenant_again_replaces_its_providers_and_keeps_it_disabled() -> None:
    tenants = registry()
    tenants.set("acme", "Acme", IM, None)
    tenants.switch("acme", enabled=False)
    again = tenants.set("acme", "Acme Inc", None, FeishuApp("cli_acme", "/herald/tenants/acme/feishu"))
    assert (again.tencent_im, again.feishu is not None, again.enabled) == (None, True, False)


def test_showing_or_switching_an_unregistered_tenant_is_not_found() -> None:
    with pytest.raises(NotFound):
        registry().show("ghost")
    with pytest.raises(NotFound):
        registry().switch("ghost", enabled=True)


def test_a_change_reaches_a_warm_function_once_its_cached_read_is_older_than_the_cache_time() -> None:
    clock = FakeClock(0)
    store = InMemoryTenantStore()
    warm = Tenants(store, RULES, required=True, clock=clock, cache_ms=30_000)
    operator = Tenants(store, RULES, required=True, clock=clock)
    with pytest.raises(TenantUnknown):
        warm.admit("acme")
    operator.set("acme", "", None, None)
    clock.advance(29_999)
    with pytest.raises(TenantUnknown):
        warm.admit("acme")  # still its cached read
    clock.advance(1)
    warm.admit("acme")


def test_an_operators_view_names_parameters_and_never_holds_a_secret() -> None:
    view = registry().set("acme", "Acme", IM, None).view()
    assert view["tencent_im"]["secret_parameter"] == "/herald/tenants/acme/im" and view["feishu"] == "the stack's"


def test_a_stack_without_a_tenants_table_registers_nothing_and_refuses_to_store_one() -> None:
    tenants = Tenants(NoRegistry(), RULES, required=False)
    tenants.admit("anyone")
    assert tenants.all() == []
    with pytest.raises(Exception, match="no tenants table"):
        tenants.set("acme", "", None, None)


def test_each_tenant_gets_a_client_of_its_own_app_built_once_and_again_when_its_app_changes() -> None:
    tenants, built = registry(), []

    def client_of(app: TencentImApp) -> str:
        built.append(app)
        return f"im:{app.sdk_app_id}"

    clients = PerTenant(tenants, lambda tenant: tenant.tencent_im, client_of, lambda: "stack")
    tenants.set("acme", "", IM, None)
    assert [clients("acme"), clients("acme"), clients("lalu")] == ["im:1400000777", "im:1400000777", "stack"]
    tenants.set("acme", "", TencentImApp(1400000888, "admin", "/herald/tenants/acme/im2"), None)
    assert clients("acme") == "im:1400000888" and len(built) == 2


def test_a_key_acting_for_a_refused_tenant_is_refused_there_and_only_there() -> None:
    caller = ServiceCaller(
        "svc", "k1", frozenset({"/x"}), frozenset({"acme", "lalu"}), refused_tenants={"acme": TenantDisabled("acme")}
    )
    assert caller.tenant("lalu") == "lalu"
    with pytest.raises(PermissionDenied) as refused:
        caller.tenant("acme")
    assert refused.value.reason == "tenant_disabled"
