"""Confirms for any owner service, on moto: a loopback owner (tests/support/owner.py) registers a business
type, asks for confirms, and is called back, signed, when the receiver acts; the owner stays the truth."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from herald.auth.service_keys import ServiceKeys
from herald.confirms.owners.callbacks import command_webhook_id
from herald_dev.fakes.tencent_im import FakeTencentIm
from tests.functional.test_abuse_limits import start_of_a_window
from tests.functional.test_confirms_repair import LEASE_MS, api, clock, run_janitor
from tests.support.clock import FakeClock
from tests.support.container import reconfigure
from tests.support.owner import LoopbackOwner
from tests.support.pipeline import ConfirmPipeline
from tests.support.tokens import make_token

__all__ = ["api", "clock"]  # the lease-shortened app of test_confirms_repair, and its clock
SENDER, RECEIVER, STRANGER = "20001", "20002", "20003"


@pytest.fixture
def owner() -> Iterator[LoopbackOwner]:
    owner = LoopbackOwner().start()
    yield owner
    owner.stop()


@pytest.fixture
def groups_key(service_keys: ServiceKeys) -> dict[str, str]:
    key, _ = service_keys.create_key("groups", ["/internal/v1/confirms/owner"], app_codes=["lalu"])
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def registered(api: TestClient, owner: LoopbackOwner, groups_key: dict[str, str], clock: FakeClock) -> dict[str, Any]:
    response = api.put("/internal/v1/confirms/owners/group_join", json=owner.registration(), headers=groups_key)
    assert response.status_code == 200, response.text
    owner.secret = response.json()["data"]["signing_secret"]
    return response.json()["data"]["registration"]  # type: ignore[no-any-return]


def user(user_id: str, app_code: str = "lalu") -> dict[str, str]:
    return {"Authorization": f"Bearer {make_token(user_id, app_code)}"}


def ask(business_id: str, source_event_id: str = "", **fields: Any) -> dict[str, Any]:
    return {
        "business_type": "group_join",
        "business_subtype": "join",
        "business_id": business_id,
        "source_event_id": source_event_id or f"evt-{business_id}",
        "sender_user_id": SENDER,
        "receiver_user_id": RECEIVER,
        "message_text": f"User {SENDER} asks to join group {business_id}",
        "payload": {"group_name": "Night owls"},
        **fields,
    }


def create(api: TestClient, key: dict[str, str], owner: LoopbackOwner, business_id: str, **fields: Any) -> Any:
    owner.facts[business_id] = "pending"
    return api.post("/internal/v1/confirms", json=ask(business_id, **fields), headers=key)


def act(api: TestClient, confirm_id: str, action: str, command_id: str = "tap-1", who: str = RECEIVER) -> Any:
    return api.post(
        f"/api/v1/message/action-confirms/{confirm_id}/{action}", json={"command_id": command_id}, headers=user(who)
    )


def pushes(fake_im: FakeTencentIm, confirm_id: str) -> list[dict[str, Any]]:
    return [m["data"] for m in fake_im.messages if m["data"]["confirm_id"] == confirm_id]


def status_of(api: TestClient, confirm_id: str) -> str:
    """The confirm's status as its receiver reads it (a read settles it, as the app's reads do)."""
    body = {"confirm_ids": [confirm_id]}
    (item,) = api.post("/api/v1/message/action-confirms/status", json=body, headers=user(RECEIVER)).json()["data"][
        "items"
    ]
    return str(item["status"])


# ---------------------------------------------------------------------- registration
def test_a_registration_shows_its_secret_once_and_belongs_to_the_service_that_made_it(
    api: TestClient, owner: LoopbackOwner, groups_key: dict[str, str], service_keys: ServiceKeys
) -> None:
    first = api.put("/internal/v1/confirms/owners/group_join", json=owner.registration(), headers=groups_key)
    assert first.status_code == 200, first.text
    secret = first.json()["data"]["signing_secret"]
    assert secret.startswith("whsec_")
    changed = api.put(
        "/internal/v1/confirms/owners/group_join",
        json=owner.registration(subtypes=["join", "invite"], default_expiry_seconds=3600),
        headers=groups_key,
    )
    assert changed.status_code == 200 and changed.json()["data"]["signing_secret"] is None
    assert changed.json()["data"]["registration"]["subtypes"] == ["invite", "join"]
    listed = api.get("/internal/v1/confirms/owners", headers=groups_key)
    assert [r["business_type"] for r in listed.json()["data"]["items"]] == ["group_join"]
    assert secret not in listed.text and "whsec_" not in listed.text

    other, _ = service_keys.create_key("chess", ["/internal/v1/confirms/owner"], app_codes=["lalu"])
    taken = api.put(
        "/internal/v1/confirms/owners/group_join",
        json=owner.registration(),
        headers={"Authorization": f"Bearer {other}"},
    )
    assert taken.status_code == 409 and taken.json()["data"]["reason"] == "business_type_taken"
    built_in = api.put("/internal/v1/confirms/owners/role_invitation", json=owner.registration(), headers=groups_key)
    assert built_in.status_code == 409 and built_in.json()["data"]["reason"] == "business_type_taken"
    theirs = api.get("/internal/v1/confirms/owners", headers={"Authorization": f"Bearer {other}"})
    assert theirs.json()["data"]["items"] == []
    rotate = api.post(
        "/internal/v1/confirms/owners/group_join/rotate-secret", json={}, headers={"Authorization": f"Bearer {other}"}
    )
    assert rotate.status_code == 404  # another service's registration is as absent as a missing one


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("callback_url", "ftp://127.0.0.1/x"),
        ("callback_url", "http://user:pw@127.0.0.1/x"),
        ("fact_url", "not a url"),
        ("subtypes", []),
        ("subtypes", ["Has Space"]),
        ("actions", [{"action": "accept", "label": "OK", "style": "neon"}]),
        ("actions", [{"action": "approve", "label": "OK", "style": "primary"}]),
        ("actions", [{"action": "accept", "label": "A", "style": "primary"}] * 2),
        ("default_expiry_seconds", 10),
        ("default_expiry_seconds", "3600"),
    ],
)
def test_a_bad_registration_is_a_400_and_registers_nothing(
    api: TestClient, owner: LoopbackOwner, groups_key: dict[str, str], field: str, value: Any
) -> None:
    response = api.put(
        "/internal/v1/confirms/owners/group_join", json=owner.registration(**{field: value}), headers=groups_key
    )
    assert response.status_code == 400, response.text
    assert api.get("/internal/v1/confirms/owners", headers=groups_key).json()["data"]["items"] == []


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com/cb",  # not https
        "https://127.0.0.1/cb",  # loopback
        "https://10.1.2.3/cb",  # private
        "https://169.254.169.254/latest/meta-data/",  # the instance metadata service
        "https://[fd00:ec2::254]/cb",  # its IPv6 address
        "https://[::ffff:192.168.0.1]/cb",  # a private address in IPv6 clothing
        "https://localhost/cb",  # a name that resolves to loopback
    ],
)
def test_in_aws_a_callback_must_be_https_to_a_public_address(
    owner: LoopbackOwner,
    groups_key: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    pipeline: ConfirmPipeline,
    url: str,
) -> None:
    from herald.api.app import create_app

    reconfigure(owner_callbacks_https_only=True, owner_callbacks_allow_private=False)
    strict = TestClient(create_app())
    response = strict.put(
        "/internal/v1/confirms/owners/group_join", json=owner.registration(callback_url=url), headers=groups_key
    )
    assert response.status_code == 400, response.text
    assert response.json()["data"]["reason"] == "forbidden_url"


def test_a_registration_whose_host_turned_private_is_not_called(
    api: TestClient,
    owner: LoopbackOwner,
    groups_key: dict[str, str],
    registered: dict[str, Any],
    pipeline: ConfirmPipeline,
    fake_im: FakeTencentIm,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The address is checked at every call, not only at registration (a name can resolve elsewhere later)."""
    confirm = create(api, groups_key, owner, "g-ssrf").json()["data"]
    reconfigure(owner_callbacks_allow_private=False)
    from herald.api.app import create_app

    strict = TestClient(create_app())
    response = strict.post(
        f"/api/v1/message/action-confirms/{confirm['confirm_id']}/accept",
        json={"command_id": "tap-1"},
        headers=user(RECEIVER),
    )
    assert response.status_code == 502, response.text
    assert [c for c in owner.calls if c.method == "POST"] == []


