"""Service keys: hashed at rest, several per service, capabilities by route prefix."""

from __future__ import annotations

import pytest

from herald.auth.service_keys import ServiceKeys, capability_allows, hash_secret
from herald.errors import InvalidArgument, PermissionDenied, Unauthorized
from tests.support.fakes import InMemoryServiceKeyStore


@pytest.fixture
def store() -> InMemoryServiceKeyStore:
    return InMemoryServiceKeyStore()


@pytest.fixture
def keys(store: InMemoryServiceKeyStore) -> ServiceKeys:
    return ServiceKeys(store, clock=lambda: 1_000)


def test_created_key_authenticates_for_its_capability(keys: ServiceKeys) -> None:
    key, _ = keys.create_key("scheduler", ["/events/external"])
    caller = keys.authenticate(key, "/events/external")
    assert (caller.service_id, caller.capabilities) == ("scheduler", frozenset({"/events/external"}))


def test_only_the_secret_hash_is_stored(keys: ServiceKeys, store: InMemoryServiceKeyStore) -> None:
    key, record = keys.create_key("scheduler", ["/events/external"])
    secret = key.split("_", 2)[2]
    stored = store.keys[record.key_id]
    assert secret not in repr(stored)
    assert stored.secret_hash == hash_secret(secret)


def test_several_keys_per_service_all_work(keys: ServiceKeys) -> None:
    first, _ = keys.create_key("engine", ["/internal/v1/sessions"])
    second, _ = keys.create_key("engine", ["/internal/v1/sessions"])
    assert first != second
    assert (
        keys.authenticate(first, "/internal/v1/sessions/s1").key_id
        != keys.authenticate(second, "/internal/v1/sessions/s1").key_id
    )


def test_key_outside_its_capabilities_is_forbidden(keys: ServiceKeys) -> None:
    key, _ = keys.create_key("scheduler", ["/events/external"])
    with pytest.raises(PermissionDenied):
        keys.authenticate(key, "/internal/v1/inbox/notifications")


@pytest.mark.parametrize(
    "presented",
    ["", "hk_", "hk_0123456789abcdef_" + "x" * 43, "Basic abc", "hk_zz_yy"],
)
def test_unknown_or_malformed_keys_are_unauthorized(keys: ServiceKeys, presented: str) -> None:
    keys.create_key("scheduler", ["/events/external"])
    with pytest.raises(Unauthorized):
        keys.authenticate(presented, "/events/external")


def test_known_key_id_with_wrong_secret_is_unauthorized(keys: ServiceKeys) -> None:
    key, _ = keys.create_key("scheduler", ["/events/external"])
    forged = key[:-4] + ("AAAA" if not key.endswith("AAAA") else "BBBB")
    with pytest.raises(Unauthorized):
        keys.authenticate(forged, "/events/external")


def test_revoked_key_is_unauthorized(keys: ServiceKeys, store: InMemoryServiceKeyStore) -> None:
    from dataclasses import replace

    key, record = keys.create_key("scheduler", ["/events/external"])
    store.keys[record.key_id] = replace(record, revoked_at_ms=500)
    with pytest.raises(Unauthorized):
        keys.authenticate(key, "/events/external")


def test_new_key_widens_the_services_capabilities(keys: ServiceKeys, store: InMemoryServiceKeyStore) -> None:
    keys.create_key("ops", ["/events/external"])
    keys.create_key("ops", ["/internal/v1/inbox"])
    assert store.services["ops"].capabilities == frozenset({"/events/external", "/internal/v1/inbox"})


@pytest.mark.parametrize(("service", "cap"), [("Bad Name", "/x"), ("ok", "events"), ("ok", "/"), ("ok", "/a b")])
def test_invalid_service_or_capability_is_refused_and_nothing_stored(
    keys: ServiceKeys, store: InMemoryServiceKeyStore, service: str, cap: str
) -> None:
    with pytest.raises(InvalidArgument):
        keys.create_key(service, [cap])
    assert not store.keys and not store.services


@pytest.mark.parametrize(
    ("path", "allowed"),
    [
        ("/events/external", True),
        ("/events/external/", True),
        ("/events/external/x", True),
        ("/events/externalx", False),
        ("/events", False),
        ("/internal/v1/inbox", False),
    ],
)
def test_capability_is_a_path_prefix_on_segment_boundaries(path: str, allowed: bool) -> None:
    assert capability_allows(frozenset({"/events/external"}), path) is allowed
