"""JWT verification refuses every token that is not a live, correctly signed Herald token; with an identity
provider it applies the rules of API Gateway's JWT authorizer (one policy), to tokens shaped like Cognito's,
Auth0's and Keycloak's."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from herald.auth.tokens import JwtVerifier, principal_from_claims
from herald.container import current
from herald.errors import Unauthorized
from herald.settings import Settings
from herald_dev.fakes.jwks import FakeJwks
from tests.support.tokens import make_token, unsigned_token


@pytest.fixture
def verifier() -> JwtVerifier:
    return JwtVerifier(current().settings)


@pytest.fixture
def jwks() -> Iterator[FakeJwks]:
    fake = FakeJwks().start()
    yield fake
    fake.stop()


def _jwks_verifier(fake: FakeJwks, monkeypatch: pytest.MonkeyPatch, **env: str) -> JwtVerifier:
    """The verifier as deployed: the issuer and audience the authorizer reads, keys by discovery."""
    monkeypatch.delenv("HERALD_JWT_HS256_SECRET")
    monkeypatch.setenv("HERALD_JWT_ISSUER", fake.issuer)
    monkeypatch.setenv("HERALD_JWT_AUDIENCE", fake.audience)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return JwtVerifier(Settings.from_env())


def test_valid_token_yields_its_subject_and_tenant(verifier: JwtVerifier) -> None:
    principal = verifier.verify(make_token("10002", "lalu", roles=["admin"]))
    assert (principal.user_id, principal.app_code, principal.roles) == ("10002", "lalu", frozenset({"admin"}))


def test_token_without_app_code_is_refused_unless_a_default_tenant_is_configured(
    verifier: JwtVerifier, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(Unauthorized):
        verifier.verify(make_token("7", app_code=""))
    monkeypatch.setenv("HERALD_JWT_DEFAULT_APP_CODE", "acme")
    assert JwtVerifier(Settings.from_env()).verify(make_token("7", app_code="")).app_code == "acme"


def test_token_living_longer_than_the_maximum_lifetime_is_refused(verifier: JwtVerifier) -> None:
    with pytest.raises(Unauthorized, match="longer"):
        verifier.verify(make_token(ttl=100 * 365 * 86_400))
    assert verifier.verify(make_token(ttl=86_000)).user_id == "10002"


@pytest.mark.parametrize(
    "token",
    [
        pytest.param(make_token(ttl=-3600), id="expired"),
        pytest.param(make_token(secret="another-secret-of-enough-length-xx"), id="wrong-signature"),
        pytest.param(unsigned_token(), id="alg-none"),
        pytest.param("not-a-jwt", id="garbage"),
        pytest.param(make_token(user_id=""), id="no-subject"),
        pytest.param(make_token(user_id="a b/c"), id="malformed-subject"),
        pytest.param(make_token(app_code="LALU; drop"), id="malformed-tenant"),
        pytest.param(make_token(user_id="10002\n"), id="subject-with-trailing-newline"),
        pytest.param(make_token(app_code="lalu\n"), id="tenant-with-trailing-newline"),
        pytest.param(make_token(app_code=7), id="tenant-not-a-string"),  # type: ignore[arg-type]
    ],
)
def test_refused_tokens_are_unauthorized(verifier: JwtVerifier, token: str) -> None:
    with pytest.raises(Unauthorized):
        verifier.verify(token)


def test_token_without_expiry_is_refused(verifier: JwtVerifier) -> None:
    import jwt

    from herald_dev.local_identity import LOCAL_JWT_SECRET

    token = jwt.encode({"sub": "10002", "app_code": "lalu"}, LOCAL_JWT_SECRET, algorithm="HS256")
    with pytest.raises(Unauthorized):
        verifier.verify(token)


def test_provider_signed_token_is_accepted_and_the_key_set_fetched_once(
    jwks: FakeJwks, monkeypatch: pytest.MonkeyPatch
) -> None:
    verifier = _jwks_verifier(jwks, monkeypatch)
    for _ in range(3):
        assert verifier.verify(jwks.sign({"sub": "10002", "app_code": "lalu"})).user_id == "10002"
    assert jwks.requests == 1


@pytest.mark.parametrize(
    ("claims", "expected_refusal"),
    [
        ({"iss": "https://evil.test/"}, "issuer"),
        ({"aud": "someone-else"}, "audience"),
    ],
)
def test_provider_token_for_another_issuer_or_audience_is_refused(
    jwks: FakeJwks, monkeypatch: pytest.MonkeyPatch, claims: dict[str, str], expected_refusal: str
) -> None:
    verifier = _jwks_verifier(jwks, monkeypatch)
    with pytest.raises(Unauthorized):
        verifier.verify(jwks.sign({"sub": "10002", **claims}))


def test_hs256_token_is_refused_when_an_identity_provider_is_configured(
    jwks: FakeJwks, monkeypatch: pytest.MonkeyPatch
) -> None:
    verifier = _jwks_verifier(jwks, monkeypatch)
    with pytest.raises(Unauthorized):
        verifier.verify(make_token())


def test_authorizer_claims_with_flattened_roles_are_read() -> None:
    claims = {"sub": "10002", "app_code": "lalu", "roles": "[admin developer]", "exp": str(int(time.time()) + 60)}
    principal = principal_from_claims(claims, current().settings)
    assert principal.roles == frozenset({"admin", "developer"})


def test_authorizer_claims_are_held_to_the_same_lifetime_and_tenant_rules() -> None:
    """API Gateway verified the signature; the function still applies Herald's own rules to its claims."""
    now = int(time.time())
    with pytest.raises(Unauthorized, match="longer"):
        principal_from_claims({"sub": "10002", "app_code": "lalu", "exp": str(now + 10 * 86_400)}, current().settings)
    with pytest.raises(Unauthorized, match="app_code"):
        principal_from_claims({"sub": "10002", "exp": str(now + 60)}, current().settings)


