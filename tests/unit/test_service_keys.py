"""Service keys: hashed at rest, several per service, each with its own rights fixed at creation; listed,
rotated and revoked; a revoked or expired key is refused within the stated cache time."""

from __future__ import annotations

import pytest

from herald.auth.models import DeliveryScope
from herald.auth.service_keys import ServiceKeys, capability_allows, hash_secret
from herald.errors import InvalidArgument, PermissionDenied, Unauthorized
from tests.support.fakes import InMemoryServiceKeyStore


@pytest.fixture
def store() -> InMemoryServiceKeyStore:
    return InMemoryServiceKeyStore()


class Clock:
    def __init__(self) -> None:
        self.now = 1_000

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def keys(store: InMemoryServiceKeyStore, clock: Clock) -> ServiceKeys:
    return ServiceKeys(store, clock=clock)


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
    ["", "hk_", "hk_0123456789abcdef_" + "x" * 43, "Basic abc", "hk_zz_yy", "KEY\n"],
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


def test_a_new_key_for_a_service_never_widens_its_older_keys(keys: ServiceKeys) -> None:
    """Regression: `keys create` for an existing service took an old key from 403 to 200."""
    old, _ = keys.create_key("ops", ["/events/external"])
    keys.create_key("ops", ["/internal/v1/inbox"], app_codes=["lalu", "acme"])
    with pytest.raises(PermissionDenied):
        keys.authenticate(old, "/internal/v1/inbox/notifications")
    assert keys.authenticate(old, "/events/external").app_codes == frozenset({"lalu"})


def test_key_acts_only_for_its_tenants(keys: ServiceKeys) -> None:
    key, _ = keys.create_key("engine", ["/internal/v1/inbox"], app_codes=["acme"])
    caller = keys.authenticate(key, "/internal/v1/inbox/notifications")
    assert caller.tenant(None) == "acme" and caller.tenant("acme") == "acme"
    with pytest.raises(PermissionDenied):
        caller.tenant("lalu")


def test_key_of_several_tenants_must_name_one(keys: ServiceKeys) -> None:
    key, _ = keys.create_key("engine", ["/internal/v1/inbox"], app_codes=["acme", "lalu"])
    with pytest.raises(InvalidArgument):
        keys.authenticate(key, "/internal/v1/inbox").tenant(None)


def test_revocation_and_expiry_take_effect_within_the_cache_time(store: InMemoryServiceKeyStore, clock: Clock) -> None:
    keys = ServiceKeys(store, clock=clock, cache_ms=30_000)
    key, record = keys.create_key("scheduler", ["/events/external"], expires_at_ms=100_000)
    keys.authenticate(key, "/events/external")
    ServiceKeys(store, clock=clock).revoke(record.key_id)  # another process (the operator's CLI)
    assert keys.authenticate(key, "/events/external")  # still cached
    clock.now += 30_000
    with pytest.raises(Unauthorized):
        keys.authenticate(key, "/events/external")
    other, _ = keys.create_key("scheduler", ["/events/external"], expires_at_ms=clock.now + 10)
    keys.authenticate(other, "/events/external")
    clock.now += 10
    with pytest.raises(Unauthorized):
        keys.authenticate(other, "/events/external")  # expiry needs no fresh read


def test_cached_key_is_read_once_per_period_and_its_last_use_recorded(
    store: InMemoryServiceKeyStore, clock: Clock
) -> None:
    keys = ServiceKeys(store, clock=clock, cache_ms=30_000)
    key, record = keys.create_key("scheduler", ["/events/external"])
    for _ in range(5):
        keys.authenticate(key, "/events/external")
    assert store.reads == 1 and store.keys[record.key_id].last_used_at_ms == 1_000


def test_rotated_key_has_the_same_rights_and_the_old_one_works_until_revoked(keys: ServiceKeys, clock: Clock) -> None:
    old, old_record = keys.create_key("partner", ["/events/external"], app_codes=["acme"], targets=["chat_id:oc_1"])
    new, new_record = keys.rotate(old_record.key_id, revoke_old_in_ms=60_000)
    assert (new_record.capabilities, new_record.app_codes, new_record.targets) == (
        old_record.capabilities,
        old_record.app_codes,
        old_record.targets,
    )
    assert new_record.rotated_from == old_record.key_id
    assert keys.authenticate(new, "/events/external") and keys.authenticate(old, "/events/external")
    clock.now += 60_000
    with pytest.raises(Unauthorized):
        keys.authenticate(old, "/events/external")
    assert keys.authenticate(new, "/events/external").allowed_targets == frozenset({"chat_id:oc_1"})


