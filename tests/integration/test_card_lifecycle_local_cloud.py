"""A card's long life through the local cloud (moto, and DynamoDB Local + fauxqs), its tenant's Feishu apps
registered with `herald-ops tenants set` and the fake Feishu refusing an update by any app but the sender, of a
message aged past 14 days (230031) or recalled (230011) (issue 46, items 1 and 2): a revision after the tenant
registers its own app updates the card through the app that sent it; one after the message aged or was recalled,
or after the sending app left Herald, goes out as a new card that later revisions update; no lane blocks."""

from __future__ import annotations

import secrets
from typing import Any

import httpx
import pytest

from herald.auth.dynamo import DynamoServiceKeyStore
from herald.auth.service_keys import ServiceKeys
from tests.support.local_cloud import LocalCloudProcess
from tests.support.tenants import ops
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration


class CardOfATenant:
    """A tenant (on the stack's Feishu app until it registers one) whose partner updates one card, `build`."""

    def __init__(self, cloud: LocalCloudProcess) -> None:
        self.cloud = cloud
        self.app_code = f"life-{secrets.token_hex(3)}"
        self.chat = f"oc_{self.app_code}"
        ops(cloud, "tenants", "set", self.app_code, "--display-name", "a card's long life")
        keys = ServiceKeys(DynamoServiceKeyStore(cloud.resource("ServiceKeysTable"), cloud.client("dynamodb")))
        key, _ = keys.create_key(
            f"ci-{self.app_code}", ["/events/external"], [self.app_code], targets=[f"chat_id:{self.chat}"]
        )
        self.http = httpx.Client(base_url=cloud.http_url, headers={"Authorization": f"Bearer {key}"}, timeout=30)

    def register_feishu_app(self) -> str:
        """The tenant's own Feishu app, its secret in the cloud's SSM; replaces any it had."""
        app_id, secret = f"cli_{secrets.token_hex(6)}", secrets.token_hex(12)
        parameter = f"/herald/tenants/{self.app_code}/feishu-{app_id}"
        self.cloud.client("ssm").put_parameter(Name=parameter, Value=secret, Type="SecureString", Overwrite=True)
        httpx.post(f"{self.fake}/__fake/apps", json={"app_id": app_id, "app_secret": secret}).raise_for_status()
        ops(self.cloud, "tenants", "set", self.app_code, "--feishu-app-id", app_id, "--feishu-secret-parameter",
            parameter)  # fmt: skip
        return app_id

    @property
    def fake(self) -> str:
        return self.cloud.fake_url("feishu")

    def revision(self, revision: int) -> dict[str, Any]:
        """Post the card's `revision` and wait for Feishu to show it: the fake's entry for it."""
        title = f"{self.app_code} r{revision}"
        data = {"event_id": "build", "revision": revision, "title": title, "status": "running"}
        body = {"event_id": f"build-{revision}", "event_type": "build", "data": {**data, "target": self.target}}
        answer = self.http.post("/events/external", json=body)
        assert answer.status_code == 202, answer.text
        return eventually(lambda: self.call_showing(title), timeout=60)

    @property
    def target(self) -> dict[str, str]:
        return {"receive_id": self.chat, "receive_id_type": "chat_id"}

    def call_showing(self, title: str) -> dict[str, Any]:
        entries = httpx.get(f"{self.fake}/__fake/messages", timeout=30).json()
        calls = [entry for entry in entries if entry["title"] == title]
        assert len(calls) == 1, f"{title}: {calls}"
        return calls[0]  # type: ignore[no-any-return]


@pytest.fixture
def card(cloud: LocalCloudProcess) -> CardOfATenant:
    return CardOfATenant(cloud)


def test_after_the_tenant_registers_its_own_app_a_revision_updates_the_card_through_the_app_that_sent_it(
    card: CardOfATenant,
) -> None:
    first = card.revision(1)
    card.register_feishu_app()
    second = card.revision(2)
    assert (second["op"], second["message_id"], second["app_id"]) == ("update", first["message_id"], first["app_id"])


@pytest.mark.parametrize("refusal", ["age", "recall"])
def test_a_card_feishu_no_longer_edits_continues_as_a_new_card_that_the_next_revision_updates(
    card: CardOfATenant, refusal: str
) -> None:
    first = card.revision(1)
    httpx.post(f"{card.fake}/__fake/{refusal}", json={"message_id": first["message_id"]}).raise_for_status()
    second, third = card.revision(2), card.revision(3)
    assert (second["op"], third["op"]) == ("send", "update")
    assert third["message_id"] == second["message_id"] != first["message_id"]
    fate = card.http.get("/events/external/build-2").json()["data"]  # what the partner reads of it
    assert (fate["status"], fate["continued_from"], fate["message_id"]) == (
        "succeeded",
        first["message_id"],
        second["message_id"],
    )
    listed = card.http.get("/events/external", params={"status": "succeeded"}).json()["data"]["items"]
    assert [item["event_id"] for item in listed] == ["build-3", "build-2", "build-1"]


def test_a_card_whose_sending_app_left_herald_continues_through_the_tenants_current_app(card: CardOfATenant) -> None:
    card.register_feishu_app()
    first = card.revision(1)
    now = card.register_feishu_app()  # the first app's credentials are no longer Herald's
    second, third = card.revision(2), card.revision(3)
    assert (second["op"], second["app_id"], third["op"], third["app_id"]) == ("send", now, "update", now)
    assert second["message_id"] != first["message_id"]
