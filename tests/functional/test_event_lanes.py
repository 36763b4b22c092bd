"""Opt-in lanes per target, in process on moto: a service whose key orders by target runs one lane per chat,
in order inside it and side by side across them; a blocked job holds up only its own lane (the default, the
service's one order, is held by test_events)."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from herald.auth.service_keys import ServiceKeys
from herald.errors import NotFound
from herald.events.jobs import JobStatus
from herald.events.wiring import operations
from herald_dev.fakes.feishu import FakeFeishu
from tests.functional.test_events import Partner, job_statuses, titles
from tests.support.events import EventsPipeline

OPS = {"receive_id": "oc_ops", "receive_id_type": "chat_id"}
OTHER = {"receive_id": "oc_other", "receive_id_type": "chat_id"}
TARGETS = ["chat_id:oc_ops", "chat_id:oc_other"]
REFUSED = {"op": "send", "code": 230001, "status": 400}  # Feishu refuses: the job fails, its order is blocked


@pytest.fixture
def laned(api: TestClient, service_keys: ServiceKeys) -> Partner:
    return Partner(api, service_keys, "progress", TARGETS, order="target")


@pytest.fixture
def serial(api: TestClient, service_keys: ServiceKeys) -> Partner:
    return Partner(api, service_keys, "scheduler", TARGETS)


def block_the_ops_chat(partner: Partner, events: EventsPipeline, feishu: FakeFeishu) -> None:
    """The first event to oc_ops is refused by Feishu; one more to oc_ops and one to oc_other come after."""
    feishu.queue_faults(REFUSED)
    partner.accept("e1", title="ops 1", target=OPS)
    events.drain()
    partner.accept("e2", title="ops 2", target=OPS)
    partner.accept("e3", title="other 1", target=OTHER)
    events.drain()


def test_a_failed_job_blocks_only_its_own_chats_lane_when_the_service_orders_by_target(
    laned: Partner, events: EventsPipeline, feishu: FakeFeishu
) -> None:
    block_the_ops_chat(laned, events, feishu)
    assert titles(feishu, "oc_other") == ["other 1"]  # its lane ran past the blocked one
    assert titles(feishu, "oc_ops") == []
    assert job_statuses("progress/chat_id:oc_ops") == ["failed", "queued"]
    assert job_statuses("progress/chat_id:oc_other") == ["succeeded"]
    assert job_statuses("progress") == []  # nothing in the service's own order
    operations().skip("progress/chat_id:oc_ops:1", by="alice", note="refused for good")
    events.drain()
    assert titles(feishu, "oc_ops") == ["ops 2"]


def test_the_same_failure_blocks_the_whole_service_in_the_default_order(
    serial: Partner, events: EventsPipeline, feishu: FakeFeishu
) -> None:
    block_the_ops_chat(serial, events, feishu)
    assert titles(feishu, "oc_other") == [] and titles(feishu, "oc_ops") == []
    assert job_statuses("scheduler") == ["failed", "queued", "queued"]


def test_each_lane_is_its_own_message_group_so_lanes_run_side_by_side(
    laned: Partner, serial: Partner, events: EventsPipeline
) -> None:
    laned.accept("e1", target=OPS)
    laned.accept("e2", target=OTHER)
    serial.accept("s1", target=OPS)
    serial.accept("s2", target=OTHER)
    events.pump_stream()
    waiting = events.sqs.receive_message(QueueUrl=events.queue_url, MaxNumberOfMessages=10, AttributeNames=["All"])
    groups = sorted({m["Attributes"]["MessageGroupId"] for m in waiting["Messages"]})
    assert groups == ["progress/chat_id:oc_ops", "progress/chat_id:oc_other", "scheduler"]
    bodies = [json.loads(m["Body"]) for m in waiting["Messages"]]
    assert {"v": 1, "lane": "progress/chat_id:oc_other", "seq": 1, "why": "new"} in bodies


def test_a_cards_revisions_share_its_lane_and_are_coalesced_there(
    laned: Partner, events: EventsPipeline, feishu: FakeFeishu
) -> None:
    for revision in (1, 2, 3):
        laned.accept(f"r{revision}", event_id="build-7", revision=revision, title=f"rev {revision}", target=OPS)
    laned.accept("x1", title="other chat", target=OTHER)
    events.drain()
    assert [(e["op"], e["title"]) for e in feishu.log if e["receive_id"] == "oc_ops"] == [("send", "rev 3")]
    assert job_statuses("progress/chat_id:oc_ops") == ["superseded", "superseded", "succeeded"]
    assert titles(feishu, "oc_other") == ["other chat"]


def test_an_event_id_is_the_services_across_its_lanes(laned: Partner) -> None:
    laned.accept("once", target=OPS)
    reused = laned.post("once", target=OTHER)
    assert reused.status_code == 409 and reused.json()["data"]["reason"] == "event_id_reused"
    assert job_statuses("progress/chat_id:oc_other") == []


def test_operators_see_and_resolve_jobs_by_their_lane_and_a_malformed_job_id_is_not_found(
    laned: Partner, events: EventsPipeline, feishu: FakeFeishu
) -> None:
    block_the_ops_chat(laned, events, feishu)
    ((job, head),) = operations().blocked()
    assert (job.job_id, job.lane.key, head.next_seq - job.seq) == (
        "progress/chat_id:oc_ops:1",
        "progress/chat_id:oc_ops",
        1,
    )
    assert operations().get("progress/chat_id:oc_other:1").status is JobStatus.SUCCEEDED
    for malformed in (
        "progress/:1",
        "/chat_id:oc_ops:1",
        "progress/oc_ops:1",
        "progress/chat_id:oc_ops:x",
        "p" * 400 + ":1",
    ):
        with pytest.raises(NotFound):
            operations().get(malformed)