# ---------------------------------------------------------------------- creating and acting
def test_an_owner_confirm_is_created_once_pushed_once_and_accepted_through_a_signed_callback(
    api: TestClient,
    owner: LoopbackOwner,
    groups_key: dict[str, str],
    registered: dict[str, Any],
    pipeline: ConfirmPipeline,
    fake_im: FakeTencentIm,
) -> None:
    answers = [create(api, groups_key, owner, "g-1") for _ in range(3)]  # the owner retries its request
    assert {a.status_code for a in answers} == {200}, answers[0].text
    confirm = answers[0].json()["data"]
    assert {a.json()["data"]["confirm_id"] for a in answers} == {confirm["confirm_id"]}
    assert (confirm["business_type"], confirm["business_id"], confirm["status"]) == ("group_join", "g-1", "pending")
    pipeline.drain()
    (push,) = pushes(fake_im, confirm["confirm_id"])
    assert push["type"] == "im_confirm" and push["msg"] == f"User {SENDER} asks to join group g-1"
    assert push["actions"] == registered["actions"]

    assert act(api, confirm["confirm_id"], "accept", who=SENDER).status_code == 403  # only the receiver
    accepted = act(api, confirm["confirm_id"], "accept", command_id="tap.1")
    assert accepted.status_code == 200 and accepted.json()["data"]["status"] == "accepted", accepted.text
    again = act(api, confirm["confirm_id"], "accept", command_id="tap.2")  # a second tap
    assert again.json()["data"] == accepted.json()["data"]
    assert act(api, confirm["confirm_id"], "reject").json()["data"]["reason"] == "accepted"

    (call,) = [c for c in owner.calls if c.method == "POST"]  # one business effect
    assert call.verified
    assert call.headers["webhook-id"] == command_webhook_id(confirm["confirm_id"], "tap.1")
    assert "." not in call.headers["webhook-id"]
    assert call.body is not None
    assert call.body["type"] == "confirm.action" and call.body["action"] == "accept"
    assert call.body["acting_user_id"] == RECEIVER and call.body["command_id"] == "tap.1"
    assert call.body["confirm"]["payload"] == {"group_name": "Night owls"}
    assert owner.facts["g-1"] == "accepted"
    pipeline.drain()
    assert [p["type"] for p in pushes(fake_im, confirm["confirm_id"])] == ["im_confirm", "im_confirm_update"]


