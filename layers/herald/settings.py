"""Typed settings, read once from the environment that template.yaml (or the local cloud) fills."""

from functools import lru_cache

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="HERALD_", frozen=True)

    stage: str = "local"
    default_app_code: str = "lalu"

    # App-route authentication (CONTRACTS §0). HS256 is for local use; in AWS the JWKS URL is set.
    jwt_hs256_secret: SecretStr | None = None
    jwt_jwks_url: str | None = None
    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    jwt_leeway_seconds: int = Field(default=30, ge=0, le=300)

    # Tables and endpoints (names come from the stack, never hard-coded).
    service_keys_table: str
    connections_table: str
    ws_management_endpoint: str | None = None
    ws_connection_ttl_seconds: int = Field(default=3 * 3600, ge=60)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()  # type: ignore[call-arg]  # required fields come from the environment
