"""The turn queue's parts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from herald.container import Container, part
from herald.observability import metrics
from herald.turns.dynamo import DynamoTurnStore
from herald.turns.service import TurnService
from herald.turns.sqs import SqsTurnQueue

if TYPE_CHECKING:
    from herald.turns.approvals import Approvals


@part
def turn_store(c: Container) -> DynamoTurnStore:
    return DynamoTurnStore(c.settings.turns_table, c.clients.dynamodb)


@part
def turn_service(c: Container) -> TurnService:
    return TurnService(
        turn_store(c),
        SqsTurnQueue(c.settings.turns_queue_url, c.clients.sqs),
        clock=c.clock,
        observe=lambda outcome: metrics.add_metric(name=outcome, unit="Count", value=1),
    )


@part
def approvals(c: Container) -> Approvals:
    from herald.turns.approvals import Approvals

    return Approvals(turn_service(c), turn_store(c), clock=c.clock)