def test_one_business_id_has_one_confirm_and_one_source_event_one_business_id(
    api: TestClient, owner: LoopbackOwner, groups_key: dict[str, str], registered: dict[str, Any]
) -> None:
    assert create(api, groups_key, owner, "g-2").status_code == 200
    second = create(api, groups_key, owner, "g-2", source_event_id="another-event")
    assert second.status_code == 409 and second.json()["data"]["reason"] == "business_id_taken"
    reused = create(api, groups_key, owner, "g-3", source_event_id="evt-g-2")
    assert reused.status_code == 409 and reused.json()["data"]["reason"] == "source_event_id_reused"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("business_subtype", "invite"),  # not registered
        ("business_id", "has space"),
        ("receiver_user_id", SENDER),
        ("receiver_user_id", "abc"),
        ("actions", ["approve"]),
        ("message_text", ""),
        ("expire_at_ms", 1),
        ("expire_at_ms", "1999999999999"),
        ("payload", {"deep": {"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": {"i": {"j": {}}}}}}}}}}}}),
    ],
)
def test_a_bad_owner_confirm_is_a_400_and_creates_nothing(
    api: TestClient,
    owner: LoopbackOwner,
    groups_key: dict[str, str],
    registered: dict[str, Any],
    pipeline: ConfirmPipeline,
    fake_im: FakeTencentIm,
    field: str,
    value: Any,
) -> None:
    response = api.post("/internal/v1/confirms", json={**ask("g-bad"), field: value}, headers=groups_key)
    assert response.status_code == 400, response.text
    assert create(api, groups_key, owner, "g-bad", source_event_id="evt-good").status_code == 200  # id still free
    pipeline.drain()
    assert len(fake_im.messages) == 1


