"""A card's long life on moto, through the fake Feishu (which refuses an update by any app but the sender, of a
recalled message, or of one sent 14 days ago or more): the revision after any of those goes out as a new card
continuing the first, later revisions update the new one, and no lane blocks (issue 46, item 2)."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from fastapi.testclient import TestClient

from herald.api.app import create_app
from herald.auth.service_keys import ServiceKeys
from herald.events.jobs import JobStatus
from herald.events.records import Outcome
from herald.events.wiring import event_store
from herald.tenants.models import FeishuApp
from herald.tenants.wiring import tenants
from herald_dev.fakes.feishu import FakeFeishu
from tests.support.container import reconfigure
from tests.support.events import EventsPipeline

ACME_FEISHU = FeishuApp("cli_acme", "/herald/tenants/acme/feishu-secret")
TARGET = {"receive_id": "oc_ops", "receive_id_type": "chat_id"}


class Nightly:
    """A partner of tenant `acme` posting revisions of one card (`nightly-build`)."""

    def __init__(self, service_keys: ServiceKeys, events: EventsPipeline) -> None:
        self.api = TestClient(create_app())
        key, _ = service_keys.create_key("nightly", ["/events/external"], ["acme"], targets=["chat_id:oc_ops"])
        self.headers = {"Authorization": f"Bearer {key}"}
        self.events = events

    def revision(self, revision: int) -> None:
        data = {"event_id": "nightly-build", "revision": revision, "title": f"rev {revision}", "status": "running"}
        body = {"event_id": f"nightly-{revision}", "event_type": "build", "data": {**data, "target": TARGET}}
        assert self.api.post("/events/external", json=body, headers=self.headers).status_code == 202
        self.events.drain()


@pytest.fixture
def nightly(aws: Any, events: EventsPipeline, service_keys: ServiceKeys) -> Nightly:
    reconfigure(tenant_cache_seconds=0)
    tenants().set("acme", "Acme", None, None)  # registered, with the stack's Feishu app for now
    return Nightly(service_keys, events)


def messages(feishu: FakeFeishu) -> list[tuple[str, str, str]]:
    """Each call the fake took: the operation, the message and the card's title."""
    return [(entry["op"], entry["message_id"], entry["title"]) for entry in feishu.log]


def test_a_tenant_that_registers_its_own_feishu_app_mid_life_gets_a_continuing_card_not_a_refused_update(
    nightly: Nightly, feishu: FakeFeishu
) -> None:
    nightly.revision(1)
    (first,) = {message for _, message, _ in messages(feishu)}
    feishu.add_app(ACME_FEISHU.app_id, "acme-secret")
    boto3.client("ssm").put_parameter(Name=ACME_FEISHU.secret_parameter, Value="acme-secret", Type="SecureString")
    tenants().set("acme", "Acme", None, ACME_FEISHU)
    nightly.revision(2)
    nightly.revision(3)
    ops = messages(feishu)
    assert ops[0] == ("send", first, "rev 1") and [op for op, _, _ in ops[1:]] == ["send", "update"]
    assert ops[1][1] == ops[2][1] != first and feishu.log[-1]["app_id"] == ACME_FEISHU.app_id
    second = event_store().job("nightly", 2)
    assert second is not None and (second.outcome, second.continued_from) == (Outcome.CONTINUED, first)


@pytest.mark.parametrize("refusal", ["age", "recall"])
def test_a_card_feishu_no_longer_edits_continues_as_a_new_card_and_the_lane_goes_on(
    nightly: Nightly, feishu: FakeFeishu, refusal: str
) -> None:
    nightly.revision(1)
    (first,) = {message for _, message, _ in messages(feishu)}
    feishu.age(first, 15) if refusal == "age" else feishu.recall(first)
    nightly.revision(2)
    nightly.revision(3)
    ops = [(op, message == first, title) for op, message, title in messages(feishu)]
    assert ops == [("send", True, "rev 1"), ("send", False, "rev 2"), ("update", False, "rev 3")]
    continuing = feishu.messages[feishu.log[1]["message_id"]]["cards"][0]
    assert any("Continues the card of" in str(element) for element in continuing["elements"])
    jobs = [event_store().job("nightly", seq) for seq in (1, 2, 3)]
    assert [job.status if job else None for job in jobs] == [JobStatus.SUCCEEDED] * 3
