"""Builds the health gauges from settings, once per process (the stores only: no provider is imported)."""

from functools import lru_cache

from herald.confirms.dynamo import DynamoConfirmStore, DynamoDeliveryStore
from herald.events.dynamo import DynamoJobStore
from herald.health.service import HealthGauges
from herald.settings import get_settings
from herald.turns.wiring import turn_store

JANITOR_PERIOD_MS = 60_000


@lru_cache(maxsize=1)
def health_gauges() -> HealthGauges:
    settings = get_settings()
    return HealthGauges(
        DynamoJobStore(settings.events_table),
        DynamoConfirmStore(settings.confirms_table),
        DynamoDeliveryStore(settings.deliveries_table),
        turn_store(),
        confirm_grace_ms=2 * JANITOR_PERIOD_MS,
        turn_grace_ms=settings.turns_janitor_grace_seconds * 1000 + 2 * JANITOR_PERIOD_MS,
    )
