"""Partial-batch responses are read as Lambda reads them."""

from __future__ import annotations

from typing import Any

import pytest

from herald_dev.sqs_source import failed_message_ids
from herald_dev.stream_source import delivered_record, failed_sequence

IDS = ["m1", "m2", "m3"]


@pytest.mark.parametrize(
    ("response", "failed"),
    [
        (None, set()),
        ({}, set()),
        ({"batchItemFailures": []}, set()),
        ({"batchItemFailures": [{"itemIdentifier": "m2"}]}, {"m2"}),
        ({"batchItemFailures": [{"itemIdentifier": "unknown"}]}, set(IDS)),
        ({"batchItemFailures": [{"itemIdentifier": ""}]}, set(IDS)),
        ({"batchItemFailures": [{}]}, set(IDS)),
        ({"batchItemFailures": "m2"}, set(IDS)),
    ],
)
def test_sqs_partial_batch_response(response: Any, failed: set[str]) -> None:
    assert failed_message_ids(response, IDS) == failed


SEQ = ["100", "200", "300"]


@pytest.mark.parametrize(
    ("response", "checkpoint"),
    [
        (None, None),
        ({"batchItemFailures": []}, None),
        ({"batchItemFailures": [{"itemIdentifier": "300"}, {"itemIdentifier": "200"}]}, "200"),
        ({"batchItemFailures": [{"itemIdentifier": "999"}]}, "100"),
    ],
)
def test_stream_partial_batch_response_checkpoints_at_the_earliest_failure(
    response: Any, checkpoint: str | None
) -> None:
    assert failed_sequence(response, SEQ) == checkpoint


def test_stream_records_are_shaped_as_lambda_sends_them_even_from_dynamodb_local() -> None:
    from herald_dev.stream_source import stream_record

    raw = {
        "eventName": "INSERT",
        "awsRegion": "ddblocal",
        "dynamodb": {
            "Keys": {"pk": {"S": "a"}},
            "NewImage": {"pk": {"S": "a"}, "m": {}, "n": {"M": {"inner": {}}}, "l": {"L": [{}]}, "b": {"B": b"\x01"}},
            "SequenceNumber": "1",
        },
    }
    shaped = stream_record(raw, "arn:stream", "eu-west-1")
    assert shaped["eventSourceARN"] == "arn:stream" and shaped["awsRegion"] == "eu-west-1"
    image = shaped["dynamodb"]["NewImage"]
    assert image["m"] == {"M": {}} and image["n"] == {"M": {"inner": {"M": {}}}} and image["l"] == {"L": [{"M": {}}]}
    assert image["b"] == {"B": "AQ=="}


def test_a_record_the_emulator_cannot_shape_is_delivered_with_its_keys_instead_of_stopping_the_shard() -> None:
    raw = {
        "eventID": "e1",
        "eventName": "INSERT",
        "dynamodb": {"Keys": {"pk": {"S": "a"}}, "NewImage": {"m": {"M": None}}, "SequenceNumber": "7"},
    }
    record = delivered_record(raw, "arn:stream", "us-east-1")
    assert record["dynamodb"] == {
        "Keys": {"pk": {"S": "a"}},
        "SequenceNumber": "7",
        "SizeBytes": 0,
        "StreamViewType": None,
    }
    assert (record["eventID"], record["eventSourceARN"]) == ("e1", "arn:stream")
