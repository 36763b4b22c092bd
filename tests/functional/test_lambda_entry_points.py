"""The deployed entry points, invoked with the event shapes API Gateway sends (events/*.json)."""

from __future__ import annotations

import json
import time
from typing import Any

import boto3
from herald_ops.template import StackTemplate

from herald.container import current
from tests.support.aws import load_event, load_function
from tests.support.lambda_context import FakeLambdaContext
from tests.support.tokens import make_token


def test_http_function_takes_the_user_from_authorizer_claims_not_headers(aws: StackTemplate) -> None:
    handler = load_function("http_api").handler
    event: dict[str, Any] = load_event("http_api/get_me_with_authorizer.json")
    # A live token: the function holds the authorizer's claims to the maximum lifetime too.
    event["requestContext"]["authorizer"]["jwt"]["claims"]["exp"] = str(int(time.time()) + 600)
    response = handler(event, FakeLambdaContext())
    body = json.loads(response["body"])
    assert response["statusCode"] == 200
    assert body["data"] == {"user_id": "10002", "app_code": "lalu", "roles": ["developer"]}
    assert body["request_id"] == "req-authorizer-0001"


def test_http_function_without_authorizer_context_verifies_the_token_itself(aws: StackTemplate) -> None:
    handler = load_function("http_api").handler
    event: dict[str, Any] = load_event("http_api/get_me_with_authorizer.json")
    del event["requestContext"]["authorizer"]
    response = handler(event, FakeLambdaContext())
    assert response["statusCode"] == 401
    event["headers"]["authorization"] = f"Bearer {make_token('10005')}"
    assert json.loads(handler(event, FakeLambdaContext())["body"])["data"]["user_id"] == "10005"


def test_http_function_serves_health(aws: StackTemplate) -> None:
    response = load_function("http_api").handler(load_event("http_api/get_health.json"), FakeLambdaContext())
    assert response["statusCode"] == 200
    assert json.loads(response["body"])["data"]["status"] == "ok"


def _connections() -> list[dict[str, Any]]:
    table = current().settings.connections_table
    return boto3.client("dynamodb").scan(TableName=table)["Items"]


def test_websocket_connect_with_token_registers_the_connection_and_disconnect_removes_it(
    aws: StackTemplate,
) -> None:
    handler = load_function("websocket").handler
    event: dict[str, Any] = load_event("websocket/connect.json")
    event["queryStringParameters"] = {"token": make_token("10002")}
    assert handler(event, FakeLambdaContext())["statusCode"] == 200
    (item,) = _connections()
    assert item["user_key"]["S"] == "lalu#10002" and item["connection_id"]["S"] == "L0SM9cOFvHcCIhw="
    assert int(item["expires_at"]["N"]) > 0
    assert handler(load_event("websocket/disconnect.json"), FakeLambdaContext())["statusCode"] == 200
    assert _connections() == []


def test_websocket_connect_without_valid_token_is_refused_and_nothing_stored(aws: StackTemplate) -> None:
    handler = load_function("websocket").handler
    for query in (None, {"token": "garbage"}, {"token": make_token(ttl=-100)}):
        event: dict[str, Any] = load_event("websocket/connect.json")
        event["queryStringParameters"] = query
        assert handler(event, FakeLambdaContext())["statusCode"] == 401
    assert _connections() == []
