"""Status webhooks through the local cloud (moto, and DynamoDB Local + fauxqs), its event source mappings running
side by side as Lambda's do (issue 46, item 4): one partner's endpoint hangs past the total deadline while another
partner's webhook is posted, and both partners' cards are delivered; the hanging endpoint gets its notice once it
answers again."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import httpx
import pytest

from herald.auth.dynamo import DynamoServiceKeyStore
from herald.auth.service_keys import ServiceKeys
from herald_dev.webhook_receiver import WebhookReceiver
from tests.support.local_cloud import LocalCloudProcess
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration


class Watcher:
    def __init__(self, cloud: LocalCloudProcess, receiver: WebhookReceiver, path: str) -> None:
        self.service_id, self.path = f"watch-{secrets.token_hex(3)}", path
        self.chat = f"oc_{self.service_id}"
        keys = ServiceKeys(DynamoServiceKeyStore(cloud.resource("ServiceKeysTable"), cloud.client("dynamodb")))
        key, _ = keys.create_key(self.service_id, ["/events/external"], targets=[f"chat_id:{self.chat}"])
        self.http = httpx.Client(base_url=cloud.http_url, headers={"Authorization": f"Bearer {key}"}, timeout=30)
        body = {"url": f"{receiver.url}{path}", "statuses": ["succeeded"]}
        self.secret = self.http.put("/events/external/webhook", json=body).json()["data"]["secret"]

    def post(self, event_id: str) -> None:
        target = {"receive_id": self.chat, "receive_id_type": "chat_id"}
        data = {"title": event_id, "status": "done", "target": target}
        answer = self.http.post("/events/external", json={"event_id": event_id, "event_type": "deploy", "data": data})
        assert answer.status_code == 202, answer.text


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    server = WebhookReceiver().start()
    yield server
    server.stop()


def cards_to(cloud: LocalCloudProcess, chat: str) -> list[str]:
    messages = httpx.get(f"{cloud.fake_url('feishu')}/__fake/messages", timeout=30).json()
    return [message["title"] for message in messages if message["receive_id"] == chat]


def test_a_hanging_endpoint_holds_up_neither_cards_nor_another_partners_webhook(
    cloud: LocalCloudProcess, receiver: WebhookReceiver
) -> None:
    slow, quick = Watcher(cloud, receiver, "/slow"), Watcher(cloud, receiver, "/quick")
    receiver.secret = quick.secret
    receiver.behave("/slow", "hang")
    slow.post("slow-1")
    quick.post("quick-1")

    def quick_told_and_both_cards_out() -> None:
        assert [d["data"]["event_id"] for d in receiver.documents("/quick")] == ["quick-1"]
        assert cards_to(cloud, slow.chat) == ["slow-1"] and cards_to(cloud, quick.chat) == ["quick-1"]

    eventually(quick_told_and_both_cards_out, timeout=60)
    assert receiver.documents("/slow") == []
    receiver.secret = slow.secret
    receiver.behave("/slow", "ok")

    def slow_told_at_last() -> None:
        assert [d["data"]["event_id"] for d in receiver.documents("/slow")] == ["slow-1"]

    eventually(slow_told_at_last, timeout=90)