def test_revoked_key_takes_its_targets_with_it(keys: ServiceKeys) -> None:
    _, first = keys.create_key("partner", ["/events/external"], targets=["chat_id:oc_1"])
    keys.create_key("partner", ["/events/external"], targets=["chat_id:oc_2"])
    assert keys.allowed_targets("partner") == frozenset({"chat_id:oc_1", "chat_id:oc_2"})
    keys.revoke(first.key_id)
    assert keys.allowed_targets("partner") == frozenset({"chat_id:oc_2"})


def test_a_services_events_are_delivered_for_the_one_tenant_its_live_keys_act_for_else_the_stacks(
    keys: ServiceKeys,
) -> None:
    _, acme = keys.create_key("partner", ["/events/external"], app_codes=["acme"], targets=["chat_id:oc_1"])
    assert keys.delivery_scope("partner") == DeliveryScope("acme", frozenset({"chat_id:oc_1"}))
    _, globex = keys.create_key("partner", ["/events/external"], app_codes=["globex"], targets=["chat_id:oc_2"])
    assert keys.delivery_scope("partner") == DeliveryScope("", frozenset({"chat_id:oc_1", "chat_id:oc_2"}))
    keys.revoke(acme.key_id)
    assert keys.delivery_scope("partner") == DeliveryScope("globex", frozenset({"chat_id:oc_2"}))
    keys.revoke(globex.key_id)
    assert keys.delivery_scope("partner") == DeliveryScope("", frozenset())


def test_keys_are_listed_per_service_without_secrets(keys: ServiceKeys) -> None:
    keys.create_key("a-service", ["/events/external"])
    keys.create_key("b-service", ["/events/external"])
    assert [k.service_id for k in keys.list_keys()] == ["a-service", "b-service"]
    assert [k.service_id for k in keys.list_keys("b-service")] == ["b-service"]


@pytest.mark.parametrize(
    ("service", "cap"), [("Bad Name", "/x"), ("ok", "events"), ("ok", "/"), ("ok", "/a b"), ("svc\n", "/x")]
)
def test_invalid_service_or_capability_is_refused_and_nothing_stored(
    keys: ServiceKeys, store: InMemoryServiceKeyStore, service: str, cap: str
) -> None:
    with pytest.raises(InvalidArgument):
        keys.create_key(service, [cap])
    assert not store.keys


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


@pytest.mark.parametrize("cache_ms", [0, 30_000])
def test_a_wrong_secret_for_a_real_key_id_records_no_use(
    store: InMemoryServiceKeyStore, clock: Clock, cache_ms: int
) -> None:
    keys = ServiceKeys(store, clock=clock, cache_ms=cache_ms)
    key, record = keys.create_key("scheduler", ["/events/external"])
    wrong = f"hk_{record.key_id}_{'A' * 43}"
    for _ in range(3):
        with pytest.raises(Unauthorized):
            keys.authenticate(wrong, "/events/external")
    assert store.keys[record.key_id].last_used_at_ms is None
    clock.now += 5
    keys.authenticate(key, "/events/external")  # the first real use is recorded, even inside the cache period
    assert store.keys[record.key_id].last_used_at_ms == 1_005


@pytest.mark.parametrize("rate", [0, -1, 3001])
def test_a_target_rate_outside_its_range_is_refused_and_nothing_stored(
    keys: ServiceKeys, store: InMemoryServiceKeyStore, rate: int
) -> None:
    with pytest.raises(InvalidArgument, match="1 to 3000"):
        keys.create_key("scheduler", ["/events/external"], targets=["chat_id:oc_1"], target_rate=rate)
    assert store.keys == {}


def test_a_keys_target_rate_is_its_callers_and_survives_rotation(keys: ServiceKeys) -> None:
    key, record = keys.create_key("scheduler", ["/events/external"], targets=["chat_id:oc_1"], target_rate=1200)
    assert keys.authenticate(key, "/events/external").target_rate == 1200
    rotated, _ = keys.rotate(record.key_id)
    assert keys.authenticate(rotated, "/events/external").target_rate == 1200
    plain, _ = keys.create_key("scheduler", ["/events/external"])
    assert keys.authenticate(plain, "/events/external").target_rate is None


def test_a_keys_event_order_is_its_callers_survives_rotation_and_an_unknown_order_is_refused(
    keys: ServiceKeys, store: InMemoryServiceKeyStore
) -> None:
    key, record = keys.create_key("progress", ["/events/external"], targets=["chat_id:oc_1"], order="target")
    assert record.order == "target" and keys.authenticate(key, "/events/external").orders_by_target
    rotated, _ = keys.rotate(record.key_id)
    assert keys.authenticate(rotated, "/events/external").orders_by_target
    plain, _ = keys.create_key("scheduler", ["/events/external"])
    assert not keys.authenticate(plain, "/events/external").orders_by_target
    stored = len(store.keys)
    with pytest.raises(InvalidArgument, match="service, target"):
        keys.create_key("scheduler", ["/events/external"], order="chat")
    assert len(store.keys) == stored
