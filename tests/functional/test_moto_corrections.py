"""Each correction the local cloud makes to moto (herald_dev.moto_patches), shown against moto as released:
the same requests to a plain moto server and to a corrected one, plain moto doing what the AWS documentation
says SQS or DynamoDB does not, the corrected one doing what it says they do."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from tests.support.local_cloud import LOCAL_CREDENTIALS, REPO, free_port
from tests.support.waiting import eventually


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, str]]:
    """{"plain": endpoint, "corrected": endpoint}"""
    started: dict[str, tuple[subprocess.Popen[str], str]] = {}
    for kind in ("plain", "corrected"):
        port = free_port()
        command = [sys.executable, str(REPO / "tests" / "support" / "moto_server.py"), str(port)]
        process = subprocess.Popen(
            [*command, "patched"] if kind == "corrected" else command, stdout=subprocess.PIPE, text=True, cwd=REPO
        )
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        started[kind] = (process, f"http://127.0.0.1:{port}")
    yield {kind: endpoint for kind, (_, endpoint) in started.items()}
    for process, _ in started.values():
        process.kill()
        process.wait()


def client(service: str, endpoint: str) -> Any:
    return boto3.client(service, endpoint_url=endpoint, **LOCAL_CREDENTIALS)  # type: ignore[call-overload]


def resend_after_the_first_was_consumed(endpoint: str) -> list[str]:
    sqs = client("sqs", endpoint)
    url = sqs.create_queue(QueueName="dedup.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="first", MessageGroupId="g", MessageDeduplicationId="same")
    (taken,) = sqs.receive_message(QueueUrl=url)["Messages"]
    sqs.delete_message(QueueUrl=url, ReceiptHandle=taken["ReceiptHandle"])
    sqs.send_message(QueueUrl=url, MessageBody="again", MessageGroupId="g", MessageDeduplicationId="same")
    return [m["Body"] for m in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])]


def test_a_fifo_resend_within_five_minutes_is_dropped_even_after_the_first_was_deleted(
    servers: dict[str, str],
) -> None:
    """AWS (SQS developer guide, "Using the message deduplication ID"): a message sent with a deduplication id
    already sent within the 5-minute interval is accepted but not delivered. A redrive resumed after a crash
    and the IM outbox's redelivered records rely on it."""
    assert resend_after_the_first_was_consumed(servers["plain"]) == ["again"]  # moto delivers the duplicate
    assert resend_after_the_first_was_consumed(servers["corrected"]) == []


def group_after_a_batch_comes_back(endpoint: str) -> list[str]:
    """The bodies handed out, one receive at a time, after a batch of one group's three messages was received
    and its visibility ran out unprocessed."""
    sqs = client("sqs", endpoint)
    url = sqs.create_queue(QueueName="order.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    for body in ("m1", "m2", "m3"):
        sqs.send_message(QueueUrl=url, MessageBody=body, MessageGroupId="g", MessageDeduplicationId=body)
    batch = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=1)["Messages"]
    assert [m["Body"] for m in batch] == ["m1", "m2", "m3"]

    def visible_again() -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1).get("Messages", [])
        assert messages, "the batch is still in flight"
        return messages

    handed: list[str] = []
    messages = eventually(visible_again, timeout=10)
    while messages:
        handed.append(messages[0]["Body"])
        sqs.delete_message(QueueUrl=url, ReceiptHandle=messages[0]["ReceiptHandle"])
        messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1).get("Messages", [])
    return handed


def test_a_group_whose_batch_timed_out_comes_back_oldest_first(servers: dict[str, str]) -> None:
    """AWS (SQS developer guide, FIFO delivery logic): messages of one group are received in the order they
    were sent, also when a consumer let their visibility run out. moto skips each while another of the batch is
    still marked pending, so the group's last message comes first; a worker would apply m3 before m1."""
    assert group_after_a_batch_comes_back(servers["plain"]) == ["m3", "m1", "m2"]
    assert group_after_a_batch_comes_back(servers["corrected"]) == ["m1", "m2", "m3"]


def table_with_stream(dynamodb: Any, name: str) -> str:
    """A table keyed by `pk` whose stream shows old and new images; its stream's ARN."""
    return str(
        dynamodb.create_table(
            TableName=name,
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
        )["TableDescription"]["LatestStreamArn"]
    )


def stream_after_a_cancelled_transaction(endpoint: str) -> tuple[list[str], list[str]]:
    """(keys the stream shows, keys the table holds) after: put a, a cancelled transaction (put b, put a if
    absent), put c; the stream read with an iterator taken before the transaction."""
    dynamodb, streams = client("dynamodb", endpoint), client("dynamodbstreams", endpoint)
    stream_arn = table_with_stream(dynamodb, "t")
    dynamodb.put_item(TableName="t", Item={"pk": {"S": "a"}})
    (shard,) = streams.describe_stream(StreamArn=stream_arn)["StreamDescription"]["Shards"]
    iterator = streams.get_shard_iterator(
        StreamArn=stream_arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
    )["ShardIterator"]
    with pytest.raises(dynamodb.exceptions.TransactionCanceledException):
        dynamodb.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": "t", "Item": {"pk": {"S": "b"}}}},
                {
                    "Put": {
                        "TableName": "t",
                        "Item": {"pk": {"S": "a"}},
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                },
            ]
        )
    dynamodb.put_item(TableName="t", Item={"pk": {"S": "c"}})
    shown = [r["dynamodb"]["Keys"]["pk"]["S"] for r in streams.get_records(ShardIterator=iterator)["Records"]]
    held = sorted(item["pk"]["S"] for item in dynamodb.scan(TableName="t")["Items"])
    return shown, held


