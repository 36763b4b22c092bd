"""Issue 50, item 3, through the real DynamoDB store (moto): a write DynamoDB executed whose reply was lost is
retried by the SDK, meets its own condition (ConditionalCheckFailed), and Herald recognises its own success.
`LostReply` executes the chosen call, then sends it again and answers with the second answer: exactly what a
timeout after the write and the SDK's retry do."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError
from fastapi.testclient import TestClient

from herald import aws
from herald.container import Clients
from tests.functional.test_confirms_flow import accept, confirm_ids, invite, reject
from tests.support.container import reconfigure
from tests.support.pipeline import ConfirmPipeline


class LostReply:
    """The process-wide DynamoDB client; the first call of `operation` whose parameters `matches` runs twice (the
    write, then the SDK's retry of it) and answers as the retry did."""

    def __init__(self, real: Any, operation: str, matches: Any) -> None:
        self._real, self._operation, self._matches = real, operation, matches
        self.lost = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def _make_api_call(self, operation: str, params: dict[str, Any]) -> Any:
        if operation == self._operation and not self.lost and self._matches(params):
            self.lost += 1
            self._real._make_api_call(operation, params)  # executed; its reply never arrives
        return self._real._make_api_call(operation, params)


def claim_of(params: dict[str, Any]) -> bool:
    return bool(params.get("Item", {}).get("status", {}).get("S") == "processing")


@pytest.mark.parametrize(("act", "status"), [(accept, "accepted"), (reject, "rejected")], ids=["accept", "reject"])
def test_the_receivers_click_whose_claim_reply_was_lost_is_decided_not_a_409(
    pipeline: ConfirmPipeline, fake_im: Any, act: Any, status: str
) -> None:
    """The receiver's only accept (or reject, with its reason) whose claim landed but whose reply was lost."""
    from herald.api.app import create_app

    api = TestClient(create_app())
    invite(api)
    pipeline.drain()
    (confirm_id,) = confirm_ids(fake_im)
    lost = LostReply(aws.dynamodb(), "PutItem", claim_of)
    reconfigure(clients=Clients(dynamodb=lost))  # type: ignore[arg-type]
    answer = act(TestClient(create_app()), confirm_id)
    assert lost.lost == 1
    assert answer.status_code == 200, answer.text
    assert answer.json()["data"]["status"] == status


class LandedThenThrottled(LostReply):
    """The transaction lands, its reply is lost, and the SDK's retries are throttled: the error reaches Herald,
    whose own retry is a new call (botocore's own ClientRequestToken is new with it)."""

    def _make_api_call(self, operation: str, params: dict[str, Any]) -> Any:
        if operation == self._operation and not self.lost:
            self.lost += 1
            self._real._make_api_call(operation, params)
            raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, operation)
        return self._real._make_api_call(operation, params)


def test_a_notification_whose_transactions_reply_was_lost_is_answered_created(
    api: TestClient, producer: dict[str, str]
) -> None:
    """The inbox's create is one transaction (the notification, its dedup record, the unread counter). Herald
    sends it again after a lost reply with the same ClientRequestToken (derived from its items), and DynamoDB
    answers success: the producer is told `created: true`, and the counter counts the notification once."""
    from tests.functional.test_inbox import notify
    from tests.support.tokens import make_token

    lost = LandedThenThrottled(aws.dynamodb(), "TransactWriteItems", None)
    reconfigure(clients=Clients(dynamodb=lost))  # type: ignore[arg-type]
    created = notify(api, producer)
    assert lost.lost == 1 and created["created"] is True
    user = {"Authorization": f"Bearer {make_token('10002')}"}
    assert api.get("/api/v1/inbox/unread-count", headers=user).json()["data"]["unread_count"] == 1


@pytest.mark.usefixtures("aws")
def test_a_rate_limit_hit_whose_reply_was_lost_is_counted_once() -> None:
    """The counter's conditional ADD lands, its reply is lost, and the SDK sends it again: one request, one hit."""
    from herald.container import current
    from herald.limits.dynamo import DynamoCounter
    from herald.limits.service import Limit, RateLimiter

    lost = LostReply(aws.dynamodb(), "UpdateItem", lambda params: True)
    counter = DynamoCounter(current().settings.rate_limits_table, lost)  # type: ignore[arg-type]
    RateLimiter(counter, clock=lambda: 1_800_000_000_000).check(Limit("user", per_window=5), "acme#10001")
    assert lost.lost == 1
    assert counter.count("user#acme#10001#1800000000") == 1


class CountingReads:
    """The DynamoDB client, counting its GetItem calls."""

    def __init__(self, real: Any) -> None:
        self._real, self.reads = real, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def _make_api_call(self, operation: str, params: dict[str, Any]) -> Any:
        self.reads += operation == "GetItem"
        return self._real._make_api_call(operation, params)


@pytest.mark.usefixtures("aws")
def test_a_refused_request_reads_its_full_window_once() -> None:
    """The refusal's read (is the stored token this hit's own?) is also the count its Retry-After comes from."""
    from herald.container import current
    from herald.errors import RateLimited
    from herald.limits.dynamo import DynamoCounter
    from herald.limits.service import Limit, RateLimiter

    client = CountingReads(aws.dynamodb())
    counter = DynamoCounter(current().settings.rate_limits_table, client)  # type: ignore[arg-type]
    limiter = RateLimiter(counter, clock=lambda: 1_800_000_030_000)
    limit = Limit("user", per_window=2)
    limiter.check(limit, "acme#10001")
    limiter.check(limit, "acme#10001")
    assert client.reads == 1  # the previous window's count, once
    with pytest.raises(RateLimited) as refused:
        limiter.check(limit, "acme#10001")
    assert client.reads == 2 and refused.value.retry_after_s >= 1


def sent_update(params: dict[str, Any]) -> bool:
    """A delivery's update to `sent`."""
    names, values = params.get("ExpressionAttributeNames", {}).values(), params.get("ExpressionAttributeValues", {})
    return "attempts" in names and {"S": "sent"} in values.values()


def test_a_pushs_attempt_whose_reply_was_lost_is_counted_once(
    api: TestClient, pipeline: ConfirmPipeline, fake_im: Any
) -> None:
    """The delivery's `sent` update lands, its reply is lost and the SDK sends it again: `attempts` is 1."""
    import boto3

    from herald.container import current

    lost = LostReply(aws.dynamodb(), "UpdateItem", sent_update)
    reconfigure(clients=Clients(dynamodb=lost))  # type: ignore[arg-type]
    invite(api)
    pipeline.drain()
    assert lost.lost == 1 and len(fake_im.messages) == 1
    (delivery,) = boto3.client("dynamodb").scan(TableName=current().settings.deliveries_table)["Items"]
    assert delivery["status"]["S"] == "sent" and delivery["attempts"]["N"] == "1"
