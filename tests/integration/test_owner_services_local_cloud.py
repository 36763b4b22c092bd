"""An owner service end to end on the local cloud (the template's functions, its tables on moto or DynamoDB
Local, its queues, the fake Tencent IM): a loopback owner written in the test registers `group_join`, asks
for confirms over HTTP and is called back, signed, by the HTTP function and by an operator's repair; it rotates
its secret midway, and neither secret reaches Herald's logs."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from herald.auth.dynamo import DynamoServiceKeyStore
from herald.auth.service_keys import ServiceKeys
from herald.confirms.owners.callbacks import command_webhook_id
from herald.confirms.rows import confirm_key
from tests.integration.test_confirms_local_cloud import Client, im_messages, new_user
from tests.support.local_cloud import REPO, LocalCloudProcess
from tests.support.owner import LoopbackOwner
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

LEASE_S = 20  # the shipped confirm lease: a processing confirm is repaired only after it


@pytest.fixture
def owner() -> Iterator[LoopbackOwner]:
    owner = LoopbackOwner().start()
    yield owner
    owner.stop()


def ops(cloud: LocalCloudProcess, *args: str) -> list[dict[str, Any]]:
    command = [sys.executable, "-m", "herald_ops.cli", *args, "--state-file", str(cloud.state_file), "--json"]
    result = subprocess.run(command, check=False, capture_output=True, text=True, cwd=REPO, timeout=120)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


class OwnerService:
    """The owner's side of Herald's API: its key, its business type."""

    def __init__(self, cloud: LocalCloudProcess, owner: LoopbackOwner, business_type: str) -> None:
        keys = ServiceKeys(DynamoServiceKeyStore(cloud.resource("ServiceKeysTable"), cloud.client("dynamodb")))
        key, _ = keys.create_key(f"groups-{secrets.token_hex(3)}", ["/internal/v1/confirms/owner"])
        self.http = httpx.Client(base_url=cloud.http_url, headers={"Authorization": f"Bearer {key}"}, timeout=30)
        self.owner = owner
        self.business_type = business_type

    def register(self) -> dict[str, Any]:
        response = self.http.put(f"/internal/v1/confirms/owners/{self.business_type}", json=self.owner.registration())
        assert response.status_code == 200, response.text
        self.owner.secret = response.json()["data"]["signing_secret"]
        return response.json()["data"]["registration"]  # type: ignore[no-any-return]

    def ask(self, sender: str, receiver: str, business_id: str, **fields: Any) -> httpx.Response:
        self.owner.facts.setdefault(business_id, "pending")
        body = {
            "business_type": self.business_type,
            "business_subtype": "join",
            "business_id": business_id,
            "source_event_id": f"evt-{business_id}",
            "sender_user_id": sender,
            "receiver_user_id": receiver,
            "message_text": f"{sender} asks to join {business_id}",
            **fields,
        }
        return self.http.post("/internal/v1/confirms", json=body)

    def cancel(self, business_id: str) -> httpx.Response:
        return self.http.post(
            "/internal/v1/confirms/cancel", json={"business_type": self.business_type, "business_id": business_id}
        )


def confirm_pushes(cloud: LocalCloudProcess, receiver: str, confirm_id: str) -> list[dict[str, Any]]:
    return [m["data"] for m in im_messages(cloud, receiver) if m["data"]["confirm_id"] == confirm_id]


def lease_ran_out(cloud: LocalCloudProcess, confirm_id: str) -> None:
    """The confirm's processing lease is over (read from its row: a repair before then finds it still held)."""
    key = {"pk": {"S": confirm_key("lalu", confirm_id)}}
    row = cloud.client("dynamodb").get_item(TableName=cloud.resource("ConfirmsTable"), Key=key)["Item"]
    assert int(row["lock_until_ms"]["N"]) < time.time() * 1000, row


