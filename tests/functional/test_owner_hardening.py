"""Owner services as an attacker or a broken owner would use them (issue 28): a dripping owner is given up on
at the total deadline and rests while other owners are served, a control character in a stored callback host
is an unreachable owner (never a 500), and a rival cannot spend an owner's limits."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from herald.confirms.owners.wiring import registration_store
from herald.confirms.wiring import confirm_operations
from herald.container import current
from tests.functional.test_confirms_repair import api, clock, run_janitor
from tests.functional.test_owner_services import (
    RECEIVER,
    act,
    create,
    groups_key,
    owner,
    registered,
    status_of,
    user,
)
from tests.support.clock import FakeClock
from tests.support.lambda_context import FakeLambdaContext
from tests.support.owner import LoopbackOwner

__all__ = ["api", "clock", "groups_key", "owner", "registered"]
TOTAL_DEADLINE_S = 1.0  # HERALD_OWNER_CALL_TOTAL_MS in tests/conftest.py


@pytest.fixture
def chess_owner() -> Iterator[LoopbackOwner]:
    other = LoopbackOwner().start()
    yield other
    other.stop()


@pytest.fixture
def chess_key(api: TestClient, chess_owner: LoopbackOwner, service_keys: Any) -> dict[str, str]:
    key, _ = service_keys.create_key("chess", ["/internal/v1/confirms/owner"], app_codes=["lalu"])
    headers = {"Authorization": f"Bearer {key}"}
    response = api.put("/internal/v1/confirms/owners/chess_match", json=chess_owner.registration(), headers=headers)
    assert response.status_code == 200, response.text
    chess_owner.secret = response.json()["data"]["signing_secret"]
    return headers


def test_a_dripping_owner_gives_the_receiver_a_502_at_the_total_deadline(
    api: TestClient, owner: LoopbackOwner, groups_key: dict[str, str], registered: dict[str, Any]
) -> None:
    """Status line at once, then a byte every 0.3 s: every read is quick, the whole answer never comes in time."""
    confirm = create(api, groups_key, owner, "g-drip").json()["data"]
    owner.drip_s = 0.3
    owner.faults.append("drip")
    started = time.monotonic()
    response = act(api, confirm["confirm_id"], "accept")
    took = time.monotonic() - started
    assert response.status_code == 502 and response.json()["code"] == "UPSTREAM_ERROR", response.text
    assert took < TOTAL_DEADLINE_S + 1.5, f"the click was held {took:.1f} s"


def test_a_dripping_owner_rests_and_the_janitor_serves_other_owners_in_the_same_pass(
    api: TestClient,
    clock: FakeClock,
    owner: LoopbackOwner,
    groups_key: dict[str, str],
    registered: dict[str, Any],
    chess_owner: LoopbackOwner,
    chess_key: dict[str, str],
) -> None:
    rogue = [
        create(api, groups_key, owner, f"g-rogue-{n}", expire_at_ms=clock.now + 1_000 + n).json()["data"]
        for n in range(3)
    ]
    chess_owner.facts["c-fair"] = "pending"
    fair = api.post(
        "/internal/v1/confirms",
        json={
            "business_type": "chess_match",
            "business_subtype": "join",
            "business_id": "c-fair",
            "source_event_id": "evt-c-fair",
            "sender_user_id": "20001",
            "receiver_user_id": RECEIVER,
            "message_text": "A game?",
            "expire_at_ms": clock.now + 2_000,
        },
        headers=chess_key,
    ).json()["data"]
    owner.drip_s = 0.3
    owner.faults.extend(["drip"] * 3)
    clock.advance(2_001)
    started = time.monotonic()
    run_janitor()  # the rogue's first confirm costs one total deadline; its others are passed over
    took = time.monotonic() - started
    assert took < 2 * TOTAL_DEADLINE_S + 1.5, f"the pass took {took:.1f} s"
    assert len(owner.calls) == 1
    assert chess_owner.facts["c-fair"] == "expired"
    assert status_of(api, fair["confirm_id"]) == "expired"
    assert {status_of(api, c["confirm_id"]) for c in rogue} == {"pending"}  # none lost: still due

    owner.faults.clear()
    run_janitor()  # still resting: not asked again
    assert len(owner.calls) == 1
    repaired = confirm_operations(current()).repair("lalu", rogue[0]["confirm_id"])  # an operator asks it now
    assert len(owner.calls) == 2 and str(repaired.confirm.status) == "expired"
    clock.advance(60_000)
    run_janitor()  # the back-off ended and the owner answers: its confirms settle
    assert {status_of(api, c["confirm_id"]) for c in rogue} == {"expired"}


def test_a_janitor_without_time_for_another_owner_call_starts_none(
    api: TestClient, clock: FakeClock, owner: LoopbackOwner, groups_key: dict[str, str], registered: dict[str, Any]
) -> None:
    from tests.support.aws import load_function

    confirm = create(api, groups_key, owner, "g-late", expire_at_ms=clock.now + 1_000).json()["data"]
    clock.advance(1_001)
    out_of_time = FakeLambdaContext(remaining_ms=8_999)  # a provider call and its record need 9 s
    assert load_function("confirms_janitor").handler({"source": "aws.events"}, out_of_time) == {"settled": 0}
    assert owner.calls == []
    run_janitor()
    assert owner.facts["g-late"] == "expired" and status_of(api, confirm["confirm_id"]) == "expired"


def test_a_control_character_in_a_callback_host_is_refused_at_registration(
    api: TestClient, owner: LoopbackOwner, groups_key: dict[str, str]
) -> None:
    url = owner.url.replace("127.0.0.1", "127.0.0.1\u0000x") + "/cb"
    response = api.put(
        "/internal/v1/confirms/owners/group_join", json=owner.registration(callback_url=url), headers=groups_key
    )
    assert response.status_code == 400, response.text
    assert response.json()["data"]["reason"] == "forbidden_url"
    assert api.get("/internal/v1/confirms/owners", headers=groups_key).json()["data"]["items"] == []


def test_a_stored_callback_host_with_a_control_character_is_an_unreachable_owner_never_a_500(
    api: TestClient,
    clock: FakeClock,
    owner: LoopbackOwner,
    groups_key: dict[str, str],
    registered: dict[str, Any],
) -> None:
    """A registration stored before the rule (or by a bug) still cannot break a click, a read or the janitor."""
    confirm = create(api, groups_key, owner, "g-ctrl", expire_at_ms=clock.now + 60_000).json()["data"]
    expiring = create(api, groups_key, owner, "g-ctrl-2", expire_at_ms=clock.now + 1_000).json()["data"]
    store = registration_store(current())
    stored = store.get("lalu", "group_join")
    assert stored is not None
    bad = owner.url.replace("127.0.0.1", "127.0.0.1\u0000x")
    spec = stored.spec.__class__(
        callback_url=bad + "/cb", fact_url=bad + "/fact", subtypes=stored.spec.subtypes, buttons=stored.spec.buttons
    )
    store.replace(stored, stored.evolve(spec=spec, version=stored.version + 1))
    assert act(api, confirm["confirm_id"], "accept").status_code == 502
    clock.advance(1_001)
    batch = api.post(
        "/api/v1/message/action-confirms/status",
        json={"confirm_ids": [confirm["confirm_id"], expiring["confirm_id"]]},
        headers=user(RECEIVER),
    )
    assert batch.status_code == 200, batch.text
    listed = api.get("/api/v1/message/action-confirms", params={"peer_user_id": "20001"}, headers=user(RECEIVER))
    assert listed.status_code == 200, listed.text
    run_janitor()  # does not die: the confirm waits for its owner
    assert owner.calls == []


# ---------------------------------------------------------------------- who may act as an owner


def test_a_key_that_reads_deliveries_cannot_register_or_ask_or_cancel(
    api: TestClient, owner: LoopbackOwner, groups_key: dict[str, str], registered: dict[str, Any], service_keys: Any
) -> None:
    """`/internal/v1/confirms` (and `/internal/v1`) read deliveries; owner powers need the owner capability."""
    confirm = create(api, groups_key, owner, "g-read").json()["data"]
    for capability in ("/internal/v1/confirms", "/internal/v1"):
        key, _ = service_keys.create_key("support", [capability], app_codes=["lalu"])
        support = {"Authorization": f"Bearer {key}"}
        attempts = [
            api.put("/internal/v1/confirms/owners/phishing", json=owner.registration(), headers=support),
            api.post(
                "/internal/v1/confirms",
                json={
                    "business_type": "group_join",
                    "business_subtype": "join",
                    "business_id": "g-phish",
                    "source_event_id": "evt-phish",
                    "sender_user_id": "10001",
                    "receiver_user_id": RECEIVER,
                    "message_text": "Your account will be closed today",
                },
                headers=support,
            ),
            api.post(
                "/internal/v1/confirms/cancel",
                json={"business_type": "group_join", "business_id": "g-read"},
                headers=support,
            ),
            api.get("/internal/v1/confirms/owners", headers=support),
        ]
        assert [r.status_code for r in attempts] == [403, 403, 403, 403], [r.text for r in attempts]
        deliveries = api.get(f"/internal/v1/confirms/{confirm['confirm_id']}/deliveries", headers=support)
        assert deliveries.status_code == 200, deliveries.text
    assert status_of(api, confirm["confirm_id"]) == "pending"


@pytest.mark.parametrize(
    "text",
    [
        "Your account will be closed today. Verify at https://evil.example",
        "Verify at evil.example/login",
        "Write to support@evil.example",
        "Go to www.evil",
        "<a href=x>Verify</a>",
        "Click [here](x)",
        "two\nlines",
        "hidden\u202etxet",
    ],
)
def test_an_owners_text_is_plain_unless_its_registration_allows_links(
    api: TestClient, owner: LoopbackOwner, groups_key: dict[str, str], registered: dict[str, Any], text: str
) -> None:
    refused = create(api, groups_key, owner, "g-text", message_text=text)
    assert refused.status_code == 400, refused.text
    assert refused.json()["data"]["reason"] == "text_not_plain"


def test_an_owner_registered_with_links_may_send_a_link_but_never_markup(
    api: TestClient, owner: LoopbackOwner, groups_key: dict[str, str]
) -> None:
    registration = owner.registration(allow_links=True)
    assert api.put("/internal/v1/confirms/owners/group_join", json=registration, headers=groups_key).status_code == 200
    linked = create(api, groups_key, owner, "g-link", message_text="Details at https://groups.example/g-link")
    assert linked.status_code == 200, linked.text
    marked = create(api, groups_key, owner, "g-mark", message_text="<b>Join</b>")
    assert marked.status_code == 400 and marked.json()["data"]["reason"] == "text_not_plain"


@pytest.mark.parametrize("label", ["Verify at evil.example", "Open https://x.example", "Accept\u0000"])
def test_an_action_label_is_plain_text(
    api: TestClient, owner: LoopbackOwner, groups_key: dict[str, str], label: str
) -> None:
    actions = [{"action": "accept", "label": label, "style": "primary"}]
    response = api.put(
        "/internal/v1/confirms/owners/group_join", json=owner.registration(actions=actions), headers=groups_key
    )
    assert response.status_code == 400, response.text


# ---------------------------------------------------------------------- limits an owner spends


def limited_app(monkeypatch: pytest.MonkeyPatch, **limits: int) -> TestClient:
    from herald.api.app import create_app
    from tests.functional.test_abuse_limits import start_of_a_window
    from tests.support.container import reconfigure

    reconfigure(**{f"rate_limit_{name}_per_minute": value for name, value in limits.items()})
    start_of_a_window()
    return TestClient(create_app())


def test_a_rival_service_cannot_spend_an_owners_limit(
    owner: LoopbackOwner,
    groups_key: dict[str, str],
    service_keys: Any,
    pipeline: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    limited = limited_app(monkeypatch, owner=3)
    assert limited.put("/internal/v1/confirms/owners/group_join", json=owner.registration(), headers=groups_key)
    rival_key, _ = service_keys.create_key("rival", ["/internal/v1/confirms/owner"], app_codes=["lalu"])
    rival = {"Authorization": f"Bearer {rival_key}"}
    rival_statuses = [create(limited, rival, owner, f"g-rival-{n}").status_code for n in range(10)]
    assert rival_statuses == [404] * 10  # as if the type did not exist, and nothing counted
    own = [create(limited, groups_key, owner, f"g-own-{n}").status_code for n in range(4)]
    assert own == [200, 200, 200, 429]


def test_owner_services_may_ask_one_receiver_only_so_often(
    owner: LoopbackOwner, groups_key: dict[str, str], pipeline: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    limited = limited_app(monkeypatch, owner_receiver=2)
    assert limited.put("/internal/v1/confirms/owners/group_join", json=owner.registration(), headers=groups_key)
    statuses = [create(limited, groups_key, owner, f"g-flood-{n}").status_code for n in range(3)]
    assert statuses == [200, 200, 429]
    refused = create(limited, groups_key, owner, "g-flood-9")
    assert refused.json()["data"]["reason"] == "owner_receiver_rate_limited"
    other_receiver = create(limited, groups_key, owner, "g-other", receiver_user_id="20009")
    assert other_receiver.status_code == 200, other_receiver.text
