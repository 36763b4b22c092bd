"""The health gauges' part (the stores only: no provider is imported)."""

from herald.confirms.dynamo import DynamoConfirmStore, DynamoDeliveryStore
from herald.container import Container, part
from herald.events.dynamo import DynamoEventStore
from herald.gauges.service import HealthGauges
from herald.turns.dynamo import DynamoTurnStore

JANITOR_PERIOD_MS = 60_000


@part
def health_gauges(c: Container) -> HealthGauges:
    settings, dynamodb = c.settings, c.clients.dynamodb
    return HealthGauges(
        DynamoEventStore(settings.events_table, dynamodb),
        DynamoConfirmStore(settings.confirms_table, dynamodb),
        DynamoDeliveryStore(settings.deliveries_table, dynamodb),
        DynamoTurnStore(settings.turns_table, dynamodb),
        confirm_grace_ms=2 * JANITOR_PERIOD_MS,
        turn_grace_ms=settings.turns_janitor_grace_seconds * 1000 + 2 * JANITOR_PERIOD_MS,
    )
