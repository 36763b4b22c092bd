"""Issue 50, item 1: the fault-injecting AWS endpoint. Each fault it injects is AWS's own wire format as botocore
parses it (the error code, the status, a transaction's cancellation reasons, SQS's query-compatible code), a
lost reply is a write that happened and a caller that heard nothing, and a schedule is reproducible from its
seed. In front of a real moto server, with botocore's retries off so each fault is seen as sent."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, ConnectionClosedError

from herald_dev.fault_proxy import FaultProxy, FaultSpec, Schedule
from tests.support.local_cloud import LOCAL_CREDENTIALS, REPO, free_port


@pytest.fixture(scope="module")
def moto_endpoint() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(REPO / "tests" / "support" / "moto_server.py"), str(port), "patched"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    yield f"http://127.0.0.1:{port}"
    process.kill()
    process.wait()


def faulting(moto_endpoint: str, kind: str) -> Iterator[FaultProxy]:
    proxy = FaultProxy({"*": moto_endpoint}, FaultSpec(rate=1.0, seed=1, kinds=(kind,))).start()
    yield proxy
    proxy.stop()


def client(service: str, endpoint: str) -> Any:
    no_retries = Config(retries={"total_max_attempts": 1, "mode": "standard"}, read_timeout=5)
    return boto3.client(service, endpoint_url=endpoint, config=no_retries, **LOCAL_CREDENTIALS)  # type: ignore[call-overload]


def table(dynamodb: Any, name: str) -> str:
    dynamodb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return name


@pytest.mark.parametrize(
    ("kind", "code", "status"),
    [
        ("throttle", "ProvisionedThroughputExceededException", 400),
        ("internal", "InternalServerError", 500),
        ("unavailable", "InternalServerError", 500),
    ],
)
def test_a_dynamodb_fault_is_the_error_botocore_parses_from_aws(
    moto_endpoint: str, kind: str, code: str, status: int
) -> None:
    name = table(client("dynamodb", moto_endpoint), f"t-{kind}")
    for proxy in faulting(moto_endpoint, kind):
        with pytest.raises(ClientError) as raised:
            client("dynamodb", proxy.url).put_item(TableName=name, Item={"pk": {"S": "a"}})
        assert raised.value.response["Error"]["Code"] == code
        assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == status
    assert "Item" not in client("dynamodb", moto_endpoint).get_item(TableName=name, Key={"pk": {"S": "a"}})


def test_a_transaction_conflict_names_a_reason_for_each_item_as_dynamodb_does(moto_endpoint: str) -> None:
    name = table(client("dynamodb", moto_endpoint), "t-conflict")
    items = [{"Put": {"TableName": name, "Item": {"pk": {"S": key}}}} for key in ("a", "b")]
    for proxy in faulting(moto_endpoint, "conflict"):
        dynamodb = client("dynamodb", proxy.url)
        with pytest.raises(dynamodb.exceptions.TransactionCanceledException) as raised:
            dynamodb.transact_write_items(TransactItems=items)
        reasons = raised.value.response["CancellationReasons"]
        assert [reason["Code"] for reason in reasons] == ["TransactionConflict", "TransactionConflict"]


@pytest.mark.parametrize(
    ("kind", "code"),
    [("unavailable", "ServiceUnavailable"), ("internal", "InternalError"), ("throttle", "ThrottlingException")],
)
def test_an_sqs_fault_is_the_error_botocore_parses_from_sqs(moto_endpoint: str, kind: str, code: str) -> None:
    url = client("sqs", moto_endpoint).create_queue(QueueName=f"q-{kind}")["QueueUrl"]
    for proxy in faulting(moto_endpoint, kind):
        with pytest.raises(ClientError) as raised:
            client("sqs", proxy.url).send_message(QueueUrl=url, MessageBody="m")
        assert raised.value.response["Error"]["Code"] == code
    assert "Messages" not in client("sqs", moto_endpoint).receive_message(QueueUrl=url)


def test_a_lost_reply_is_a_write_that_happened_and_a_caller_that_heard_nothing(moto_endpoint: str) -> None:
    name = table(client("dynamodb", moto_endpoint), "t-lost")
    for proxy in faulting(moto_endpoint, "lost-reply"):
        with pytest.raises(ConnectionClosedError):
            client("dynamodb", proxy.url).put_item(TableName=name, Item={"pk": {"S": "a"}})
        assert proxy.schedule.injected == {"lost-reply": 1}
    stored = client("dynamodb", moto_endpoint).get_item(TableName=name, Key={"pk": {"S": "a"}})
    assert stored["Item"] == {"pk": {"S": "a"}}


def test_a_schedule_is_reproducible_from_its_seed_and_faults_about_its_rate() -> None:
    def fates(seed: int) -> list[str | None]:
        schedule = Schedule(FaultSpec(rate=0.1, seed=seed))
        return [schedule.next_fault("PutItem") for _ in range(2_000)]

    assert fates(7) == fates(7) and fates(7) != fates(8)
    faulted = [fate for fate in fates(7) if fate]
    assert 150 <= len(faulted) <= 250 and set(faulted) == {
        "throttle",
        "internal",
        "conflict",
        "unavailable",
        "lost-reply",
    }


def test_a_spec_is_read_from_its_text_and_a_wrong_one_refused() -> None:
    assert FaultSpec.parse("rate=0.05,seed=3,kinds=throttle+lost-reply") == FaultSpec(
        0.05, 3, ("throttle", "lost-reply")
    )
    with pytest.raises(ValueError, match="unknown fault kinds"):
        FaultSpec.parse("kinds=meteor")
    with pytest.raises(ValueError, match="share of calls"):
        FaultSpec.parse("rate=3")
