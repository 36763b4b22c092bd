"""App-user JWT verification (contract §0): one token policy for API Gateway and the function.

In AWS the HTTP API's JWT authorizer has already validated the token and the claims arrive in the request
context; `principal_from_claims` reads them. Wherever no authorizer context is present (the WebSocket
`$connect`, locally, a route without the authorizer) `JwtVerifier` checks the token itself, by the same
rules the authorizer applies (API Gateway developer guide, "Authorizing API requests" with a JWT
authorizer), read from the same two settings, `JwtIssuer` and `JwtAudience`:

* keys come from the issuer's `/.well-known/openid-configuration` → `jwks_uri`, as the authorizer finds them;
* RSA only (RS256/RS384/RS512), with a `kid` naming a key of that set (the authorizer verifies nothing else);
* `iss` equals the issuer; `aud` **or** `client_id` equals the audience (Cognito access tokens carry only
  `client_id`); `exp` in the future, `nbf`/`iat` in the past.

Herald adds, on both paths where it can: a token lives at most `jwt_max_lifetime_seconds` from now, and its
tenant comes from the `jwt_app_code_claim` claim (or `jwt_default_app_code`); `sub` is the user id. Locally,
without an issuer, HS256 with the development secret is accepted instead. Every breach is a 401.

PyJWT (and the `cryptography` it loads, ~140 ms) is imported on first use: in AWS the HTTP function reads
the authorizer's claims and never needs it.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from herald.auth.models import Principal
from herald.errors import ConfigurationError, Unauthorized
from herald.ids import APP_CODE_PATTERN
from herald.settings import Settings

if TYPE_CHECKING:
    import jwt
    from jwt.types import Options

_USER_ID = re.compile(r"[A-Za-z0-9_.:|@-]{1,128}")  # Cognito UUIDs, Auth0's `provider|id`, Keycloak UUIDs
_APP_CODE = re.compile(APP_CODE_PATTERN)
RSA_ALGORITHMS = ["RS256", "RS384", "RS512"]  # what API Gateway's JWT authorizer verifies
DISCOVERY_PATH = "/.well-known/openid-configuration"


def principal_from_claims(claims: Mapping[str, Any], settings: Settings) -> Principal:
    """Build the principal from verified claims (the authorizer's, flattened to strings, or our own);
    malformed identity claims and over-long lifetimes are rejected, not trusted."""
    user_id = claims.get("sub")
    app_code = claims.get(settings.jwt_app_code_claim) or settings.jwt_default_app_code
    if not isinstance(user_id, str) or not _USER_ID.fullmatch(user_id):
        raise Unauthorized("token subject is malformed")
    if not isinstance(app_code, str) or not _APP_CODE.fullmatch(app_code):
        raise Unauthorized("token app_code is missing or malformed")
    expires = str(claims.get("exp", ""))
    expires_at_ms = int(expires) * 1000 if expires.isascii() and expires.isdigit() else None
    if expires_at_ms is None:
        raise Unauthorized("token has no expiry")
    allowed = settings.jwt_max_lifetime_seconds + settings.jwt_leeway_seconds
    if expires_at_ms / 1000 - time.time() > allowed:
        raise Unauthorized(f"token lives longer than {settings.jwt_max_lifetime_seconds} s")
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
        return principal_from_claims(self._decode(token), self._settings)

    def _decode(self, token: str) -> dict[str, Any]:
        import jwt

        settings = self._settings
        try:
            key, algorithms = self._key_for(token)
            options: Options = {"require": ["exp", "sub", *(["iss"] if settings.jwt_issuer else [])]}
            options["verify_aud"] = False  # `aud` or `client_id`, checked below as the authorizer does
            claims: dict[str, Any] = jwt.decode(
                token,
                key=key,
                algorithms=algorithms,
                issuer=settings.jwt_issuer,
                leeway=settings.jwt_leeway_seconds,
                options=options,
            )
        except jwt.ExpiredSignatureError as exc:
            raise Unauthorized("token expired") from exc
        except (jwt.PyJWTError, ValueError, TypeError, KeyError) as exc:
            raise Unauthorized("token invalid") from exc
        if settings.jwt_audience and not _for_audience(claims, settings.jwt_audience):
            raise Unauthorized("token is for another audience")
        return claims

    def _key_for(self, token: str) -> tuple[Any, list[str]]:
        """The key to verify with and the algorithms allowed for it (never the header's word alone)."""
        import jwt

        settings = self._settings
        header = jwt.get_unverified_header(token)
        if settings.jwt_issuer:
            if header.get("alg") not in RSA_ALGORITHMS:
                raise Unauthorized("token algorithm not accepted: RS256, RS384 or RS512")
            kid = header.get("kid")
            if not isinstance(kid, str) or not kid:
                raise Unauthorized("token header names no kid")
            signing_key = self._key_set().get_signing_key(kid)
            if signing_key.key_type != "RSA":
                raise Unauthorized("token's key is not an RSA key")
            return signing_key.key, RSA_ALGORITHMS
        if settings.jwt_hs256_secret is None:
            raise ConfigurationError("no JWT issuer (or local secret) configured")
        if header.get("alg") != "HS256":
            raise Unauthorized("token algorithm not accepted")
        return settings.jwt_hs256_secret.get_secret_value(), ["HS256"]

    def _key_set(self) -> jwt.PyJWKClient:
        """The issuer's key set, found through its discovery document as the authorizer finds it."""
        import jwt

        if self._jwks is None:
            discovery_url = str(self._settings.jwt_issuer).rstrip("/") + DISCOVERY_PATH
            try:
                with urllib.request.urlopen(discovery_url, timeout=3) as response:  # noqa: S310 - configured IdP
                    jwks_uri = str(json.loads(response.read())["jwks_uri"])
            except (OSError, ValueError, KeyError) as exc:
                raise Unauthorized("the identity provider's key set cannot be found") from exc
            self._jwks = jwt.PyJWKClient(jwks_uri, cache_keys=True, lifespan=600, timeout=3)
        return self._jwks


def _for_audience(claims: Mapping[str, Any], audience: str) -> bool:
    aud = claims.get("aud")
    audiences = aud if isinstance(aud, list) else [aud]
    return audience in audiences or claims.get("client_id") == audience