def test_a_cancelled_transaction_streams_nothing_and_the_stream_goes_on(servers: dict[str, str]) -> None:
    """AWS (DynamoDB developer guide, TransactWriteItems): all-or-nothing; a stream records only writes that
    happened. moto streams the cancelled put and, having swapped the table's shard, nothing after it."""
    assert stream_after_a_cancelled_transaction(servers["plain"]) == (["a", "b"], ["a", "c"])
    assert stream_after_a_cancelled_transaction(servers["corrected"]) == (["a", "c"], ["a", "c"])


def race(scenario: str, kind: str) -> dict[str, Any]:
    """What each of two interleaved requests got (tests/support/moto_races.py), on moto as released or
    corrected; each run is its own process, since the corrections patch moto for the process."""
    command = [sys.executable, str(REPO / "tests" / "support" / "moto_races.py"), scenario]
    done = subprocess.run(
        [*command, "patched"] if kind == "corrected" else command,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_fifo_message_in_flight_is_handed_to_one_receiver_only() -> None:
    """AWS (SQS developer guide, FIFO delivery logic): a message of a group in flight blocks its group for every
    receiver. moto checks a message's visibility and marks it in flight in two steps with no lock between them,
    so a receive that comes between gets the same message: two workers run the same side effect at once."""
    assert race("fifo-receive", "plain") == {"A": ["m1"], "B": ["m1"]}
    assert race("fifo-receive", "corrected") == {"A": ["m1"], "B": []}


def test_a_put_during_a_scan_leaves_both_requests_succeeding() -> None:
    """AWS: concurrent requests to one table each succeed. moto iterates the table's item map while serving a
    Scan; a put from another request thread resizes the map and the Scan fails (a 500 from the server). Served
    one at a time, the Scan returns what it read and the put lands after it."""
    assert race("put-during-scan", "plain") == {"A": "error: RuntimeError", "B": "put"}
    assert race("put-during-scan", "corrected") == {"A": ["a", "b"], "B": "put"}


def transactions_with_one_token(endpoint: str) -> tuple[list[str], str]:
    """(what each call answered, the table's item) for: a conditional transaction with a token; the same again
    (a lost reply's retry); the same token with other items."""
    dynamodb = client("dynamodb", endpoint)
    dynamodb.create_table(
        TableName="tokens",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )

    def put(value: str) -> str:
        item = {"pk": {"S": "a"}, "v": {"S": value}}
        put = {"TableName": "tokens", "Item": item, "ConditionExpression": "attribute_not_exists(pk)"}
        try:
            dynamodb.transact_write_items(TransactItems=[{"Put": put}], ClientRequestToken="op-1")
        except dynamodb.exceptions.ClientError as error:
            return str(error.response["Error"]["Code"])
        return "ok"

    answers = [put("first"), put("first"), put("other")]
    return answers, dynamodb.get_item(TableName="tokens", Key={"pk": {"S": "a"}})["Item"]["v"]["S"]


def test_a_transaction_sent_again_with_its_token_takes_effect_once_and_answers_success(
    servers: dict[str, str],
) -> None:
    """AWS (DynamoDB API reference, TransactWriteItems, ClientRequestToken): identical calls with one token have
    the effect of one within 10 minutes; the same token with other parameters is IdempotentParameterMismatch.
    moto ignores the token: the retry of a write that landed meets its own condition."""
    assert transactions_with_one_token(servers["plain"]) == (
        ["ok", "TransactionCanceledException", "TransactionCanceledException"],
        "first",
    )
    assert transactions_with_one_token(servers["corrected"]) == (
        ["ok", "ok", "IdempotentParameterMismatchException"],
        "first",
    )


EVERY_KIND = {
    "pk": {"S": "item"}, "n": {"N": "12.5"}, "b": {"B": b"\x00\xff"}, "ss": {"SS": ["a", "b"]}, "ns": {"NS": ["1"]},
    "bs": {"BS": [b"x"]}, "null": {"NULL": True}, "no": {"BOOL": False}, "empty": {"S": ""},
    "m": {"M": {"l": {"L": [{"S": "x"}, {"M": {}}, {"L": []}, {"N": "0"}]}, "yes": {"BOOL": True}}},
}  # fmt: skip


def answers_holding_items(endpoint: str) -> list[Any]:
    """Every kind of attribute value, nested, in each answer that carries items or a table's description."""
    dynamodb = client("dynamodb", endpoint)
    table = "every-kind"
    table_with_stream(dynamodb, table)
    dynamodb.put_item(TableName=table, Item=EVERY_KIND)
    key = {"pk": {"S": "item"}}
    answers = [
        dynamodb.get_item(TableName=table, Key=key),
        dynamodb.query(TableName=table, KeyConditionExpression="pk = :k", ExpressionAttributeValues={":k": key["pk"]}),
        dynamodb.scan(TableName=table, ProjectionExpression="m.l[1], ns, b"),
        dynamodb.batch_get_item(RequestItems={table: {"Keys": [key]}}),
        dynamodb.transact_get_items(TransactItems=[{"Get": {"TableName": table, "Key": key}}]),
        dynamodb.update_item(TableName=table, Key=key, UpdateExpression="SET n = n + :one",
                             ExpressionAttributeValues={":one": {"N": "1"}}, ReturnValues="ALL_NEW"),
        dynamodb.describe_table(TableName=table)["Table"]["KeySchema"],
    ]  # fmt: skip
    for answer in answers:
        if isinstance(answer, dict):
            answer.pop("ResponseMetadata")
    return answers


def test_an_answer_that_costs_less_to_make_is_the_answer_moto_makes(servers: dict[str, str]) -> None:
    """The corrected server serializes only the members a structure holds (a cost of moto's, not a correction):
    every answer carrying items is, value for value, plain moto's."""
    assert answers_holding_items(servers["corrected"]) == answers_holding_items(servers["plain"])
