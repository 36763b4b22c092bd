"""App-user JWT verification (CONTRACTS §0).

In AWS the API Gateway JWT authorizer has already validated the token and the claims arrive in the
request context; `principal_from_claims` reads them. Wherever no authorizer context is present (locally,
or a route misconfigured without the authorizer) `JwtVerifier` checks the token itself: HS256 with a
configured secret, or RS256/ES256 against a configured JWKS. The policy, every breach a 401:

* the header's `alg` must be one the key's type signs with (RSA: RS256/384/512; EC: the curve's ES256 or
  ES384; HS256 only with the local secret); `alg: none` never; with a JWKS the header must name a `kid`;
* `exp` and `sub` are required, and `iss`/`aud` whenever an issuer/audience is configured (always in AWS);
* a token may live at most `jwt_max_lifetime_seconds` from now (no 100-year tokens);
* `app_code` is required, unless `jwt_default_app_code` maps tokens without one to a tenant.

PyJWT (and the `cryptography` it loads, ~140 ms) is imported on first use: in AWS the HTTP function reads
the authorizer's claims and never needs it.
"""

from __future__ import annotations

import re
import time
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
# Which header algorithms each JWK key type (and EC curve) may sign with.
_ALGORITHMS_BY_KEY = {
    ("RSA", None): frozenset({"RS256", "RS384", "RS512"}),
    ("EC", "P-256"): frozenset({"ES256"}),
    ("EC", "P-384"): frozenset({"ES384"}),
}


def principal_from_claims(claims: Mapping[str, Any], default_app_code: str | None) -> Principal:
    """Build the principal from verified claims; malformed identity claims are rejected, not trusted."""
    user_id = claims.get("sub")
    app_code = claims.get("app_code")
    if app_code is None or app_code == "":
        app_code = default_app_code
    if not isinstance(user_id, str) or not _USER_ID.fullmatch(user_id):
        raise Unauthorized("token subject is malformed")
    if not isinstance(app_code, str) or not _APP_CODE.fullmatch(app_code):
        raise Unauthorized("token app_code is missing or malformed")
    expires = claims.get("exp")
    expires_at_ms = int(expires) * 1000 if isinstance(expires, int | str) and str(expires).isdigit() else None
    return Principal(user_id=user_id, app_code=app_code, roles=_roles(claims.get("roles")), expires_at_ms=expires_at_ms)


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
        lifetime = claims["exp"] - time.time()
        if lifetime > self._settings.jwt_max_lifetime_seconds + self._settings.jwt_leeway_seconds:
            raise Unauthorized(f"token lives longer than {self._settings.jwt_max_lifetime_seconds} s")
        return principal_from_claims(claims, self._settings.jwt_default_app_code)

    def _decode(self, token: str) -> dict[str, Any]:
        import jwt

        settings = self._settings
        required = ["exp", "sub"]
        required += ["iss"] if settings.jwt_issuer else []
        required += ["aud"] if settings.jwt_audience else []
        options: Options = {"require": required, "verify_aud": settings.jwt_audience is not None}
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
        except (jwt.PyJWTError, ValueError, TypeError, KeyError) as exc:
            raise Unauthorized("token invalid") from exc

    def _key_for(self, token: str) -> tuple[Any, list[str]]:
        """The key to verify with and the one algorithm allowed for it (never the header's word alone)."""
        import jwt

        settings = self._settings
        header = jwt.get_unverified_header(token)
        header_alg = header.get("alg")
        if settings.jwt_jwks_url and header_alg != "HS256":
            kid = header.get("kid")
            if not isinstance(kid, str) or not kid:
                raise Unauthorized("token header names no kid")
            if self._jwks is None:
                self._jwks = jwt.PyJWKClient(settings.jwt_jwks_url, cache_keys=True, lifespan=600, timeout=3)
            signing_key = self._jwks.get_signing_key(kid)
            crv = signing_key._jwk_data.get("crv") if signing_key.key_type == "EC" else None
            if header_alg not in _ALGORITHMS_BY_KEY.get((str(signing_key.key_type), crv), frozenset()):
                raise Unauthorized("token algorithm does not match its key")
            return signing_key.key, [str(header_alg)]
        if settings.jwt_hs256_secret is not None and header_alg == "HS256":
            return settings.jwt_hs256_secret.get_secret_value(), ["HS256"]
        if not settings.jwt_jwks_url and settings.jwt_hs256_secret is None:
            raise ConfigurationError("no JWT verification key configured")
        raise Unauthorized("token algorithm not accepted")
