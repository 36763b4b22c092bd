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
ACME_NEXT = FeishuApp("cli_acmenext", "/herald/tenants/acme/feishu-secret-next")
TARGET = {"receive_id": "oc_ops", "receive_id_type": "chat_id"}


class Nightly:
    """A partner of tenant `acme` posting revisions of one card (`nightly-build`)."""

    def __init__(self, service_keys: ServiceKeys, events: EventsPipeline) -> None:
        self.api = TestClient(create_app())
        key, _ = service_keys.create_key("nightly", ["/events/external"], ["acme"], targets=["chat_id:oc_ops"])
        self.headers = {"Authorization": f"Bearer {key}"}
        self.events = events

    def revision(self, revision: int, drain: bool = True) -> None:
        data = {"event_id": "nightly-build", "revision": revision, "title": f"rev {revision}", "status": "running"}
        body = {"event_id": f"nightly-{revision}", "event_type": "build", "data": {**data, "target": TARGET}}
        self.post(body, drain)

    def post_one_off(self, title: str) -> None:
        data = {"title": title, "status": "done", "target": TARGET}
        self.post({"event_id": f"one-off-{len(title)}", "event_type": "deploy", "data": data})

    def post(self, body: dict[str, Any], drain: bool = True) -> None:
        assert self.api.post("/events/external", json=body, headers=self.headers).status_code == 202
        if drain:
            self.events.drain()


@pytest.fixture
def nightly(aws: Any, events: EventsPipeline, service_keys: ServiceKeys) -> Nightly:
    reconfigure(tenant_cache_seconds=0)
    tenants().set("acme", "Acme", None, None)  # registered, with the stack's Feishu app for now
    return Nightly(service_keys, events)


def messages(feishu: FakeFeishu) -> list[tuple[str, str, str]]:
    """Each call the fake took: the operation, the message and the card's title."""
    return [(entry["op"], entry["message_id"], entry["title"]) for entry in feishu.log]


def register(feishu: FakeFeishu, app: FeishuApp, secret: str) -> None:
    """The tenant `acme` registers its own Feishu app `app` (its secret in SSM, the fake told of it)."""
    feishu.add_app(app.app_id, secret)
    boto3.client("ssm").put_parameter(Name=app.secret_parameter, Value=secret, Type="SecureString", Overwrite=True)
    tenants().set("acme", "Acme", None, app)


def test_a_tenant_that_registers_its_own_feishu_app_mid_life_updates_its_cards_through_the_app_that_sent_them(
    nightly: Nightly, feishu: FakeFeishu
) -> None:
    nightly.revision(1)
    (first,) = {message for _, message, _ in messages(feishu)}
    register(feishu, ACME_FEISHU, "acme-secret")
    nightly.revision(2)
    nightly.post_one_off("deploy done")
    assert messages(feishu)[1:] == [("update", first, "rev 2"), ("send", feishu.log[2]["message_id"], "deploy done")]
    assert [entry["app_id"] for entry in feishu.log] == [feishu.app_id, feishu.app_id, ACME_FEISHU.app_id]
    second = event_store().job("nightly", 2)
    assert second is not None and (second.status, second.outcome) == (JobStatus.SUCCEEDED, Outcome.UPDATED)
    assert second.tenant == "acme"


def test_a_card_whose_sending_app_is_no_longer_registered_continues_through_the_tenants_current_app(
    nightly: Nightly, feishu: FakeFeishu
) -> None:
    register(feishu, ACME_FEISHU, "acme-secret")
    nightly.revision(1)
    (first,) = {message for _, message, _ in messages(feishu)}
    register(feishu, ACME_NEXT, "next-secret")  # acme's first app is no longer Herald's to call as
    nightly.revision(2)
    nightly.revision(3)
    ops = [(op, message == first, title) for op, message, title in messages(feishu)]
    assert ops == [("send", True, "rev 1"), ("send", False, "rev 2"), ("update", False, "rev 3")]
    assert [entry["app_id"] for entry in feishu.log] == [ACME_FEISHU.app_id] + [ACME_NEXT.app_id] * 2
    second = event_store().job("nightly", 2)
    assert second is not None and (second.outcome, second.continued_from) == (Outcome.CONTINUED, first)


def test_a_job_is_delivered_for_the_tenant_recorded_when_it_was_accepted_not_its_keys_now(
    nightly: Nightly, feishu: FakeFeishu, service_keys: ServiceKeys
) -> None:
    register(feishu, ACME_FEISHU, "acme-secret")
    nightly.revision(1, drain=False)  # accepted for acme, not yet delivered
    for key in service_keys.list_keys("nightly"):
        service_keys.revoke(key.key_id)
    service_keys.create_key("nightly", ["/events/external"], ["globex"], targets=["chat_id:oc_ops"])
    nightly.events.drain()
    assert [entry["app_id"] for entry in feishu.log] == [ACME_FEISHU.app_id]


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
