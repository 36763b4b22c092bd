"""Adapters: connections in DynamoDB (TTL'd, GSI by user), pushes via the API Gateway management API."""

from __future__ import annotations

from typing import TYPE_CHECKING

from botocore.exceptions import ClientError
from pynamodb.attributes import TTLAttribute, UnicodeAttribute
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex
from pynamodb.models import Model

from herald import aws
from herald.realtime.models import Connection
from herald.tables import Database, IntAttribute, epoch_seconds, ttl

if TYPE_CHECKING:
    from mypy_boto3_apigatewaymanagementapi import ApiGatewayManagementApiClient
    from mypy_boto3_dynamodb import DynamoDBClient


class ByUser(GlobalSecondaryIndex["ConnectionRow"]):
    class Meta:
        index_name = "by_user"
        projection = AllProjection()

    user_key = UnicodeAttribute(hash_key=True)
    connection_id = UnicodeAttribute(range_key=True)


class ByApp(GlobalSecondaryIndex["ConnectionRow"]):
    """A tenant's open connections (to close them all when it is disabled)."""

    class Meta:
        index_name = "by_app"
        projection = AllProjection()

    app_code = UnicodeAttribute(hash_key=True)
    connection_id = UnicodeAttribute(range_key=True)


class ConnectionRow(Model):
    """ConnectionsTable: one item an open WebSocket connection, gone by TTL if its close was never seen."""

    connection_id = UnicodeAttribute(hash_key=True)
    user_key = UnicodeAttribute()  # "<app_code>#<user_id>"
    app_code = UnicodeAttribute()
    user_id = UnicodeAttribute()
    connected_at_ms = IntAttribute()
    expires_at = TTLAttribute()
    token_expires_at_ms = IntAttribute(null=True)
    by_user = ByUser()
    by_app = ByApp()

    def connection(self) -> Connection:
        return Connection(
            connection_id=self.connection_id,
            app_code=self.app_code,
            user_id=self.user_id,
            connected_at_ms=self.connected_at_ms,
            expires_at=epoch_seconds(self.expires_at),
            token_expires_at_ms=self.token_expires_at_ms,
        )


def _user_key(app_code: str, user_id: str) -> str:
    return f"{app_code}#{user_id}"


class DynamoConnectionRegistry:
    def __init__(self, table_name: str, client: DynamoDBClient | None = None) -> None:
        self._rows = Database(client).bind(ConnectionRow, table_name)

    def add(self, connection: Connection) -> None:
        self._rows(
            connection_id=connection.connection_id,
            user_key=_user_key(connection.app_code, connection.user_id),
            app_code=connection.app_code,
            user_id=connection.user_id,
            connected_at_ms=connection.connected_at_ms,
            expires_at=ttl(connection.expires_at),
            token_expires_at_ms=connection.token_expires_at_ms,
        ).save()

    def remove(self, connection_id: str) -> None:
        self._rows(connection_id=connection_id).delete()

    def get(self, connection_id: str) -> Connection | None:
        try:
            return self._rows.get(connection_id).connection()
        except self._rows.DoesNotExist:
            return None

    def for_user(self, app_code: str, user_id: str) -> list[Connection]:
        return [row.connection() for row in self._rows.by_user.query(_user_key(app_code, user_id))]

    def for_tenant(self, app_code: str) -> list[Connection]:
        return [row.connection() for row in self._rows.by_app.query(app_code)]


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
