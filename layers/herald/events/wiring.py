"""Builds the external-event services from settings, once per process."""

from functools import lru_cache

from herald.auth.wiring import service_keys
from herald.events.dispatch import DispatchPolicy, EventDispatcher
from herald.events.dynamo import DynamoJobStore
from herald.events.operations import EventOperations
from herald.events.service import EventIntake
from herald.events.sqs import SqsDispatchQueue
from herald.observability import metrics
from herald.providers.feishu import FeishuClient
from herald.secrets import secret_source
from herald.settings import get_settings


@lru_cache(maxsize=1)
def job_store() -> DynamoJobStore:
    return DynamoJobStore(get_settings().events_table)


@lru_cache(maxsize=1)
def policy() -> DispatchPolicy:
    settings = get_settings()
    return DispatchPolicy(
        lease_ms=settings.events_lease_ms,
        max_attempts=settings.events_max_attempts,
        retry_base_ms=settings.events_retry_base_ms,
        reserve_ms=settings.events_reserve_ms,
        retention_ms=settings.events_retention_seconds * 1000,
        unknown_ttl_ms=settings.events_unknown_ttl_seconds * 1000,
    )


@lru_cache(maxsize=1)
def intake() -> EventIntake:
    return EventIntake(job_store())


@lru_cache(maxsize=1)
def dispatch_queue() -> SqsDispatchQueue:
    return SqsDispatchQueue(get_settings().events_queue_url)


@lru_cache(maxsize=1)
def dispatcher() -> EventDispatcher:
    settings = get_settings()
    feishu = FeishuClient(
        base_url=settings.feishu_base_url,
        app_id=settings.feishu_app_id,
        app_secret=secret_source(settings.feishu_app_secret, settings.feishu_app_secret_parameter, "Feishu app secret"),
    )
    return EventDispatcher(
        job_store(),
        service_keys(),
        feishu,
        policy(),
        nudge=dispatch_queue().publish,
        on_outcome=lambda job, outcome: metrics.add_metric(name=f"ExternalEvent_{outcome}", unit="Count", value=1),
    )


@lru_cache(maxsize=1)
def operations() -> EventOperations:
    return EventOperations(job_store(), policy())
