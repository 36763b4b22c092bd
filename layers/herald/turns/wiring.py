"""Builds the turn queue's service from settings, once per process."""

from functools import lru_cache

from herald.observability import metrics
from herald.settings import get_settings
from herald.turns.dynamo import DynamoTurnStore
from herald.turns.service import TurnService
from herald.turns.sqs import SqsTurnQueue


@lru_cache(maxsize=1)
def turn_store() -> DynamoTurnStore:
    return DynamoTurnStore(get_settings().turns_table)


@lru_cache(maxsize=1)
def turn_service() -> TurnService:
    return TurnService(
        turn_store(),
        SqsTurnQueue(get_settings().turns_queue_url),
        observe=lambda outcome: metrics.add_metric(name=outcome, unit="Count", value=1),
    )
