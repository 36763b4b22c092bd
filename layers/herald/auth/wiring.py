"""Builds the authenticators from settings, once per process."""

from functools import lru_cache

from herald.auth.dynamo import DynamoServiceKeyStore
from herald.auth.service_keys import ServiceKeys
from herald.auth.tokens import JwtVerifier
from herald.settings import get_settings


@lru_cache(maxsize=1)
def jwt_verifier() -> JwtVerifier:
    return JwtVerifier(get_settings())


@lru_cache(maxsize=1)
def service_keys() -> ServiceKeys:
    settings = get_settings()
    return ServiceKeys(
        DynamoServiceKeyStore(settings.service_keys_table), cache_ms=settings.service_key_cache_seconds * 1000
    )
