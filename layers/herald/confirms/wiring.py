"""The confirm services' parts. Businesses are registered here, and so are the parts where owner services meet
the confirm service (herald.confirms.owners.wiring holds the owners' parts below it: their store, where
callbacks may go, the callers, the owner limits). A part imports what only it uses (the Tencent IM client, the
invitations business, the click rules), so a worker that never builds it never loads them (cold start: the IM
sender builds the delivery only)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from herald.confirms.delivery import ConfirmDelivery
from herald.confirms.dynamo import DynamoConfirmStore, DynamoDeliveryStore
from herald.confirms.sqs import SqsPushQueue
from herald.container import Container, part

if TYPE_CHECKING:
    from herald.confirms.businesses import BusinessRegistry
    from herald.confirms.operations import ConfirmOperations
    from herald.confirms.owners.service import OwnerConfirms, Registrations
    from herald.confirms.service import Confirms
    from herald.tenants.models import TencentImApp
    from herald.tenants.wiring import PerTenant


@part
def confirm_store(c: Container) -> DynamoConfirmStore:
    return DynamoConfirmStore(c.settings.confirms_table, c.clients.dynamodb)


@part
def business_registry(c: Container) -> BusinessRegistry:
    """Role invitations and agents' approvals in this process; every other business type is a registered owner
    service."""
    from herald.confirms.approvals.business import AgentApprovalBusiness
    from herald.confirms.businesses import BusinessHandler, BusinessRegistry
    from herald.confirms.owners.wiring import registered_owners
    from herald.confirms.role_invitation import RoleInvitationBusiness
    from herald.invitations.wiring import invitations
    from herald.turns.wiring import approvals

    built_in: list[BusinessHandler] = [RoleInvitationBusiness(invitations(c)), AgentApprovalBusiness(approvals(c))]
    return BusinessRegistry(built_in, owners=registered_owners(c))


@part
def confirms(c: Container) -> Confirms:
    from herald.confirms.service import Confirms

    return Confirms(confirm_store(c), business_registry(c), lease_ms=c.settings.confirm_lease_ms, clock=c.clock)


@part
def registrations(c: Container) -> Registrations:
    """Owner services' registrations: a built-in business type is never theirs to take."""
    from herald.confirms.owners.service import Registrations
    from herald.confirms.owners.wiring import registration_store, url_policy

    return Registrations(registration_store(c), url_policy(c), business_registry(c).built_in, clock=c.clock)


@part
def owner_confirms(c: Container) -> OwnerConfirms:
    """The confirm API an owner service calls (`/internal/v1/confirms/owner`), within the owner limits."""
    from herald.confirms.owners.service import OwnerConfirms
    from herald.confirms.owners.wiring import OwnerAdmission
    from herald.limits.wiring import rate_limiter

    return OwnerConfirms(registrations(c), confirms(c), OwnerAdmission(rate_limiter(c)), clock=c.clock)


@part
def push_queue(c: Container) -> SqsPushQueue:
    return SqsPushQueue(c.settings.im_push_queue_url, c.clients.sqs)


@part
def deliveries(c: Container) -> DynamoDeliveryStore:
    return DynamoDeliveryStore(c.settings.deliveries_table, c.clients.dynamodb)


@part
def delivery(c: Container) -> ConfirmDelivery:
    """Pushes through the stack's Tencent IM app."""
    from herald.secrets import secret_source

    settings = c.settings
    key = secret_source(
        settings.tencent_im_secret_key, settings.tencent_im_secret_key_parameter, "Tencent IM secret key"
    )
    return _delivery(
        c, settings.tencent_im_base_url, settings.tencent_im_sdk_app_id, settings.tencent_im_admin_identifier, key
    )


@part
def delivery_for(c: Container) -> PerTenant[TencentImApp, ConfirmDelivery]:
    """Each tenant's pushes through its own Tencent IM app (its SDKAppID, admin, key and base URL), or the
    stack's: `delivery_for(c)(app_code)`."""
    from herald.secrets import secret_source
    from herald.tenants.wiring import PerTenant, tenants

    def through(app: TencentImApp) -> ConfirmDelivery:
        key = secret_source(None, app.secret_parameter, f"Tencent IM key of app {app.sdk_app_id}")
        base_url = app.base_url or c.settings.tencent_im_base_url
        return _delivery(c, base_url, app.sdk_app_id, app.admin_identifier, key)

    return PerTenant(tenants(c), lambda tenant: tenant.tencent_im, through, lambda: delivery(c))


def _delivery(c: Container, base_url: str, sdk_app_id: int, admin: str, key: Callable[[], str]) -> ConfirmDelivery:
    from herald.confirms.pacing import TencentImLimits, TencentImPace
    from herald.limits.wiring import governor, provider_circuit
    from herald.providers.tencent_im import TencentImClient
    from herald.tenants.wiring import shares

    settings = c.settings
    circuit = provider_circuit(c, f"im:{sdk_app_id}")
    im = TencentImClient(
        base_url=base_url, sdk_app_id=sdk_app_id, admin_identifier=admin, secret_key=key, guard=circuit
    )
    limits = TencentImLimits(settings.tencent_im_sendmsg_per_second, settings.tencent_im_roammsg_per_second)
    return ConfirmDelivery(
        confirm_store(c),
        deliveries(c),
        im,
        max_attempts=settings.im_push_max_attempts,
        clock=c.clock,
        history_ms=settings.tencent_im_history_days * 86_400_000,
        pace=TencentImPace(governor(c), sdk_app_id, limits),
        circuit=circuit,
        shares=shares(c),
    )


@part
def confirm_operations(c: Container) -> ConfirmOperations:
    from herald.confirms.operations import ConfirmOperations

    return ConfirmOperations(confirms(c), confirm_store(c), deliveries(c), push_queue(c), clock=c.clock)