def test_an_owner_may_offer_one_action_with_its_own_label(
    api: TestClient,
    owner: LoopbackOwner,
    groups_key: dict[str, str],
    registered: dict[str, Any],
    pipeline: ConfirmPipeline,
    fake_im: FakeTencentIm,
) -> None:
    api.put(
        "/internal/v1/confirms/owners/group_join",
        json=owner.registration(actions=[{"action": "accept", "label": "Got it", "style": "primary"}]),
        headers=groups_key,
    )
    confirm = create(api, groups_key, owner, "g-ack").json()["data"]
    pipeline.drain()
    (push,) = pushes(fake_im, confirm["confirm_id"])
    assert push["actions"] == [{"action": "accept", "label": "Got it", "style": "primary"}]
    refused = act(api, confirm["confirm_id"], "reject")
    assert refused.status_code == 409 and refused.json()["data"]["reason"] == "action_not_offered"
    assert [c for c in owner.calls if c.method == "POST"] == []


def test_an_owner_refusal_reaches_the_client_as_its_named_reason(
    api: TestClient,
    owner: LoopbackOwner,
    groups_key: dict[str, str],
    registered: dict[str, Any],
    pipeline: ConfirmPipeline,
    fake_im: FakeTencentIm,
) -> None:
    confirm = create(api, groups_key, owner, "g-full").json()["data"]
    owner.faults.append("refuse:group_full")
    refused = act(api, confirm["confirm_id"], "accept")
    assert refused.status_code == 409, refused.text
    assert refused.json()["data"]["reason"] == "group_full"
    assert act(api, confirm["confirm_id"], "accept", command_id="tap-2").json()["data"]["reason"] == "group_full"
    assert status_of(api, confirm["confirm_id"]) == "failed"
    pipeline.drain()
    assert [p["status"] for p in pushes(fake_im, confirm["confirm_id"])] == ["pending", "failed"]


def test_an_owner_5xx_is_a_502_and_the_janitor_repairs_the_confirm_from_the_owners_fact(
    api: TestClient, owner: LoopbackOwner, groups_key: dict[str, str], registered: dict[str, Any], clock: FakeClock
) -> None:
    confirm = create(api, groups_key, owner, "g-down").json()["data"]
    owner.faults.append("500")
    failed = act(api, confirm["confirm_id"], "accept")
    assert failed.status_code == 502 and failed.json()["code"] == "UPSTREAM_ERROR", failed.text
    busy = act(api, confirm["confirm_id"], "accept", command_id="tap-2")
    assert busy.status_code == 409 and busy.json()["data"]["reason"] == "processing"  # the lease holds

    clock.advance(LEASE_MS + 1)
    run_janitor()  # asks the owner's fact (still pending), then carries out the same command again
    assert [c.method for c in owner.calls] == ["POST", "GET", "POST"]  # the janitor's, before any read
    posts = [c for c in owner.calls if c.method == "POST"]
    assert {c.headers["webhook-id"] for c in posts} == {command_webhook_id(confirm["confirm_id"], "tap-1")}
    fact = owner.calls[1]
    assert fact.verified and fact.query["business_id"] == "g-down"
    assert len(owner.effects("g-down")) == 1
    assert status_of(api, confirm["confirm_id"]) == "accepted"


def test_a_confirm_the_owner_decided_meanwhile_is_repaired_to_the_owners_decision(
    api: TestClient, owner: LoopbackOwner, groups_key: dict[str, str], registered: dict[str, Any], clock: FakeClock
) -> None:
    confirm = create(api, groups_key, owner, "g-elsewhere").json()["data"]
    owner.faults.append("500")
    assert act(api, confirm["confirm_id"], "accept").status_code == 502
    owner.facts["g-elsewhere"] = "rejected"  # an admin decided in the owner's own console
    clock.advance(LEASE_MS + 1)
    run_janitor()
    assert [c.method for c in owner.calls] == ["POST", "GET"]  # the janitor asked the fact; no second action
    assert status_of(api, confirm["confirm_id"]) == "rejected"


@pytest.mark.parametrize("fault", ["huge", "stall"])
def test_an_owner_that_stalls_or_answers_too_much_is_a_502(
    api: TestClient, owner: LoopbackOwner, groups_key: dict[str, str], registered: dict[str, Any], fault: str
) -> None:
    confirm = create(api, groups_key, owner, f"g-{fault}").json()["data"]
    owner.faults.append(fault)
    response = act(api, confirm["confirm_id"], "accept")
    assert response.status_code == 502, response.text