def test_es256_header_naming_an_rsa_key_is_unauthorized_not_a_crash(
    jwks: FakeJwks, monkeypatch: pytest.MonkeyPatch
) -> None:
    verifier = _jwks_verifier(jwks, monkeypatch)
    token = jwks.sign({"sub": "10002", "app_code": "lalu"}, algorithm="ES256", kid=jwks.key_id)
    with pytest.raises(Unauthorized, match="algorithm"):
        verifier.verify(token)


def test_es256_token_is_refused_because_the_authorizer_verifies_rsa_only(
    jwks: FakeJwks, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: the function accepted ES256 tokens the HTTP API's authorizer refuses (HTTP 401, WebSocket 200)."""
    verifier = _jwks_verifier(jwks, monkeypatch)
    with pytest.raises(Unauthorized, match="algorithm"):
        verifier.verify(jwks.sign({"sub": "10002", "app_code": "lalu"}, algorithm="ES256"))


def test_jwks_token_without_kid_is_refused(jwks: FakeJwks, monkeypatch: pytest.MonkeyPatch) -> None:
    verifier = _jwks_verifier(jwks, monkeypatch)
    with pytest.raises(Unauthorized, match="kid"):
        verifier.verify(jwks.sign({"sub": "10002", "app_code": "lalu"}, kid=None))


def test_jwks_token_without_issuer_or_audience_claim_is_refused(
    jwks: FakeJwks, monkeypatch: pytest.MonkeyPatch
) -> None:
    verifier = _jwks_verifier(jwks, monkeypatch)
    for missing in ("iss", "aud"):
        token = jwks.sign({"sub": "10002", "app_code": "lalu"})
        import jwt as pyjwt

        claims = pyjwt.decode(token, options={"verify_signature": False})
        claims.pop(missing)
        with pytest.raises(Unauthorized):
            verifier.verify(pyjwt.encode(claims, jwks._private, algorithm="RS256", headers={"kid": jwks.key_id}))


# ------------------------------------------------------------------ tokens shaped like real identity providers
def test_cognito_access_token_with_client_id_and_no_aud_is_accepted(
    jwks: FakeJwks, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: the authorizer accepts `client_id` without `aud`; the function required `aud`."""
    verifier = _jwks_verifier(jwks, monkeypatch, HERALD_JWT_DEFAULT_APP_CODE="lalu")
    claims = {"sub": "3f1c2b6e-0d4a-4c8e-9b1a-7e2f5d9c0a11", "client_id": jwks.audience, "token_use": "access"}
    assert verifier.verify(_strip_aud(jwks.sign(claims), jwks)).user_id == claims["sub"]


def test_cognito_id_token_names_its_tenant_in_a_custom_attribute(
    jwks: FakeJwks, monkeypatch: pytest.MonkeyPatch
) -> None:
    verifier = _jwks_verifier(jwks, monkeypatch, HERALD_JWT_APP_CODE_CLAIM="custom:app_code")
    token = jwks.sign({"sub": "3f1c2b6e-0d4a", "custom:app_code": "acme", "token_use": "id"})
    assert verifier.verify(token).app_code == "acme"


def test_auth0_token_with_an_audience_list_and_a_namespaced_tenant_claim_is_accepted(
    jwks: FakeJwks, monkeypatch: pytest.MonkeyPatch
) -> None:
    verifier = _jwks_verifier(jwks, monkeypatch, HERALD_JWT_APP_CODE_CLAIM="https://herald.example/app_code")
    claims = {
        "sub": "google-oauth2|108204268033311374519",
        "aud": [jwks.audience, "https://tenant.auth0.com/userinfo"],
        "https://herald.example/app_code": "lalu",
        "azp": "spa-client",
    }
    assert verifier.verify(jwks.sign(claims)).user_id == "google-oauth2|108204268033311374519"


def test_keycloak_token_with_azp_and_an_audience_list_is_accepted(
    jwks: FakeJwks, monkeypatch: pytest.MonkeyPatch
) -> None:
    verifier = _jwks_verifier(jwks, monkeypatch)
    claims = {"sub": "0b6ad4b4-9f0e-4d4e", "aud": ["account", jwks.audience], "azp": "herald-app", "app_code": "lalu"}
    assert verifier.verify(jwks.sign(claims, algorithm="RS384")).app_code == "lalu"


def test_token_whose_client_id_and_aud_are_both_someone_elses_is_refused(
    jwks: FakeJwks, monkeypatch: pytest.MonkeyPatch
) -> None:
    verifier = _jwks_verifier(jwks, monkeypatch)
    with pytest.raises(Unauthorized, match="audience"):
        verifier.verify(_strip_aud(jwks.sign({"sub": "u1", "app_code": "lalu", "client_id": "other-app"}), jwks))


def _strip_aud(token: str, fake: FakeJwks) -> str:
    """The same token re-signed without `aud` (as Cognito issues access tokens)."""
    import jwt as pyjwt

    claims = pyjwt.decode(token, options={"verify_signature": False})
    claims.pop("aud", None)
    return pyjwt.encode(claims, fake._private, algorithm="RS256", headers={"kid": fake.key_id})
