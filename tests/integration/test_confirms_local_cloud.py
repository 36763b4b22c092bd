"""Action confirms through HTTP on the local cloud: each check of the confirm design, concurrency, IM faults.

The workers run as the local cloud's event source mappings run them; pushes land in the fake Tencent IM.
"""

from __future__ import annotations

import secrets
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from herald.auth.dynamo import DynamoServiceKeyStore
from herald.auth.service_keys import ServiceKeys
from tests.support.local_cloud import LocalCloudProcess
from tests.support.tokens import make_token
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration


def new_user() -> str:
    return str(20_000_000 + secrets.randbelow(10**9))


class Client:
    def __init__(self, cloud: LocalCloudProcess, user: str) -> None:
        self.cloud = cloud
        self.user = user
        self.http = httpx.Client(
            base_url=cloud.http_url, headers={"Authorization": f"Bearer {make_token(user)}"}, timeout=30
        )

    def invite(self, target: str, kind: str = "host") -> dict[str, Any]:
        response = self.http.post("/api/v1/role-invitations", json={"invitation_type": kind, "target_user_id": target})
        assert response.status_code == 200, response.text
        return response.json()["data"]  # type: ignore[no-any-return]

    def act(self, confirm_id: str, action: str, command_id: str = "c1") -> httpx.Response:
        return self.http.post(f"/api/v1/message/action-confirms/{confirm_id}/{action}", json={"command_id": command_id})

    def status(self, confirm_id: str) -> list[dict[str, Any]]:
        response = self.http.post("/api/v1/message/action-confirms/status", json={"confirm_ids": [confirm_id]})
        return response.json()["data"]["items"]  # type: ignore[no-any-return]

    def invitation(self, invitation_id: str) -> dict[str, Any]:
        return self.http.get(f"/api/v1/role-invitations/{invitation_id}").json()["data"]  # type: ignore[no-any-return]


def im_messages(cloud: LocalCloudProcess, to: str) -> list[dict[str, Any]]:
    messages = httpx.get(f"{cloud.fake_url('tencent_im')}/__fake/messages").json()
    return [m for m in messages if m["to"] == to]


def pushed_confirm(cloud: LocalCloudProcess, target: str) -> str:
    def arrived() -> str:
        messages = [m for m in im_messages(cloud, target) if m["data"]["type"] == "im_confirm"]
        assert len(messages) == 1, messages
        return str(messages[0]["data"]["confirm_id"])

    return eventually(arrived)


def updates(cloud: LocalCloudProcess, confirm_id: str) -> list[str]:
    return [
        m["data"]["status"]
        for m in httpx.get(f"{cloud.fake_url('tencent_im')}/__fake/messages").json()
        if m["data"]["confirm_id"] == confirm_id and m["data"]["type"] == "im_confirm_update"
    ]


def owner_item(cloud: LocalCloudProcess, pk: str) -> dict[str, Any] | None:
    item = cloud.client("dynamodb").get_item(TableName=cloud.resource("InvitationsTable"), Key={"pk": {"S": pk}})
    return item.get("Item")  # type: ignore[no-any-return]


@pytest.fixture
def pair(cloud: LocalCloudProcess) -> tuple[Client, Client]:
    return Client(cloud, new_user()), Client(cloud, new_user())


def test_host_invitation_is_pending_with_one_pending_confirm_and_one_im_confirm(
    cloud: LocalCloudProcess, pair: tuple[Client, Client]
) -> None:
    inviter, target = pair
    invitation = inviter.invite(target.user)
    assert inviter.invitation(invitation["invitation_id"])["status"] == "pending"
    confirm_id = pushed_confirm(cloud, target.user)
    (confirm,) = target.status(confirm_id)
    assert confirm["status"] == "pending" and confirm["business_id"] == invitation["invitation_id"]
    (message,) = im_messages(cloud, target.user)
    assert message["from"] == inviter.user and message["data"]["type"] == "im_confirm"


def test_accept_makes_invitation_and_confirm_accepted_and_a_repeat_changes_nothing(
    cloud: LocalCloudProcess, pair: tuple[Client, Client]
) -> None:
    inviter, target = pair
    invitation = inviter.invite(target.user)
    confirm_id = pushed_confirm(cloud, target.user)
    first = target.act(confirm_id, "accept")
    assert first.status_code == 200 and first.json()["data"]["status"] == "accepted"
    repeat = target.act(confirm_id, "accept", command_id="c2")
    assert repeat.status_code == 200 and repeat.json()["data"] == first.json()["data"]
    assert inviter.invitation(invitation["invitation_id"])["status"] == "accepted"
    owner = owner_item(cloud, f"INV#lalu#{invitation['invitation_id']}")
    assert owner is not None and owner["version"]["N"] == "2"
    assert owner_item(cloud, f"ROLE#lalu#{target.user}#host") is not None
    refused = target.act(confirm_id, "reject", command_id="c3")
    assert refused.status_code == 409 and refused.json()["code"] == "CONFLICT"
    assert target.status(confirm_id)[0]["status"] == "accepted"
    assert eventually(lambda: arrived_updates(cloud, confirm_id)) == ["accepted"]


