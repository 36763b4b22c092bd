"""Issue 48, item 3, on moto: `herald-ops find ID` names what any id Herald issued or recorded is, without being
told its kind, and tells its timeline (created, each delivery attempt, decisions, resolutions)."""

from __future__ import annotations

from typing import Any

import boto3
from fastapi.testclient import TestClient
from herald_ops.find import SEARCHED, Finder

from herald.container import current
from herald_dev.fakes.feishu import FakeFeishu
from herald_dev.fakes.tencent_im import FakeTencentIm
from tests.functional.test_confirms_flow import accept, confirm_ids, invite
from tests.functional.test_events import Partner
from tests.functional.test_inbox import notify
from tests.support.events import EventsPipeline
from tests.support.pipeline import ConfirmPipeline
from tests.support.turns import TurnsHarness


def find(wanted: str, service: str | None = None) -> list[dict[str, Any]]:
    settings = current().settings
    finder = Finder(boto3.client("dynamodb"), {name: getattr(settings, name) for name in SEARCHED})
    return [found.view() for found in finder.find(wanted, service)]


def whats(found: dict[str, Any]) -> list[str]:
    return [moment["what"] for moment in found["timeline"]]


def test_a_confirm_its_invitation_and_its_im_push_are_found_by_their_ids_with_their_timelines(
    pipeline: ConfirmPipeline, fake_im: FakeTencentIm
) -> None:
    from herald.api.app import create_app

    api = TestClient(create_app())
    invitation = invite(api)
    pipeline.drain()
    (confirm_id,) = confirm_ids(fake_im)
    accept(api, confirm_id)
    pipeline.drain()
    found_confirm = find(confirm_id)
    by_confirm = {found["kind"]: found for found in found_confirm}
    assert [found["kind"] for found in found_confirm].count("confirm push (Tencent IM)") == 2  # the card, its update
    assert {"confirm", "confirm's source event"} <= by_confirm.keys()
    assert by_confirm["confirm"]["status"] == "accepted"
    assert {"created", "processed"} <= set(whats(by_confirm["confirm"]))
    assert "sent" in whats(by_confirm["confirm push (Tencent IM)"])
    msg_random = str(by_confirm["confirm push (Tencent IM)"]["msg_random"])
    assert [found["kind"] for found in find(msg_random)] == ["confirm push (Tencent IM)"]
    found_invitation = {found["kind"]: found for found in find(invitation["invitation_id"])}
    assert "decided" in whats(found_invitation["invitation"])


def test_an_event_is_found_by_its_job_id_by_its_event_id_with_its_service_and_by_its_feishu_message_id(
    api: TestClient, service_keys: Any, events: EventsPipeline, feishu: FakeFeishu
) -> None:
    partner = Partner(api, service_keys, "scheduler", ["chat_id:oc_ops"])
    partner.accept("e-find-1", title="job 1")
    events.drain()
    by_event = find("e-find-1", service="scheduler")
    assert [found["kind"] for found in by_event] == ["event record", "event job"]
    job = by_event[1]
    assert job["status"] == "succeeded" and any(what.startswith("send call: done") for what in whats(job))
    by_message = find(str(job["message_id"]))
    assert [found["key"] for found in by_message if found["kind"] == "event job"] == [job["key"]]
    assert find("scheduler:1")[0]["key"] == job["key"]
    assert [found["kind"] for found in find("e-find-1")] == ["event job"]  # without its service: looked for
    other = Partner(api, service_keys, "billing", ["chat_id:oc_ops"])
    other.accept("e-find-1", title="another service's event of the same id")
    events.drain()
    assert [found["key"] for found in find("e-find-1", service="scheduler")] == [
        "EVT#scheduler#e-find-1/EVENT",
        "SVC#scheduler/JOB#000000000001",
    ]
    assert len(find("e-find-1")) == 2  # without a service: each service's job


def test_a_notification_a_turn_and_a_queued_message_are_found_by_their_ids(
    api: TestClient, producer: dict[str, str], turns: TurnsHarness
) -> None:
    notification = notify(api, producer)
    found = {found["kind"]: found for found in find(notification["notification_id"])}
    assert found.keys() == {"notification", "notification's dedup key"}
    assert whats(found["notification"]) == ["created"]
    assert turns.session().status_code == 200
    first = turns.post("alice", "hello").json()["data"]
    (turn,) = turns.next_turns()
    queued = turns.post("bob", "and this").json()["data"]  # mid-turn: queued
    assert "turn-queue message" in [f["kind"] for f in find(queued["message_id"])]
    kinds = [f["kind"] for f in find(turn["turn_id"])]
    assert "agent turn" in kinds and "session log entry" in kinds
    assert find(first["message_id"])


def test_an_id_nobody_issued_finds_nothing(aws: Any) -> None:
    assert find("cfm_0000000000000000000000000000dead") == []