def test_an_owner_service_registers_asks_and_is_called_back_end_to_end(
    cloud: LocalCloudProcess, owner: LoopbackOwner
) -> None:
    business_type = f"group_join_{secrets.token_hex(3)}"
    service = OwnerService(cloud, owner, business_type)
    service.register()
    sender, receiver = Client(cloud, new_user()), Client(cloud, new_user())

    def ask(business_id: str, **fields: Any) -> dict[str, Any]:
        answers = [service.ask(sender.user, receiver.user, business_id, **fields) for _ in range(2)]  # a retry
        assert [a.status_code for a in answers] == [200, 200], answers[0].text
        assert answers[0].json()["data"] == answers[1].json()["data"]
        return answers[0].json()["data"]  # type: ignore[no-any-return]

    # The owner is down for the first click: a 502, the confirm stays processing under its lease.
    down = ask("g-down")
    owner.faults.append("500")
    failed = receiver.act(down["confirm_id"], "accept", command_id="tap-down")
    assert failed.status_code == 502, failed.text

    # Accept: one signed callback, one IM push each way; a second tap changes nothing.
    joined = ask("g-1")
    accepted = receiver.act(joined["confirm_id"], "accept", command_id="tap-1")
    assert accepted.status_code == 200 and accepted.json()["data"]["status"] == "accepted", accepted.text
    again = receiver.act(joined["confirm_id"], "accept", command_id="tap-2")
    assert again.json()["data"] == accepted.json()["data"]
    assert len(owner.effects("g-1")) == 1 and all(c.verified for c in owner.calls)

    # Rotation: a new secret, shown once; the owner moves to it and every later callback verifies.
    first_secret = owner.secret
    rotated = service.http.post(f"/internal/v1/confirms/owners/{business_type}/rotate-secret", json={})
    assert rotated.status_code == 200, rotated.text
    owner.secret = rotated.json()["data"]["signing_secret"]
    assert owner.secret != first_secret

    # Refusal: the owner's named reason reaches the client.
    full = ask("g-full")
    owner.faults.append("refuse:group_full")
    refused = receiver.act(full["confirm_id"], "accept")
    assert refused.status_code == 409 and refused.json()["data"]["reason"] == "group_full", refused.text

    # Cancel by business id: both parties' buttons grey; a late click is refused.
    withdrawn = ask("g-cancel")
    cancelled = service.cancel("g-cancel")
    assert cancelled.status_code == 200 and cancelled.json()["data"]["status"] == "cancelled", cancelled.text
    assert receiver.act(withdrawn["confirm_id"], "accept").json()["data"]["reason"] == "cancelled"

    # Expiry: past its time, the next read expires it through the owner.
    late = ask("g-late", expire_at_ms=int(time.time() * 1000) + 1_500)

    def expired_through_the_owner() -> None:
        assert receiver.status(late["confirm_id"])[0]["status"] == "expired"

    eventually(expired_through_the_owner)
    assert owner.facts["g-late"] == "expired"

    def pushed(confirm_id: str, statuses: list[str]) -> None:
        assert [p["status"] for p in confirm_pushes(cloud, receiver.user, confirm_id)] == statuses

    eventually(lambda: pushed(joined["confirm_id"], ["pending", "accepted"]))
    eventually(lambda: pushed(full["confirm_id"], ["pending", "failed"]))
    eventually(lambda: pushed(withdrawn["confirm_id"], ["pending", "cancelled"]))
    eventually(lambda: pushed(late["confirm_id"], ["pending", "expired"]))

    # The owner is back: after the lease, an operator's repair settles the stuck confirm from the owner.
    eventually(lambda: lease_ran_out(cloud, down["confirm_id"]), timeout=LEASE_S + 30)

    def repaired() -> None:
        (repaired,) = ops(cloud, "confirms", "repair", down["confirm_id"], "--app", "lalu")
        assert repaired["status"] == "accepted"

    eventually(repaired)
    posts = [c for c in owner.calls if c.body and c.body["confirm"]["business_id"] == "g-down"]
    assert {c.headers["webhook-id"] for c in posts} == {command_webhook_id(down["confirm_id"], "tap-down")}
    assert len(owner.effects("g-down")) == 1
    eventually(lambda: pushed(down["confirm_id"], ["pending", "accepted"]))
    assert all(c.verified for c in owner.calls)

    # Herald's logs hold the owner's path (the failed callback's error), never a signing secret.
    logs = cloud.log_path.read_text()
    assert "the owner service answered 500" in logs
    assert [s for s in (first_secret, owner.secret) if s.removeprefix("whsec_") in logs] == []


