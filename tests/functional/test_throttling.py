"""DynamoDB throttling: a throttled transaction is retried like a conflict; still throttled after the
retries, the client gets 503 with Retry-After (never a 500) and nothing is half written."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError
from fastapi.testclient import TestClient
from pynamodb.attributes import UnicodeAttribute
from pynamodb.exceptions import PynamoDBException
from pynamodb.models import Model

from herald import aws
from herald.container import Clients
from herald.tables import Cancelled, Database, is_throttled
from tests.support.container import reconfigure
from tests.support.tokens import make_token

NOTIFICATION = {"user_id": "10002", "kind": "QUESTION_PENDING", "session_id": "s1", "tail": "r1", "title": "t"}


def _throttled(operation: str, code: str = "ProvisionedThroughputExceededException", **extra: Any) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "slow down"}, **extra}, operation)  # type: ignore[typeddict-item]


class Throttling:
    """The process-wide DynamoDB client, throttling the first `times` calls of one operation (as the
    models send them: `_make_api_call("TransactWriteItems", ...)`)."""

    def __init__(self, real: Any, operation: str, times: int, error: ClientError) -> None:
        self._real, self._operation, self.remaining, self._error = real, operation, times, error
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def _make_api_call(self, operation: str, params: dict[str, Any]) -> Any:
        if operation == self._operation:
            self.calls += 1
            if self.remaining > 0:
                self.remaining -= 1
                raise self._error
        return self._real._make_api_call(operation, params)


def _throttle(operation: str, times: int, error: ClientError) -> Throttling:
    """Every part built from here on talks to DynamoDB through a client that throttles `operation`."""
    throttling = Throttling(aws.dynamodb(), operation, times, error)
    reconfigure(clients=Clients(dynamodb=throttling))  # type: ignore[arg-type]
    return throttling


def test_write_still_throttled_after_the_retries_is_503_with_retry_after_and_stores_nothing(
    api: TestClient, producer: dict[str, str]
) -> None:
    _throttle("TransactWriteItems", 1_000, _throttled("TransactWriteItems"))
    response = api.post("/internal/v1/inbox/notifications", json=NOTIFICATION, headers=producer)
    assert response.status_code == 503, response.text
    assert response.json()["code"] == "UNAVAILABLE" and response.headers["Retry-After"] == "1"
    reconfigure(clients=Clients())  # DynamoDB answers again
    unread = api.get("/api/v1/inbox/unread-count", headers={"Authorization": f"Bearer {make_token('10002')}"})
    assert unread.json()["data"]["unread_count"] == 0


class Row(Model):
    pk = UnicodeAttribute(hash_key=True)


class Transactions:
    """A DynamoDB client (as PynamoDB calls it) whose TransactWriteItems fails with `error` `times` times."""

    def __init__(self, error: ClientError, times: int) -> None:
        self.error, self.remaining, self.calls = error, times, 0
        self.landed: list[Any] = []

    def _make_api_call(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        assert operation == "TransactWriteItems"
        self.calls += 1
        if self.remaining:
            self.remaining -= 1
            raise self.error
        self.landed.append(params["TransactItems"])
        return {}


def put_one(client: Transactions) -> None:
    database = Database(client)  # type: ignore[arg-type]
    rows = database.bind(Row, "t")
    database.transact(lambda transaction: transaction.put(rows(pk="a"), rows.pk.does_not_exist()))


def test_a_transaction_cancelled_by_throttling_is_retried_and_lands() -> None:
    reasons = {"CancellationReasons": [{"Code": "ThrottlingError"}]}
    client = Transactions(_throttled("TransactWriteItems", "TransactionCanceledException", **reasons), times=2)
    put_one(client)
    assert (client.calls, len(client.landed)) == (3, 1)


def test_a_transaction_whose_condition_failed_is_not_retried() -> None:
    reasons = {"CancellationReasons": [{"Code": "ConditionalCheckFailed"}, {"Code": "ThrottlingError"}]}
    client = Transactions(_throttled("TransactWriteItems", "TransactionCanceledException", **reasons), times=100)
    with pytest.raises(Cancelled):
        put_one(client)
    assert client.calls == 1


def test_a_transaction_throttled_past_every_retry_is_raised_as_throttled() -> None:
    reasons = {"CancellationReasons": [{"Code": "ThrottlingError"}]}
    client = Transactions(_throttled("TransactWriteItems", "TransactionCanceledException", **reasons), times=100)
    with pytest.raises(PynamoDBException) as raised:
        put_one(client)
    assert is_throttled(raised.value) and client.calls == 8 and client.landed == []
