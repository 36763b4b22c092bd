"""The realtime service's part."""

from herald.container import Container, part
from herald.errors import ConfigurationError
from herald.limits.service import RateLimiter
from herald.limits.wiring import rate_limiter, user_limit
from herald.realtime.dynamo import ApiGatewayPusher, DynamoConnectionRegistry
from herald.realtime.service import Realtime
from herald.tenants.wiring import tenants


class UserRateLimit:
    """A WebSocket connect or frame counts as one request of the user, as an HTTP request does."""

    def __init__(self, limiter: RateLimiter) -> None:
        self._limiter = limiter

    def check(self, app_code: str, user_id: str) -> None:
        self._limiter.check(user_limit(), f"{app_code}#{user_id}")


@part
def realtime(c: Container) -> Realtime:
    settings = c.settings
    if not settings.ws_management_endpoint:
        raise ConfigurationError("HERALD_WS_MANAGEMENT_ENDPOINT is not set")
    return Realtime(
        DynamoConnectionRegistry(settings.connections_table, c.clients.dynamodb),
        ApiGatewayPusher(settings.ws_management_endpoint, c.clients.apigw_management),
        ttl_seconds=settings.ws_connection_ttl_seconds,
        admission=UserRateLimit(rate_limiter(c)),
        admit=tenants(c).admit,
        max_per_user=settings.ws_max_connections_per_user,
        clock=c.clock,
    )
