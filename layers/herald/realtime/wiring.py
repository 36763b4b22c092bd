"""Builds the realtime service from settings, once per process."""

from functools import lru_cache

from herald.errors import ConfigurationError
from herald.realtime.dynamo import ApiGatewayPusher, DynamoConnectionRegistry
from herald.realtime.service import Realtime
from herald.settings import get_settings


@lru_cache(maxsize=1)
def realtime() -> Realtime:
    settings = get_settings()
    if not settings.ws_management_endpoint:
        raise ConfigurationError("HERALD_WS_MANAGEMENT_ENDPOINT is not set")
    return Realtime(
        DynamoConnectionRegistry(settings.connections_table),
        ApiGatewayPusher(settings.ws_management_endpoint),
        ttl_seconds=settings.ws_connection_ttl_seconds,
    )
