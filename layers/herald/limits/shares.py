"""Weighted fair share of a provider app's budget between those who call through it.

A call counted against a shared gate (an app's buckets) says whose it is: a `Share`, a service of a tenant with
their weights. The app's bucket keeps, beside its own next moment, a `Claim` for each recent sharer: its weights,
its own next moment at its share of the app's rate, and when it last asked. While other sharers asked recently
(contention), a sharer's calls are spaced at its part of the app's rate: tenants split the app by their weights,
a tenant's part is split between its services by theirs. Three rules make that a fair share and waste nothing:

- work conserving: a sharer may go up to one app interval before its own moment (moments of several parts never
  line up with the app's, and a moment nobody takes is lost); and over its part it may still take a moment nobody
  else is using (every other sharer's own moment has come and it has not asked since: its share goes unused), so
  an idle share goes to whoever asks;
- no moment reserved far ahead while others ask: at most one app interval beyond the caller's lead, so a
  newcomer's call waits a couple of intervals, never behind a second of someone else's reservations;
- a sharer refused for contention says it asked (one write, only then), so the others make room at once.

A sharer over its part is not given a worker to wait in: the governor says so at once, and a job is looked at
before its claim (`Governor.look`), so work bouncing off its part writes nothing.

Alone, a sharer gets the whole app and costs nothing more: its claim rides in the write the call makes anyway."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

ASKED_RECENTLY_MS = 2_000  # a sharer that asked within this long competes for the app
ANNOUNCE_EVERY_MS = ASKED_RECENTLY_MS // 2  # a refused sharer writes that it asked at most this often


@dataclass(frozen=True)
class Share:
    """Whose a call is: `who` is `tenant/service` (tenant "" for the stack's own), with the service's weight
    (its key's) and its tenant's."""

    who: str
    weight: int = 1
    tenant_weight: int = 1

    @property
    def tenant(self) -> str:
        return self.who.partition("/")[0]

    @classmethod
    def of(cls, tenant: str, service_id: str, weight: int = 1, tenant_weight: int = 1) -> Share:
        return cls(f"{tenant}/{service_id}", weight, tenant_weight)


@dataclass(frozen=True)
class Claim:
    """A sharer as a shared bucket keeps it: its weights, its own next moment, and when it last asked."""

    weight: int
    tenant_weight: int
    due_ms: float
    asked_ms: int


def fraction(share: Share, others: Mapping[str, Claim]) -> float:
    """The sharer's part of the app among `others` asking: its tenant's part by tenant weight, then its own part
    of that by service weight. Alone: 1."""
    tenant_weights = {share.tenant: share.tenant_weight}
    services_weight = share.weight
    for who, claim in others.items():
        tenant = who.partition("/")[0]
        if tenant == share.tenant:
            services_weight += claim.weight
        elif claim.tenant_weight > tenant_weights.get(tenant, 0):
            tenant_weights[tenant] = claim.tenant_weight
    return share.tenant_weight / sum(tenant_weights.values()) * share.weight / services_weight


@dataclass(frozen=True)
class SharedBucket:
    """One shared gate's bucket as one sharer sees it at `now`: its sharers' claims, and the app's interval and
    burst now."""

    claims: Mapping[str, Claim]
    app_interval_ms: float
    burst: int
    share: Share
    now: int

    @property
    def others(self) -> dict[str, Claim]:
        """The other sharers that asked recently: those the app is shared with now."""
        since = self.now - ASKED_RECENTLY_MS
        return {who: c for who, c in self.claims.items() if who != self.share.who and c.asked_ms >= since}

    @property
    def contended(self) -> bool:
        return bool(self.others)

    @property
    def own_interval_ms(self) -> float:
        return self.app_interval_ms / fraction(self.share, self.others)

    def own_earliest_ms(self) -> float:
        """When the sharer's own part next allows a call (a per-minute limit's burst shared by the same part)."""
        own = self.claims.get(self.share.who)
        if own is None:
            return float(self.now)
        burst = max(1, int(self.burst * fraction(self.share, self.others)))
        return max(float(self.now), own.due_ms - (burst - 1) * self.own_interval_ms)

    def unused_by_others(self, at: float) -> bool:
        """Whether every other sharer's own next moment has come by `at` and it has not asked since (a sharer that
        asked after its moment waits for one): none of them is using its share, so a moment at `at` is nobody's
        but the asker's."""
        return all(c.due_ms <= at and c.asked_ms <= c.due_ms for c in self.others.values())

    def allows(self, at: float) -> bool:
        within_part = self.own_earliest_ms() <= at + self.app_interval_ms
        return not self.contended or within_part or self.unused_by_others(at)

    def own_moment_ms(self, at: float) -> float | None:
        """The earliest moment from `at` the sharer's part allows: `at` when it does; else its own next moment (less
        the app's tolerance of one interval) when that is under one of its own intervals away, its very next call's
        (the call waits for it); None when further: its other calls took its next moments, it is over its part."""
        if self.allows(at):
            return at
        own = self.own_earliest_ms()
        return own - self.app_interval_ms if own - self.now < self.own_interval_ms else None

    def taken(self, at: float) -> dict[str, Claim]:
        """The claims once the sharer's call at `at` is counted. A moment taken beyond its part (one nobody else
        used) costs the sharer nothing: its own next moment stays."""
        own = self.claims.get(self.share.who)
        due = own.due_ms if own is not None else 0.0
        if self.own_earliest_ms() <= at + self.app_interval_ms or not self.contended:
            due = max(due, at) + self.own_interval_ms
        return self._with_claim(due)

    def asked(self) -> dict[str, Claim] | None:
        """The claims with the sharer's ask recorded (None: nothing to write): when it was not recently, or its
        own moment has passed since (it waits: the others stop borrowing its part)."""
        own = self.claims.get(self.share.who)
        waiting_unsaid = own is not None and own.asked_ms <= own.due_ms <= self.now
        if own is not None and own.asked_ms >= self.now - ANNOUNCE_EVERY_MS and not waiting_unsaid:
            return None
        return self._with_claim(own.due_ms if own is not None else 0.0)

    def _with_claim(self, due_ms: float) -> dict[str, Claim]:
        """The recent sharers' claims (those that stopped asking dropped), the sharer's own as of now."""
        since = self.now - ASKED_RECENTLY_MS
        kept = {who: c for who, c in self.claims.items() if c.asked_ms >= since and who != self.share.who}
        kept[self.share.who] = Claim(self.share.weight, self.share.tenant_weight, due_ms, self.now)
        return kept


