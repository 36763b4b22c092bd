"""The authenticators' parts."""

from herald.auth.dynamo import DynamoServiceKeyStore
from herald.auth.service_keys import ServiceKeys
from herald.auth.tokens import JwtVerifier
from herald.container import Container, part


@part
def jwt_verifier(c: Container) -> JwtVerifier:
    return JwtVerifier(c.settings)


@part
def service_keys(c: Container) -> ServiceKeys:
    store = DynamoServiceKeyStore(c.settings.service_keys_table, c.clients.dynamodb)
    settings = c.settings
    return ServiceKeys(
        store,
        clock=c.clock,
        cache_ms=settings.service_key_cache_seconds * 1000,
        default_app_code=settings.default_app_code,
    )
