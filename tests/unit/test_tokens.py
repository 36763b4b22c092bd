"""JWT verification refuses every token that is not a live, correctly signed Herald token."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from herald.auth.tokens import JwtVerifier, principal_from_claims
from herald.errors import Unauthorized
from herald.settings import Settings, get_settings
from herald_dev.fakes.jwks import FakeJwks
from tests.support.tokens import make_token, unsigned_token


@pytest.fixture
def verifier() -> JwtVerifier:
    return JwtVerifier(get_settings())


@pytest.fixture
def jwks() -> Iterator[FakeJwks]:
    fake = FakeJwks().start()
    yield fake
    fake.stop()


def _jwks_verifier(fake: FakeJwks, monkeypatch: pytest.MonkeyPatch) -> JwtVerifier:
    monkeypatch.delenv("HERALD_JWT_HS256_SECRET")
    monkeypatch.setenv("HERALD_JWT_JWKS_URL", fake.url)
    monkeypatch.setenv("HERALD_JWT_ISSUER", fake.issuer)
    monkeypatch.setenv("HERALD_JWT_AUDIENCE", fake.audience)
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
        pytest.param(make_token(app_code=7), id="tenant-not-a-string"),
    ],
)
def test_refused_tokens_are_unauthorized(verifier: JwtVerifier, token: str) -> None:
    with pytest.raises(Unauthorized):
        verifier.verify(token)


def test_token_without_expiry_is_refused(verifier: JwtVerifier) -> None:
    import jwt

    from herald_dev.cloud import LOCAL_JWT_SECRET

    token = jwt.encode({"sub": "10002", "app_code": "lalu"}, LOCAL_JWT_SECRET, algorithm="HS256")
    with pytest.raises(Unauthorized):
        verifier.verify(token)


def test_jwks_signed_token_is_accepted_and_the_key_set_fetched_once(
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
def test_jwks_token_for_another_issuer_or_audience_is_refused(
    jwks: FakeJwks, monkeypatch: pytest.MonkeyPatch, claims: dict[str, str], expected_refusal: str
) -> None:
    verifier = _jwks_verifier(jwks, monkeypatch)
    with pytest.raises(Unauthorized):
        verifier.verify(jwks.sign({"sub": "10002", **claims}))


def test_hs256_token_is_refused_when_only_jwks_is_configured(jwks: FakeJwks, monkeypatch: pytest.MonkeyPatch) -> None:
    verifier = _jwks_verifier(jwks, monkeypatch)
    with pytest.raises(Unauthorized):
        verifier.verify(make_token())


def test_authorizer_claims_with_flattened_roles_are_read() -> None:
    principal = principal_from_claims({"sub": "10002", "app_code": "lalu", "roles": "[admin developer]"}, None)
    assert principal.roles == frozenset({"admin", "developer"})


def test_es256_header_naming_an_rsa_key_is_unauthorized_not_a_crash(
    jwks: FakeJwks, monkeypatch: pytest.MonkeyPatch
) -> None:
    verifier = _jwks_verifier(jwks, monkeypatch)
    token = jwks.sign({"sub": "10002", "app_code": "lalu"}, algorithm="ES256", kid=jwks.key_id)
    with pytest.raises(Unauthorized, match="algorithm"):
        verifier.verify(token)


def test_es256_token_signed_by_an_ec_key_of_the_key_set_is_accepted(
    jwks: FakeJwks, monkeypatch: pytest.MonkeyPatch
) -> None:
    verifier = _jwks_verifier(jwks, monkeypatch)
    assert verifier.verify(jwks.sign({"sub": "10002", "app_code": "lalu"}, algorithm="ES256")).user_id == "10002"


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
