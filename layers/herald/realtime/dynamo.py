"""Adapters: connections in DynamoDB (TTL'd, GSI by user), pushes via the API Gateway management API."""

from __future__ import annotations

from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from herald import aws
from herald.dynamo import from_item, to_item
from herald.dynamo_table import DynamoTable
from herald.realtime.models import Connection

if TYPE_CHECKING:
    from mypy_boto3_apigatewaymanagementapi import ApiGatewayManagementApiClient

BY_USER_INDEX = "by_user"


def _user_key(app_code: str, user_id: str) -> str:
    return f"{app_code}#{user_id}"


class DynamoConnectionRegistry(DynamoTable):
    def add(self, connection: Connection) -> None:
        self._ddb.put_item(
            TableName=self._table,
            Item=to_item(
                {
                    "connection_id": connection.connection_id,
                    "user_key": _user_key(connection.app_code, connection.user_id),
                    "app_code": connection.app_code,
                    "user_id": connection.user_id,
                    "connected_at_ms": connection.connected_at_ms,
                    "expires_at": connection.expires_at,
                    "token_expires_at_ms": connection.token_expires_at_ms,
                }
            ),
        )

    def remove(self, connection_id: str) -> None:
        self._ddb.delete_item(TableName=self._table, Key={"connection_id": {"S": connection_id}})

    def for_user(self, app_code: str, user_id: str) -> list[Connection]:
        connections: list[Connection] = []
        paginator = self._ddb.get_paginator("query")
        for page in paginator.paginate(
            TableName=self._table,
            IndexName=BY_USER_INDEX,
            KeyConditionExpression="user_key = :u",
            ExpressionAttributeValues={":u": {"S": _user_key(app_code, user_id)}},
        ):
            for raw in page.get("Items", []):
                item = from_item(raw)
                connections.append(
                    Connection(
                        connection_id=item["connection_id"],
                        app_code=item["app_code"],
                        user_id=item["user_id"],
                        connected_at_ms=item["connected_at_ms"],
                        expires_at=item["expires_at"],
                        token_expires_at_ms=item.get("token_expires_at_ms"),
                    )
                )
        return connections


class ApiGatewayPusher:
    def __init__(self, endpoint_url: str, client: ApiGatewayManagementApiClient | None = None) -> None:
        self._endpoint = endpoint_url
        self._client = client

    def send(self, connection_id: str, data: bytes) -> bool:
        client = self._client or aws.apigw_management(self._endpoint)
        try:
            client.post_to_connection(ConnectionId=connection_id, Data=data)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "GoneException":
                return False
            raise
        return True

    def close(self, connection_id: str) -> None:
        client = self._client or aws.apigw_management(self._endpoint)
        try:
            client.delete_connection(ConnectionId=connection_id)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "GoneException":
                raise
