"""External events, the Feishu apps a job calls as: who delivers is decided once, when the work is accepted.

A job records its tenant at intake; its new cards go out through that tenant's Feishu app as registered now
(or the stack's). A card's mapping records the app that sent its message: Feishu lets only that identity edit
it ("调用该接口的身份需与发送卡片的身份一致"), so a revision is written through it for the card's whole life, as long
as Herald can still call as it (the stack's app, or the app the card's tenant has registered). When it cannot,
the revision continues the card as a new message through the tenant's current app (herald.events.cards)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from herald.circuits import AppCircuit, Unguarded
from herald.events.pacing import Unpaced
from herald.events.ports import Messenger, Pace


@dataclass(frozen=True)
class FeishuLink:
    """One Feishu app as a job calls it: its client, the pace its calls keep, and its circuit (the client's
    calls go through it; a job waits while the app is parked)."""

    messenger: Messenger
    pace: Pace
    circuit: AppCircuit = field(default_factory=Unguarded)

    @property
    def app_id(self) -> str:
        return self.messenger.app_id


class FeishuApps(Protocol):
    def current(self, tenant: str | None, service_id: str) -> FeishuLink:
        """The app a tenant's new cards go out through now (TenantPaused while the tenant is disabled). `tenant`
        None: a job stored before Herald recorded tenants, delivered for its service's tenant."""
        ...

    def sender(self, tenant: str, app_id: str) -> FeishuLink | None:
        """The app `app_id` that sent a card of `tenant`, if Herald may still call as it; None when its
        credentials are no longer Herald's (the tenant registered another app since)."""
        ...


class OneApp:
    """Every tenant's cards through one app: a stack without tenants' own apps, and the unit tests' Feishu."""

    def __init__(self, messenger: Messenger, pace: Pace | None = None, circuit: AppCircuit | None = None) -> None:
        self._link = FeishuLink(messenger, pace or Unpaced(), circuit or Unguarded())

    def current(self, tenant: str | None, service_id: str) -> FeishuLink:
        return self._link

    def sender(self, tenant: str, app_id: str) -> FeishuLink | None:
        return self._link if app_id == self._link.app_id else None


class RegisteredApps:
    """The stack's app, and each tenant's as registered now (`of_tenant`: the stack's for a tenant with none;
    TenantPaused for a disabled one). `tenant_of_service` names the tenant of a job stored before tenants were
    recorded: its service's keys', read when it is delivered, as Herald did then."""

    def __init__(
        self,
        stack: Callable[[], FeishuLink],
        of_tenant: Callable[[str], FeishuLink],
        tenant_of_service: Callable[[str], str],
    ) -> None:
        self._stack = stack
        self._of_tenant = of_tenant
        self._tenant_of_service = tenant_of_service

    def current(self, tenant: str | None, service_id: str) -> FeishuLink:
        app_code = self._tenant_of_service(service_id) if tenant is None else tenant
        return self._of_tenant(app_code)

    def sender(self, tenant: str, app_id: str) -> FeishuLink | None:
        stack = self._stack()
        if stack.app_id == app_id:
            return stack
        registered = self.current(tenant, "")
        return registered if registered.app_id == app_id else None