def test_the_owner_cancels_by_business_id(
    api: TestClient,
    owner: LoopbackOwner,
    groups_key: dict[str, str],
    registered: dict[str, Any],
    pipeline: ConfirmPipeline,
    fake_im: FakeTencentIm,
    service_keys: ServiceKeys,
) -> None:
    confirm = create(api, groups_key, owner, "g-cancel").json()["data"]
    body = {"business_type": "group_join", "business_id": "g-cancel"}
    other, _ = service_keys.create_key("chess", ["/internal/v1/confirms/owner"], app_codes=["lalu"])
    assert (
        api.post("/internal/v1/confirms/cancel", json=body, headers={"Authorization": f"Bearer {other}"}).status_code
        == 404
    )
    cancelled = api.post("/internal/v1/confirms/cancel", json=body, headers=groups_key)
    assert cancelled.status_code == 200 and cancelled.json()["data"]["status"] == "cancelled", cancelled.text
    assert (
        api.post("/internal/v1/confirms/cancel", json=body, headers=groups_key).json()["data"]["status"] == "cancelled"
    )
    late = act(api, confirm["confirm_id"], "accept")
    assert late.status_code == 409 and late.json()["data"]["reason"] == "cancelled"
    unknown = api.post("/internal/v1/confirms/cancel", json={**body, "business_id": "g-none"}, headers=groups_key)
    assert unknown.status_code == 404
    pipeline.drain()
    assert [p["status"] for p in pushes(fake_im, confirm["confirm_id"])] == ["pending", "cancelled"]
    assert owner.calls == []  # the owner's own decision: Herald does not call it back


def test_a_decided_confirm_cannot_be_cancelled(
    api: TestClient, owner: LoopbackOwner, groups_key: dict[str, str], registered: dict[str, Any]
) -> None:
    confirm = create(api, groups_key, owner, "g-done").json()["data"]
    assert act(api, confirm["confirm_id"], "reject").status_code == 200
    late = api.post(
        "/internal/v1/confirms/cancel",
        json={"business_type": "group_join", "business_id": "g-done"},
        headers=groups_key,
    )
    assert late.status_code == 409 and late.json()["data"]["reason"] == "rejected"


def test_the_janitor_expires_an_owner_confirm_through_the_owner(
    api: TestClient,
    owner: LoopbackOwner,
    groups_key: dict[str, str],
    registered: dict[str, Any],
    clock: FakeClock,
    pipeline: ConfirmPipeline,
    fake_im: FakeTencentIm,
) -> None:
    confirm = create(api, groups_key, owner, "g-late", expire_at_ms=clock.now + 2_000).json()["data"]
    run_janitor()
    assert owner.calls == []  # not due yet
    clock.advance(2_001)
    run_janitor()
    (call,) = owner.calls
    assert call.verified and call.body is not None and call.body["type"] == "confirm.expire"
    assert owner.facts["g-late"] == "expired"
    late = act(api, confirm["confirm_id"], "accept")
    assert late.status_code == 409 and late.json()["data"]["reason"] == "expired"
    pipeline.drain()
    assert [p["status"] for p in pushes(fake_im, confirm["confirm_id"])] == ["pending", "expired"]


def test_a_rotated_secret_signs_beside_the_old_one_until_the_owner_moves(
    api: TestClient, owner: LoopbackOwner, groups_key: dict[str, str], registered: dict[str, Any]
) -> None:
    old = owner.secret
    rotated = api.post("/internal/v1/confirms/owners/group_join/rotate-secret", json={}, headers=groups_key)
    new = rotated.json()["data"]["signing_secret"]
    assert new.startswith("whsec_") and new != old
    confirm = create(api, groups_key, owner, "g-rot").json()["data"]
    assert act(api, confirm["confirm_id"], "accept").status_code == 200  # verified with the old secret
    owner.secret = new
    second = create(api, groups_key, owner, "g-rot2").json()["data"]
    assert act(api, second["confirm_id"], "accept").status_code == 200  # and with the new one
    assert all(c.verified for c in owner.calls)
    assert len(owner.calls[-1].headers["webhook-signature"].split()) == 2


