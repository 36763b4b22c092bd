"""The realtime service's part."""

from herald.container import Container, part
from herald.errors import ConfigurationError
from herald.realtime.dynamo import ApiGatewayPusher, DynamoConnectionRegistry
from herald.realtime.service import Realtime


@part
def realtime(c: Container) -> Realtime:
    settings = c.settings
    if not settings.ws_management_endpoint:
        raise ConfigurationError("HERALD_WS_MANAGEMENT_ENDPOINT is not set")
    return Realtime(
        DynamoConnectionRegistry(settings.connections_table, c.clients.dynamodb),
        ApiGatewayPusher(settings.ws_management_endpoint),
        ttl_seconds=settings.ws_connection_ttl_seconds,
    )
