"""Lazily created, process-wide boto3 clients.

Clients are created on first use (never at import time), under a lock because boto3's default session is
not thread-safe to create clients from. Endpoints come from boto3's own `AWS_ENDPOINT_URL[_<SERVICE>]`
variables, which the local cloud sets; nothing here knows whether it talks to AWS or to a local engine.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config

if TYPE_CHECKING:
    from mypy_boto3_apigatewaymanagementapi import ApiGatewayManagementApiClient
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_ssm import SSMClient

_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 3},
    connect_timeout=2,
    read_timeout=5,
    tcp_keepalive=True,
)
_lock = threading.Lock()
_clients: dict[tuple[str, str | None], Any] = {}


def _client(service: str, endpoint_url: str | None = None) -> Any:
    key = (service, endpoint_url)
    with _lock:
        if key not in _clients:
            _clients[key] = boto3.client(service, endpoint_url=endpoint_url, config=_CONFIG)  # type: ignore[call-overload]
        return _clients[key]


def dynamodb() -> DynamoDBClient:
    return _client("dynamodb")  # type: ignore[no-any-return]


def sqs() -> SQSClient:
    return _client("sqs")  # type: ignore[no-any-return]


def ssm() -> SSMClient:
    return _client("ssm")  # type: ignore[no-any-return]


def apigw_management(endpoint_url: str) -> ApiGatewayManagementApiClient:
    return _client("apigatewaymanagementapi", endpoint_url)  # type: ignore[no-any-return]


def reset_clients() -> None:
    """Forget every client (tests switch endpoints between runs)."""
    with _lock:
        _clients.clear()