def test_a_forged_or_stale_signature_is_refused_by_the_owner(
    api: TestClient, owner: LoopbackOwner, groups_key: dict[str, str], registered: dict[str, Any]
) -> None:
    """The owner's check is real: with a secret Herald does not hold, every callback is refused (a 502)."""
    confirm = create(api, groups_key, owner, "g-forged").json()["data"]
    owner.secret = "whsec_" + "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE="
    assert act(api, confirm["confirm_id"], "accept").status_code == 502
    assert owner.calls[-1].verified is False


def test_an_operator_disables_an_owner_and_its_confirms_wait(
    api: TestClient, owner: LoopbackOwner, groups_key: dict[str, str], registered: dict[str, Any], clock: FakeClock
) -> None:
    from herald.confirms.wiring import registrations

    confirm = create(api, groups_key, owner, "g-off").json()["data"]
    registrations().set_enabled("lalu", "group_join", enabled=False)
    blocked = create(api, groups_key, owner, "g-off2")
    assert blocked.status_code == 409 and blocked.json()["data"]["reason"] == "owner_disabled"
    assert act(api, confirm["confirm_id"], "accept").status_code == 502
    assert owner.calls == []
    registrations().set_enabled("lalu", "group_join", enabled=True)
    clock.advance(LEASE_MS + 1)
    run_janitor()
    assert [c.method for c in owner.calls] == ["GET", "POST"]  # the fact, then the action that waited
    assert status_of(api, confirm["confirm_id"]) == "accepted"


def test_another_tenant_or_service_never_reaches_an_owners_confirms(
    api: TestClient,
    owner: LoopbackOwner,
    groups_key: dict[str, str],
    registered: dict[str, Any],
    service_keys: ServiceKeys,
) -> None:
    confirm = create(api, groups_key, owner, "g-mine").json()["data"]
    elsewhere, _ = service_keys.create_key("groups", ["/internal/v1/confirms/owner"], app_codes=["other"])
    headers = {"Authorization": f"Bearer {elsewhere}"}
    refused = api.post("/internal/v1/confirms", json={**ask("g-x"), "app_code": "lalu"}, headers=headers)
    assert refused.status_code == 403 and refused.json()["data"]["reason"] == "tenant_not_allowed"
    # the same service id in another tenant has no registration there
    assert api.post("/internal/v1/confirms", json=ask("g-x"), headers=headers).status_code == 404
    other_service, _ = service_keys.create_key("chess", ["/internal/v1/confirms/owner"], app_codes=["lalu"])
    theirs = api.post("/internal/v1/confirms", json=ask("g-y"), headers={"Authorization": f"Bearer {other_service}"})
    assert theirs.status_code == 404
    stranger = act(api, confirm["confirm_id"], "accept", who=STRANGER)
    assert stranger.status_code == 404 and "g-mine" not in stranger.text
    other_tenant = api.post(
        f"/api/v1/message/action-confirms/{confirm['confirm_id']}/accept",
        json={"command_id": "x"},
        headers=user(RECEIVER, "other"),
    )
    assert other_tenant.status_code == 404
    assert owner.calls == []


def test_an_owner_sees_the_deliveries_of_its_own_confirms_only(
    api: TestClient,
    owner: LoopbackOwner,
    groups_key: dict[str, str],
    registered: dict[str, Any],
    pipeline: ConfirmPipeline,
    service_keys: ServiceKeys,
) -> None:
    mine = create(api, groups_key, owner, "g-seen").json()["data"]
    invitation = api.post(
        "/api/v1/role-invitations", json={"invitation_type": "host", "target_user_id": RECEIVER}, headers=user(SENDER)
    )
    assert invitation.status_code == 200, invitation.text
    pipeline.drain()
    support, _ = service_keys.create_key("support", ["/internal/v1/confirms"], app_codes=["lalu"])
    role_confirms = api.get(
        "/api/v1/message/action-confirms", params={"peer_user_id": SENDER}, headers=user(RECEIVER)
    ).json()["data"]["items"]
    (theirs,) = [c for c in role_confirms if c["business_type"] == "role_invitation"]
    deliveries = "/internal/v1/confirms/{}/deliveries"
    assert api.get(deliveries.format(mine["confirm_id"]), headers=groups_key).status_code == 200
    assert api.get(deliveries.format(theirs["confirm_id"]), headers=groups_key).status_code == 404
    support_headers = {"Authorization": f"Bearer {support}"}
    assert api.get(deliveries.format(theirs["confirm_id"]), headers=support_headers).status_code == 200


