"""The external-event services' parts. The Feishu client (and urllib3 behind it) is imported by the one part
that delivers, so the outbox and the HTTP function never load it (cold start)."""

from dataclasses import dataclass

from herald.container import Container, part
from herald.events.dispatch import DispatchPolicy, EventDispatcher, EventsJanitor
from herald.events.dynamo import DynamoDispatchStore, DynamoIntakeStore, DynamoOperationsStore
from herald.events.operations import EventOperations
from herald.events.service import EventIntake
from herald.events.sqs import SqsDispatchQueue
from herald.observability import metrics


@dataclass(frozen=True)
class EventStores:
    """The events table behind each of its ports."""

    intake: DynamoIntakeStore
    dispatch: DynamoDispatchStore
    operations: DynamoOperationsStore


@part
def event_stores(c: Container) -> EventStores:
    table, client = c.settings.events_table, c.clients.dynamodb
    return EventStores(
        DynamoIntakeStore(table, client), DynamoDispatchStore(table, client), DynamoOperationsStore(table, client)
    )


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
        heal_attempts=settings.events_heal_attempts,
        send_dedup_window_ms=settings.events_send_dedup_window_seconds * 1000,
    )


@part
def intake(c: Container) -> EventIntake:
    return EventIntake(event_stores(c).intake, clock=c.clock)


@part
def dispatch_queue(c: Container) -> SqsDispatchQueue:
    return SqsDispatchQueue(c.settings.events_queue_url, c.clients.sqs)


@part
def dispatcher(c: Container) -> EventDispatcher:
    from herald.auth.wiring import service_keys
    from herald.providers.feishu import FeishuClient
    from herald.secrets import secret_source

    settings = c.settings
    feishu = FeishuClient(
        base_url=settings.feishu_base_url,
        app_id=settings.feishu_app_id,
        app_secret=secret_source(settings.feishu_app_secret, settings.feishu_app_secret_parameter, "Feishu app secret"),
    )
    return EventDispatcher(
        event_stores(c).dispatch,
        service_keys(c),
        feishu,
        policy(c),
        nudge=dispatch_queue(c).publish,
        clock=c.clock,
        on_outcome=lambda job, outcome: metrics.add_metric(name=_outcome_metric(outcome), unit="Count", value=1),
    )


def _outcome_metric(outcome: str) -> str:
    """An UNKNOWN job Herald settled counts beside the gauge of those an operator must: EventsUnknownHealed."""
    return "EventsUnknownHealed" if outcome == "healed" else f"ExternalEvent_{outcome}"


@part
def events_janitor(c: Container) -> EventsJanitor:
    grace_ms = c.settings.events_janitor_grace_seconds * 1000
    return EventsJanitor(event_stores(c).operations, dispatch_queue(c).publish, grace_ms, clock=c.clock)


@part
def operations(c: Container) -> EventOperations:
    return EventOperations(event_stores(c).operations, policy(c), clock=c.clock)
