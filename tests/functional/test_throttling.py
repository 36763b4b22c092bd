"""DynamoDB throttling: a throttled transaction is retried like a conflict; still throttled after the
retries, the client gets 503 with Retry-After (never a 500) and nothing is half written."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError
from fastapi.testclient import TestClient

from herald import aws
from herald.dynamo_table import DynamoTable
from tests.support.tokens import make_token

NOTIFICATION = {"user_id": "10002", "kind": "QUESTION_PENDING", "session_id": "s1", "tail": "r1", "title": "t"}


def _throttled(operation: str, code: str = "ProvisionedThroughputExceededException", **extra: Any) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "slow down"}, **extra}, operation)


class Throttling:
    """The process-wide DynamoDB client, throttling the first `times` calls of one operation."""

    def __init__(self, real: Any, operation: str, times: int, error: ClientError) -> None:
        self._real, self._operation, self.remaining, self._error = real, operation, times, error
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        call = getattr(self._real, name)
        if name != self._operation:
            return call

        def throttled(**params: Any) -> Any:
            self.calls += 1
            if self.remaining > 0:
                self.remaining -= 1
                raise self._error
            return call(**params)

        return throttled


def _throttle(monkeypatch: pytest.MonkeyPatch, operation: str, times: int, error: ClientError) -> Throttling:
    throttling = Throttling(aws.dynamodb(), operation, times, error)
    monkeypatch.setattr(aws, "dynamodb", lambda: throttling)
    return throttling


def test_write_still_throttled_after_the_retries_is_503_with_retry_after_and_stores_nothing(
    api: TestClient, producer: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _throttle(monkeypatch, "transact_write_items", 1_000, _throttled("TransactWriteItems"))
    response = api.post("/internal/v1/inbox/notifications", json=NOTIFICATION, headers=producer)
    assert response.status_code == 503, response.text
    assert response.json()["code"] == "UNAVAILABLE" and response.headers["Retry-After"] == "1"
    monkeypatch.undo()
    unread = api.get("/api/v1/inbox/unread-count", headers={"Authorization": f"Bearer {make_token('10002')}"})
    assert unread.json()["data"]["unread_count"] == 0


def test_a_transaction_cancelled_by_throttling_is_retried_and_lands() -> None:
    reasons = {"CancellationReasons": [{"Code": "ThrottlingError"}, {"Code": "None"}]}
    error = _throttled("TransactWriteItems", "TransactionCanceledException", **reasons)
    landed: list[Any] = []

    class Client:
        remaining = 2

        def transact_write_items(self, TransactItems: Any) -> None:
            if self.remaining:
                self.remaining -= 1
                raise error
            landed.append(TransactItems)

    DynamoTable("t", Client())._transact([{"Put": {"TableName": "t", "Item": {}}}])  # type: ignore[arg-type, list-item]
    assert len(landed) == 1


def test_a_transaction_whose_condition_failed_is_not_retried() -> None:
    reasons = {"CancellationReasons": [{"Code": "ConditionalCheckFailed"}, {"Code": "ThrottlingError"}]}
    error = _throttled("TransactWriteItems", "TransactionCanceledException", **reasons)

    class Client:
        calls = 0

        def transact_write_items(self, TransactItems: Any) -> None:
            self.calls += 1
            raise error

    client = Client()
    with pytest.raises(ClientError):
        DynamoTable("t", client)._transact([{"Put": {"TableName": "t", "Item": {}}}])  # type: ignore[arg-type, list-item]
    assert client.calls == 1
