"""Builds the turn queue's service from settings, once per process."""

from functools import lru_cache

from herald.settings import get_settings
from herald.turns.dynamo import DynamoTurnStore
from herald.turns.service import TurnService
from herald.turns.sqs import SqsTurnQueue


@lru_cache(maxsize=1)
def turn_service() -> TurnService:
    settings = get_settings()
    return TurnService(DynamoTurnStore(settings.turns_table), SqsTurnQueue(settings.turns_queue_url))