def test_an_operator_lists_and_disables_an_owner(cloud: LocalCloudProcess, owner: LoopbackOwner) -> None:
    business_type = f"group_join_{secrets.token_hex(3)}"
    service = OwnerService(cloud, owner, business_type)
    service.register()
    listed = [r for r in ops(cloud, "owners", "list", "--app", "lalu") if r["business_type"] == business_type]
    assert [r["enabled"] for r in listed] == [True] and "whsec_" not in json.dumps(listed)
    (disabled,) = ops(cloud, "owners", "disable", business_type, "--app", "lalu")
    assert disabled["enabled"] is False
    refused = service.ask(new_user(), new_user(), "g-off")
    assert refused.status_code == 409 and refused.json()["data"]["reason"] == "owner_disabled"
    ops(cloud, "owners", "enable", business_type, "--app", "lalu")
    assert service.ask(new_user(), new_user(), "g-on").status_code == 200


def test_an_operator_releases_or_transfers_a_squatted_business_type(
    cloud: LocalCloudProcess, owner: LoopbackOwner
) -> None:
    """A service registered types that are not its own: an operator frees one, and hands the other to its real
    owner (a fresh secret only the new owner gets; disabled, so no call goes to the squatter's URLs)."""
    released_type, moved_type = f"squat_{secrets.token_hex(3)}", f"moved_{secrets.token_hex(3)}"
    squatter_owner = LoopbackOwner().start()
    try:
        squatters = [OwnerService(cloud, squatter_owner, t) for t in (released_type, moved_type)]
        for squatter in squatters:
            squatter.register()
        command = ["owners", "release", released_type, "--app", "lalu", "--state-file", str(cloud.state_file), "--json"]
        unconfirmed = subprocess.run(
            [sys.executable, "-m", "herald_ops.cli", *command],
            check=False, capture_output=True, text=True, cwd=REPO, timeout=120,
        )  # fmt: skip
        assert unconfirmed.returncode == 2 and "--confirm" in unconfirmed.stderr
        (released,) = ops(cloud, "owners", "release", released_type, "--confirm", released_type, "--app", "lalu")
        assert released["released"] is True
        rightful = OwnerService(cloud, owner, released_type)
        service_id = str(rightful.register()["service_id"])
        assert service_id != released["service_id"]

        (moved,) = ops(cloud, "owners", "transfer", moved_type, "--to", service_id, "--app", "lalu")
        assert moved["service_id"] == service_id and moved["enabled"] is False
        assert moved["signing_secret"].startswith("whsec_") and moved["signing_secret"] != owner.secret
        assert squatters[1].ask(new_user(), new_user(), "sq-1").status_code == 404  # no longer the squatter's
        rightful.business_type = moved_type
        assert rightful.ask(new_user(), new_user(), "m-0").json()["data"]["reason"] == "owner_disabled"
        changed = rightful.http.put(f"/internal/v1/confirms/owners/{moved_type}", json=owner.registration())
        assert changed.status_code == 200 and changed.json()["data"]["signing_secret"] is None, changed.text
        ops(cloud, "owners", "enable", moved_type, "--app", "lalu")
        assert rightful.ask(new_user(), new_user(), "m-1").status_code == 200
        assert squatter_owner.calls == []
    finally:
        squatter_owner.stop()


def test_a_dripping_owner_is_given_up_on_at_the_total_deadline_on_the_local_cloud(
    cloud: LocalCloudProcess, owner: LoopbackOwner
) -> None:
    """A real slow server: its status line at once, then a byte a second. Each read is quick, so a per-read
    timeout never fires (the click used to be held ~60 s); the total deadline (5 s) answers 502 well inside the
    HTTP function's 15 s, and the confirm is repaired from the owner's fact once it answers again."""
    service = OwnerService(cloud, owner, f"group_join_{secrets.token_hex(3)}")
    service.register()
    receiver = Client(cloud, new_user())
    confirm = service.ask(new_user(), receiver.user, "g-drip").json()["data"]
    owner.drip_s = 1.0
    owner.faults.append("drip")
    started = time.monotonic()
    held = receiver.act(confirm["confirm_id"], "accept", command_id="tap-drip")
    took = time.monotonic() - started
    assert held.status_code == 502 and held.json()["code"] == "UPSTREAM_ERROR", held.text
    assert 4.5 <= took < 9, f"the click was held {took:.1f} s"