class EqualShares:
    """Every tenant with weight 1: the fair share without registrations (unit tests)."""

    def of(self, tenant: str | None, service_id: str, weight: int = 1) -> Share:
        return Share.of(tenant or "", service_id, weight)

    def of_tenant(self, tenant: str) -> Share:
        return Share.of(tenant, "")


class Unshared:
    """No fair share: calls are let through in the order they ask (`HERALD_PROVIDER_APP_FAIR_SHARE=false`: the
    baseline delivery_at_limits (d) measures against)."""

    def of(self, tenant: str | None, service_id: str, weight: int = 1) -> None:
        return None

    def of_tenant(self, tenant: str) -> None:
        return None


class RegisteredShares:
    """Whose a call is: its service, with the weight its keys give it (read with them, once a drain), and its
    tenant, with the weight registered now (the registry's own cache: an operator's change applies within it)."""

    def __init__(self, tenant_weight: Callable[[str], int]) -> None:
        self._tenant_weight = tenant_weight

    def of(self, tenant: str | None, service_id: str, weight: int = 1) -> Share:
        app_code = tenant or ""
        return Share.of(app_code, service_id, weight, self._tenant_weight(app_code) if app_code else 1)

    def of_tenant(self, tenant: str) -> Share:
        """A tenant's calls as one sharer (work no service asked for: a confirm's push), by the tenant's weight."""
        return self.of(tenant, "")