def test_the_owner_confirm_routes_are_in_the_openapi_with_their_errors(api: TestClient) -> None:
    spec = api.get("/api/v1/openapi.json").json()
    paths = spec["paths"]
    for path, method in [
        ("/internal/v1/confirms", "post"),
        ("/internal/v1/confirms/cancel", "post"),
        ("/internal/v1/confirms/owners", "get"),
        ("/internal/v1/confirms/owners/{business_type}", "put"),
        ("/internal/v1/confirms/owners/{business_type}/rotate-secret", "post"),
    ]:
        operation = paths[path][method]
        assert "401" in operation["responses"] and "403" in operation["responses"], path
    assert "409" in paths["/internal/v1/confirms"]["post"]["responses"]
    assert "source_event_id" in json.dumps(spec["components"]["schemas"]["CreateConfirmBody"])
    callbacks = paths["/internal/v1/confirms/owners/{business_type}"]["put"]["callbacks"]
    action = callbacks["owner_callback"]["{$request.body#/callback_url}"]["post"]
    assert set(action["responses"]) == {"200", "409", "5XX"}
    assert "get" in callbacks["owner_fact"]["{$request.body#/fact_url}"]
    assert "webhook-signature" in spec["components"]["schemas"]["ActionCallback"]["description"]
    refs = set(re.findall(r'"\$ref": "#/components/schemas/([^"]+)"', json.dumps(spec)))
    assert refs <= set(spec["components"]["schemas"]), refs - set(spec["components"]["schemas"])


def test_one_business_type_over_its_own_limit_gets_429_and_another_owner_does_not(
    owner: LoopbackOwner,
    groups_key: dict[str, str],
    pipeline: ConfirmPipeline,
    service_keys: ServiceKeys,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from herald.api.app import create_app

    reconfigure(rate_limit_owner_per_minute=3)
    limited = TestClient(create_app())
    chess, _ = service_keys.create_key("chess", ["/internal/v1/confirms/owner"], app_codes=["lalu"])
    chess_key = {"Authorization": f"Bearer {chess}"}
    for business_type, key in (("group_join", groups_key), ("chess_match", chess_key)):
        registered = limited.put(
            f"/internal/v1/confirms/owners/{business_type}", json=owner.registration(), headers=key
        )
        assert registered.status_code == 200, registered.text
    start_of_a_window()
    statuses = [create(limited, groups_key, owner, f"g-burst-{n}").status_code for n in range(4)]
    assert statuses == [200, 200, 200, 429]
    refused = create(limited, groups_key, owner, "g-burst-9")
    assert refused.json()["data"]["reason"] == "owner_rate_limited" and int(refused.headers["Retry-After"]) >= 1
    other = limited.post(
        "/internal/v1/confirms", json={**ask("c-1"), "business_type": "chess_match"}, headers=chess_key
    )
    assert other.status_code == 200, other.text


def test_an_owner_that_refuses_to_expire_leaves_the_janitor_running_and_the_confirm_waiting(
    api: TestClient, owner: LoopbackOwner, groups_key: dict[str, str], registered: dict[str, Any], clock: FakeClock
) -> None:
    """Only an action can be refused; a 409 to an expiry is an owner answering wrongly: no crash, no guess."""
    odd = create(api, groups_key, owner, "g-odd", expire_at_ms=clock.now + 1_000).json()["data"]
    other = create(api, groups_key, owner, "g-other", expire_at_ms=clock.now + 1_000).json()["data"]
    owner.faults.append("refuse:no_such_request")
    clock.advance(1_001)
    run_janitor()  # one refusal, and the janitor goes on to the next confirm
    statuses = sorted([owner.facts["g-odd"], owner.facts["g-other"]])
    assert statuses == ["expired", "pending"]
    run_janitor()  # the owner answers now
    assert {status_of(api, odd["confirm_id"]), status_of(api, other["confirm_id"])} == {"expired"}
