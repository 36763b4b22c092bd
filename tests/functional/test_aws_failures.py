"""Issue 50, item 3: an AWS failure that outlasts the SDK's and Herald's retries is answered 503 with Retry-After,
never 500: DynamoDB's InternalServerError, a dropped connection or a read timeout on the last attempt (whose
botocore error carries no response), and SQS ServiceUnavailable. The error classifiers answer for such errors
instead of raising."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError, ConnectionClosedError, ReadTimeoutError
from fastapi.testclient import TestClient
from pynamodb.exceptions import PutError, TransactWriteError, UpdateError

from herald.tables import condition_failed, error_code, is_throttled, is_unavailable
from tests.functional.test_throttling import NOTIFICATION, _throttle


@pytest.mark.parametrize(
    "cause",
    [ReadTimeoutError(endpoint_url="http://dynamodb"), ConnectionClosedError(endpoint_url="http://dynamodb")],
    ids=["read-timeout", "connection-closed"],
)
@pytest.mark.parametrize("error", [PutError, UpdateError, TransactWriteError])
def test_a_connection_level_error_is_classified_as_unavailable_never_raised(cause: Exception, error: Any) -> None:
    failed = error("the last attempt failed", cause=cause)
    assert error_code(failed) is None
    assert not condition_failed(failed) and not is_throttled(failed)
    assert is_unavailable(failed)


@pytest.mark.parametrize("code", ["InternalServerError", "ServiceUnavailable", "ThrottlingException"])
def test_dynamodbs_own_failures_are_unavailable_and_a_bad_request_is_not(code: str) -> None:
    failed = PutError("x", cause=ClientError({"Error": {"Code": code, "Message": "m"}}, "PutItem"))
    assert is_unavailable(failed)
    invalid = PutError("x", cause=ClientError({"Error": {"Code": "ValidationException", "Message": "m"}}, "PutItem"))
    assert not is_unavailable(invalid)


@pytest.mark.parametrize(
    "failure",
    [
        ClientError({"Error": {"Code": "InternalServerError", "Message": "internal"}}, "TransactWriteItems"),
        ReadTimeoutError(endpoint_url="http://dynamodb"),
    ],
    ids=["internal-server-error", "read-timeout"],
)
def test_a_dynamodb_failure_that_outlasts_the_retries_is_503_with_retry_after_never_500(
    api: TestClient, producer: dict[str, str], failure: Exception
) -> None:
    _throttle("TransactWriteItems", 1_000, failure)  # type: ignore[arg-type]
    response = api.post("/internal/v1/inbox/notifications", json=NOTIFICATION, headers=producer)
    assert response.status_code == 503, response.text
    assert response.json()["code"] == "UNAVAILABLE" and response.headers["Retry-After"] == "1"


@pytest.mark.parametrize(
    ("failure", "status"),
    [
        (ClientError({"Error": {"Code": "ServiceUnavailable", "Message": "busy"}}, "SendMessage"), 503),
        (
            ClientError(
                {"Error": {"Code": "AWS.SimpleQueueService.ServiceUnavailable", "Message": "m"}}, "SendMessage"
            ),
            503,
        ),
        (
            ClientError(
                {"Error": {"Code": "InternalError", "Message": "m"}, "ResponseMetadata": {"HTTPStatusCode": 500}},  # type: ignore[typeddict-item]
                "SendMessage",
            ),
            503,
        ),
        (ReadTimeoutError(endpoint_url="http://sqs"), 503),
        (ClientError({"Error": {"Code": "InvalidParameterValue", "Message": "a bug of ours"}}, "SendMessage"), 500),
    ],
    ids=["service-unavailable", "sqs-service-unavailable", "internal-error", "read-timeout", "a-bug"],
)
def test_any_other_aws_failure_that_outlasts_the_retries_is_503_and_a_refused_request_of_ours_is_500(
    aws: Any, failure: Exception, status: int
) -> None:
    from herald.api.app import create_app

    app = create_app()

    @app.get("/api/v1/sends")
    def sends() -> None:
        raise failure

    response = TestClient(app, raise_server_exceptions=False).get("/api/v1/sends")
    assert response.status_code == status, response.text
    if status == 503:
        assert response.json()["code"] == "UNAVAILABLE" and response.headers["Retry-After"] == "1"
