"""The authenticators' parts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from herald.auth.dynamo import DynamoServiceKeyStore
from herald.auth.service_keys import ServiceKeys
from herald.container import Container, part

if TYPE_CHECKING:
    from herald.auth.tokens import JwtVerifier


@part
def jwt_verifier(c: Container) -> JwtVerifier:
    from herald.auth.tokens import JwtVerifier  # PyJWT and cryptography, for the functions that verify tokens

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
