"""Partial-batch responses are read as Lambda reads them."""

from __future__ import annotations

from typing import Any

import pytest

from herald_dev.sqs_source import failed_message_ids
from herald_dev.stream_source import failed_sequence

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