def arrived_updates(cloud: LocalCloudProcess, confirm_id: str) -> list[str]:
    found = updates(cloud, confirm_id)
    assert found, "no update pushed yet"
    return found


def test_reject_makes_invitation_and_confirm_rejected(cloud: LocalCloudProcess, pair: tuple[Client, Client]) -> None:
    inviter, target = pair
    invitation = inviter.invite(target.user, "bd")
    confirm_id = pushed_confirm(cloud, target.user)
    response = target.act(confirm_id, "reject")
    assert response.status_code == 200 and response.json()["data"]["status"] == "rejected"
    assert inviter.invitation(invitation["invitation_id"])["status"] == "rejected"
    assert owner_item(cloud, f"ROLE#lalu#{target.user}#bd") is None


def test_non_receiver_gets_permission_denied(cloud: LocalCloudProcess, pair: tuple[Client, Client]) -> None:
    inviter, target = pair
    inviter.invite(target.user)
    confirm_id = pushed_confirm(cloud, target.user)
    response = inviter.act(confirm_id, "accept")
    assert response.status_code == 403 and response.json()["code"] == "PERMISSION_DENIED"
    assert Client(cloud, new_user()).act(confirm_id, "accept").status_code == 404
    assert target.status(confirm_id)[0]["status"] == "pending"


def test_twenty_concurrent_accepts_make_one_owner_transition(
    cloud: LocalCloudProcess, pair: tuple[Client, Client]
) -> None:
    inviter, target = pair
    invitation = inviter.invite(target.user)
    confirm_id = pushed_confirm(cloud, target.user)
    with ThreadPoolExecutor(max_workers=20) as pool:
        responses = list(pool.map(lambda i: target.act(confirm_id, "accept", command_id=f"tap-{i}"), range(20)))
    codes = [r.status_code for r in responses]
    assert set(codes) <= {200, 409} and 200 in codes, codes
    for response in responses:
        body = response.json()
        if response.status_code == 200:
            assert body["data"]["status"] == "accepted"
        else:
            assert body["code"] == "CONFLICT" and body["data"]["reason"] in ("processing", "accepted")
    owner = owner_item(cloud, f"INV#lalu#{invitation['invitation_id']}")
    assert owner is not None and owner["status"]["S"] == "accepted" and owner["version"]["N"] == "2"
    assert eventually(lambda: arrived_updates(cloud, confirm_id)) == ["accepted"]
    time.sleep(1.0)  # the sleep is the behaviour: a second update would have arrived by now
    assert updates(cloud, confirm_id) == ["accepted"]


def _service_key(cloud: LocalCloudProcess) -> str:
    store = DynamoServiceKeyStore(cloud.resource("ServiceKeysTable"), cloud.client("dynamodb"))
    key, _ = ServiceKeys(store).create_key("support", ["/internal/v1/confirms"])
    return key


def test_im_5xx_then_ok_delivers_one_message(cloud: LocalCloudProcess, pair: tuple[Client, Client]) -> None:
    inviter, target = pair
    httpx.post(f"{cloud.fake_url('tencent_im')}/__fake/faults", json=[{"status": 502}])
    inviter.invite(target.user)
    confirm_id = pushed_confirm(cloud, target.user)
    key = _service_key(cloud)
    deliveries = httpx.get(
        f"{cloud.http_url}/internal/v1/confirms/{confirm_id}/deliveries", headers={"Authorization": f"Bearer {key}"}
    ).json()["data"]["deliveries"]
    assert [(d["push"], d["status"], d["attempts"]) for d in deliveries] == [("im_confirm", "sent", 2)]
    assert "502" in deliveries[0]["last_error"]
    time.sleep(1.0)  # the sleep is the behaviour: a second message would have arrived by now
    assert len(im_messages(cloud, target.user)) == 1


def test_permanent_im_error_puts_the_push_in_the_dead_letter_queue(
    cloud: LocalCloudProcess, pair: tuple[Client, Client]
) -> None:
    inviter, target = pair
    httpx.post(
        f"{cloud.fake_url('tencent_im')}/__fake/faults", json=[{"error_code": 20003, "info": "invalid To_Account"}]
    )
    inviter.invite(target.user)
    sqs = cloud.client("sqs")

    def dead_lettered() -> dict[str, Any]:
        messages = sqs.receive_message(
            QueueUrl=cloud.resource("ImPushDeadLetters"),
            MaxNumberOfMessages=10,
            MessageAttributeNames=["All"],
            WaitTimeSeconds=1,
        ).get("Messages", [])
        mine = [m for m in messages if "20003" in m["MessageAttributes"]["failure_reason"]["StringValue"]]
        assert mine
        return mine[0]  # type: ignore[no-any-return]

    dead = eventually(dead_lettered)
    assert "invalid To_Account" in dead["MessageAttributes"]["failure_reason"]["StringValue"]
    assert im_messages(cloud, target.user) == []
