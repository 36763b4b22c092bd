"""The health gauges function publishes what waits for an operator as the metrics the template's alarms
watch: an UNKNOWN job (and its service's blocked age), a push that failed for good, a turn not handed over."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from herald.auth.service_keys import ServiceKeys
from herald_dev.fakes.feishu import FakeFeishu
from herald_dev.fakes.tencent_im import FakeTencentIm
from tests.functional.test_confirms_flow import invite
from tests.functional.test_events import Partner
from tests.support.aws import load_function
from tests.support.container import reconfigure, shipped
from tests.support.events import EventsPipeline
from tests.support.lambda_context import FakeLambdaContext
from tests.support.pipeline import ConfirmPipeline
from tests.support.turns import TurnsHarness


def emitted(output: str) -> dict[str, float]:
    """The gauges' values in the EMF lines Powertools printed."""
    values: dict[str, float] = {}
    for line in output.splitlines():
        if '"_aws"' in line:
            record = json.loads(line)
            for definition in record["_aws"]["CloudWatchMetrics"][0]["Metrics"]:
                value = record[definition["Name"]]
                values[definition["Name"]] = value[-1] if isinstance(value, list) else value
    return values


def publish(capsys: pytest.CaptureFixture[str]) -> dict[str, float]:
    capsys.readouterr()
    returned = load_function("health_gauges").handler({"source": "aws.events"}, FakeLambdaContext())
    published = emitted(capsys.readouterr().out)
    assert {name: published[name] for name in returned} == returned  # (besides what the in-process app added)
    return returned  # type: ignore[no-any-return]


def test_a_healthy_stack_publishes_zeros(aws: object, capsys: pytest.CaptureFixture[str]) -> None:
    assert set(publish(capsys).values()) == {0}


def test_unknown_job_failed_push_and_unsent_turn_show_in_the_gauges(
    api: TestClient,
    service_keys: ServiceKeys,
    events: EventsPipeline,
    feishu: FakeFeishu,
    pipeline: ConfirmPipeline,
    fake_im: FakeTencentIm,
    turns: TurnsHarness,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    partner = Partner(api, service_keys, "scheduler", ["chat_id:oc_ops"])
    healing = Partner(api, service_keys, "billing", ["chat_id:oc_ops"])
    reconfigure(events_send_dedup_window_seconds=0)  # past Feishu's uuid window while it is 0
    feishu.queue_faults({"op": "send", "after_send": True})
    partner.accept("e1")
    partner.accept("e2")
    events.drain()  # e1 is UNKNOWN for an operator; e2 waits behind it
    reconfigure(**shipped("HERALD_EVENTS_SEND_DEDUP_WINDOW_SECONDS"))
    feishu.queue_faults({"op": "send", "after_send": True})
    healing.accept("b1")
    # b1 is UNKNOWN, and Herald settles it after a backoff; nothing drains the events queue after this, so b1 is
    # still healing when the gauges are read, however long the rest takes (a drain after it could settle it)
    events.drain()
    fake_im.queue_faults({"error_code": 20003, "info": "invalid To_Account"})
    invite(api)
    pipeline.drain()  # the confirm push fails for good
    turns.session()
    turns.post("alice", "hello")
    turns.stream.read()  # the outbox never ran
    reconfigure(turns_janitor_grace_seconds=-120)  # ... and the janitor's time is long past
    gauges = publish(capsys)
    assert gauges["EventsUnknownJobs"] == 1 and gauges["EventsFailedJobs"] == 0
    assert gauges["EventsUnknownSettling"] == 1  # not an operator's: no alarm for it
    assert gauges["EventsBlockedServices"] == 2 and gauges["EventsOldestBlockedAge"] >= 0
    assert gauges["ImPushFailedDeliveries"] == 1
    assert gauges["TurnsStuck"] == 1
    assert gauges["ConfirmsStuck"] == 0


def test_a_service_ordering_by_target_counts_one_blocked_lane_per_blocked_chat(
    api: TestClient,
    service_keys: ServiceKeys,
    events: EventsPipeline,
    feishu: FakeFeishu,
    capsys: pytest.CaptureFixture[str],
) -> None:
    laned = Partner(api, service_keys, "progress", ["chat_id:oc_a", "chat_id:oc_b", "chat_id:oc_c"], order="target")
    feishu.queue_faults(*[{"op": "send", "code": 230001, "status": 400}] * 2)  # refused: each job fails
    for chat in ("oc_a", "oc_b"):
        laned.accept(f"to-{chat}", target={"receive_id": chat, "receive_id_type": "chat_id"})
        events.drain()
    laned.accept("to-oc_c", target={"receive_id": "oc_c", "receive_id_type": "chat_id"})
    events.drain()
    gauges = publish(capsys)
    assert (gauges["EventsBlockedServices"], gauges["EventsBlockedLanes"], gauges["EventsFailedJobs"]) == (1, 2, 2)
    assert [entry["receive_id"] for entry in feishu.log] == ["oc_c"]  # the third chat's lane ran
