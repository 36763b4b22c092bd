"""App-user JWT verification (CONTRACTS §0).

In AWS the API Gateway JWT authorizer has already validated the token and the claims arrive in the
request context; `principal_from_claims` reads them. Wherever no authorizer context is present (locally,
or a route misconfigured without the authorizer) `JwtVerifier` checks the token itself: HS256 with a
configured secret, or RS256/ES256 against a configured JWKS. `alg: none` is never accepted, and neither is
a token without `exp` or `sub`.

PyJWT (and the `cryptography` it loads, ~140 ms) is imported on first use: in AWS the HTTP function reads
the authorizer's claims and never needs it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from herald.auth.models import Principal
from herald.errors import ConfigurationError, Unauthorized
from herald.settings import Settings

if TYPE_CHECKING:
    import jwt
    from jwt.types import Options

_USER_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
_APP_CODE = re.compile(r"^[a-z0-9_-]{1,32}$")
_ASYMMETRIC = ["RS256", "RS384", "RS512", "ES256", "ES384"]


def principal_from_claims(claims: Mapping[str, Any], default_app_code: str) -> Principal:
    """Build the principal from verified claims; malformed identity claims are rejected, not trusted."""
    user_id = str(claims.get("sub") or "")
    app_code = str(claims.get("app_code") or default_app_code)
    if not _USER_ID.match(user_id) or not _APP_CODE.match(app_code):
        raise Unauthorized("token subject or app_code is malformed")
    return Principal(user_id=user_id, app_code=app_code, roles=_roles(claims.get("roles")))


def _roles(raw: Any) -> frozenset[str]:
    """Roles as a list claim, or as API Gateway flattens a list claim into a string: "[a b]"."""
    if raw is None:
        return frozenset()
    if isinstance(raw, str):
        return frozenset(part for part in raw.strip("[]").replace(",", " ").split() if part)
    if isinstance(raw, list | tuple):
        return frozenset(str(part) for part in raw)
    return frozenset()


class JwtVerifier:
    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._jwks: jwt.PyJWKClient | None = None

    def verify(self, token: str) -> Principal:
        claims = self._decode(token)
        return principal_from_claims(claims, self._settings.default_app_code)

    def _decode(self, token: str) -> dict[str, Any]:
        import jwt

        settings = self._settings
        options: Options = {"require": ["exp", "sub"], "verify_aud": settings.jwt_audience is not None}
        try:
            key, algorithms = self._key_for(token)
            return jwt.decode(
                token,
                key=key,
                algorithms=algorithms,
                audience=settings.jwt_audience,
                issuer=settings.jwt_issuer,
                leeway=settings.jwt_leeway_seconds,
                options=options,
            )
        except jwt.ExpiredSignatureError as exc:
            raise Unauthorized("token expired") from exc
        except (jwt.PyJWTError, ValueError) as exc:
            raise Unauthorized("token invalid") from exc

    def _key_for(self, token: str) -> tuple[Any, list[str]]:
        import jwt

        settings = self._settings
        header_alg = jwt.get_unverified_header(token).get("alg")
        if settings.jwt_jwks_url and header_alg in _ASYMMETRIC:
            if self._jwks is None:
                self._jwks = jwt.PyJWKClient(settings.jwt_jwks_url, cache_keys=True, lifespan=600, timeout=3)
            return self._jwks.get_signing_key_from_jwt(token).key, _ASYMMETRIC
        if settings.jwt_hs256_secret is not None:
            return settings.jwt_hs256_secret.get_secret_value(), ["HS256"]
        if not settings.jwt_jwks_url:
            raise ConfigurationError("no JWT verification key configured")
        raise Unauthorized("token algorithm not accepted")
