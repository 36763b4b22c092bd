"""The external-event services' parts. The Feishu client (and urllib3 behind it) is imported by the one part
that delivers, so the outbox and the HTTP function never load it (cold start)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

from herald.container import Container, part
from herald.events.apps import FeishuLink, RegisteredApps
from herald.events.dispatch import EventDispatcher
from herald.events.drained import NEW_WORK_PACE_SLEEP_MOST_MS
from herald.events.dynamo import DynamoEventStore
from herald.events.jobs import Job
from herald.events.nudges import EventsJanitor
from herald.events.operations import EventOperations
from herald.events.pacing import FeishuLimits, FeishuPace
from herald.events.policy import DispatchPolicy
from herald.events.service import EventIntake
from herald.events.sqs import SqsDispatchQueue
from herald.events.status import EventStatuses
from herald.limits.service import RateLimiter
from herald.limits.wiring import governor, provider_circuit, rate_limiter, target_limit
from herald.observability import metrics

if TYPE_CHECKING:
    from herald.tenants.models import FeishuApp


@part
def event_store(c: Container) -> DynamoEventStore:
    """The events table behind each of its ports (intake, dispatch, operations, the janitor's reads)."""
    return DynamoEventStore(c.settings.events_table, c.clients.dynamodb)


@part
def policy(c: Container) -> DispatchPolicy:
    settings = c.settings
    return DispatchPolicy(
        lease_ms=settings.events_lease_ms,
        max_attempts=settings.events_max_attempts,
        retry_base_ms=settings.events_retry_base_ms,
        reserve_ms=settings.events_reserve_ms,
        retention_ms=settings.events_retention_seconds * 1000,
        unknown_ttl_ms=settings.events_unknown_ttl_seconds * 1000,
        settle_attempts=settings.events_settle_attempts,
        send_dedup_window_ms=settings.events_send_dedup_window_seconds * 1000,
    )


@part
def intake(c: Container) -> EventIntake:
    return EventIntake(event_store(c), TargetAdmission(rate_limiter(c)), clock=c.clock)


class TargetAdmission:
    """The per-target intake limit (a service's events to one chat or person), kept by the shared limiter."""

    def __init__(self, limiter: RateLimiter) -> None:
        self._limiter = limiter

    def check(self, subject: str, per_minute: int | None) -> None:
        self._limiter.check(target_limit(per_minute), subject)


@part
def dispatch_queue(c: Container) -> SqsDispatchQueue:
    return SqsDispatchQueue(c.settings.events_queue_url, c.clients.sqs)


@part
def waiting_queue(c: Container) -> SqsDispatchQueue:
    """Where a lane crowded out waits for its turn (herald.events.handlers), apart from new work."""
    return SqsDispatchQueue(c.settings.events_waiting_queue_url, c.clients.sqs)


@part
def dispatcher(c: Container) -> EventDispatcher:
    """Every lane's jobs, each through its tenant's Feishu app (or the stack's), a card's revisions through the
    app that sent it; in the waiting queue, a worker sleeps up to a second for its call's moment."""
    return _dispatcher(c, policy(c))


@part
def new_work_dispatcher(c: Container) -> EventDispatcher:
    """The events queue's: a lane whose call's moment is more than a moment away is crowded out to the waiting
    queue at once (herald.events.handlers), so this queue's workers are there for new work."""
    return _dispatcher(c, dataclasses.replace(policy(c), pace_sleep_most_ms=NEW_WORK_PACE_SLEEP_MOST_MS))


def _dispatcher(c: Container, rules: DispatchPolicy) -> EventDispatcher:
    from herald.auth.wiring import service_keys
    from herald.tenants.wiring import shares

    metric = lambda job, outcome: metrics.add_metric(name=_outcome_metric(outcome), unit="Count", value=1)  # noqa: E731
    return EventDispatcher(
        event_store(c),
        service_keys(c),
        feishu_apps(c),
        rules,
        nudge=waiting_queue(c).publish,  # a lane carrying on (out of time, or paced) is not new work
        clock=c.clock,
        on_outcome=metric,
        shares=shares(c),
    )


@part
def feishu_apps(c: Container) -> RegisteredApps:
    """The stack's Feishu app and each tenant's own (its app id, secret and base URL, its own buckets), each
    client built once; a job stored before tenants were recorded is its service's keys' tenant's."""
    from herald.auth.wiring import service_keys
    from herald.holds.wiring import holds
    from herald.secrets import secret_source
    from herald.tenants.models import TenantPaused
    from herald.tenants.wiring import PerTenant, tenants

    settings = c.settings

    def stack() -> FeishuLink:
        secret = secret_source(settings.feishu_app_secret, settings.feishu_app_secret_parameter, "Feishu app secret")
        return _link(c, settings.feishu_base_url, settings.feishu_app_id, secret)

    def through(app: FeishuApp) -> FeishuLink:
        secret = secret_source(None, app.secret_parameter, f"Feishu app secret of {app.app_id}")
        return _link(c, app.base_url or settings.feishu_base_url, app.app_id, secret)

    stack_link = functools.cache(stack)  # built once, on first use
    per_tenant = PerTenant(tenants(c), lambda tenant: tenant.feishu, through, stack_link)

    def unpaused(app_code: str) -> FeishuLink:
        """The tenant's app, unless an operator paused its events (`events pause --tenant`: TenantPaused)."""
        if (pause := holds(c).pause_of_events_tenant(app_code or settings.default_app_code)) is not None:
            raise TenantPaused(app_code, pause.key)
        return per_tenant(app_code) if app_code else stack_link()

    return RegisteredApps(stack_link, unpaused, lambda service: service_keys(c).delivery_scope(service).tenant)


def _link(c: Container, base_url: str, app_id: str, secret: Callable[[], str]) -> FeishuLink:
    from herald.providers.feishu import FeishuClient

    settings = c.settings
    limits = FeishuLimits(
        app_per_second=settings.feishu_app_calls_per_second,
        app_per_minute=settings.feishu_app_calls_per_minute,
        chat_per_second=settings.feishu_chat_calls_per_second,
    )
    circuit = provider_circuit(c, f"feishu:{app_id}")
    client = FeishuClient(base_url=base_url, app_id=app_id, app_secret=secret, guard=circuit)
    return FeishuLink(client, FeishuPace(governor(c), app_id, limits), circuit)


def _outcome_metric(outcome: str) -> str:
    """An UNKNOWN job Herald settled counts beside the gauge of those an operator must: EventsUnknownSettled."""
    return "EventsUnknownSettled" if outcome == "settled" else f"ExternalEvent_{outcome}"


@part
def events_janitor(c: Container) -> EventsJanitor:
    grace_ms = c.settings.events_janitor_grace_seconds * 1000
    return EventsJanitor(event_store(c), dispatch_queue(c).publish, grace_ms, clock=c.clock)


@part
def statuses(c: Container) -> EventStatuses:
    """A partner's reads; a queued job reads `held` while a pause of its lane, service or tenant holds it, or its
    tenant is disabled (each read as the workers read it)."""
    from herald.holds.wiring import holds
    from herald.tenants.wiring import tenants

    def held(job: Job) -> bool:
        pauses = holds(c)
        app_code = job.tenant or c.settings.default_app_code
        if pauses.pause_of(job.lane.key, job.service_id) or pauses.pause_of_events_tenant(app_code):
            return True
        tenant = tenants(c).find(app_code)
        return tenant is not None and not tenant.enabled

    return EventStatuses(event_store(c), held)


@part
def operations(c: Container) -> EventOperations:
    return EventOperations(event_store(c), policy(c), clock=c.clock)
