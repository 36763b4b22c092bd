"""Issue 48, item 1, on moto: an operator pauses a partner service's deliveries (or one target's lane) with
`herald-ops events pause`: intake answers 202 as always, nothing reaches Feishu, the lanes it meets are held off
their queue (nothing spends receives or dead-letters however long), and `events resume` delivers what waited in
order, at once. A pause of one target leaves the service's other lanes moving."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from herald_ops.cli import main

from herald.auth.service_keys import ServiceKeys
from herald.container import Container, current
from herald.holds.wiring import holds
from herald_dev.fakes.feishu import FakeFeishu
from tests.functional.test_events import Partner, titles
from tests.support.container import reconfigure
from tests.support.deployed import deployed_stack
from tests.support.deployed import ops as deployed_ops
from tests.support.events import EventsPipeline

OTHER = {"receive_id": "oc_other", "receive_id_type": "chat_id"}


@pytest.fixture(autouse=True)
def pauses_read_at_once(events: EventsPipeline) -> None:
    reconfigure(pauses_cache_seconds=0)


@pytest.fixture
def partner(api: TestClient, service_keys: ServiceKeys) -> Partner:
    return Partner(api, service_keys, "scheduler", ["chat_id:oc_ops"])


@pytest.fixture
def by_target(api: TestClient, service_keys: ServiceKeys) -> Partner:
    return Partner(api, service_keys, "deploys", ["chat_id:oc_ops", "chat_id:oc_other"], order="target")


STACK = "herald-prod"


def test_a_paused_service_keeps_accepting_sends_nothing_and_delivers_in_order_on_resume(
    partner: Partner, events: EventsPipeline, feishu: FakeFeishu
) -> None:
    holds().pause("service#scheduler", "ana", "chat migration")
    for n in range(1, 4):
        partner.accept(f"e{n}", title=f"job {n}")  # 202: intake goes on
    events.drain()
    assert feishu.log == [] and feishu.stats["token_requests"] == 0
    assert events.release_deferred() == 0  # held off the queue: nothing waits to come back
    ((pause, lanes_held),) = holds().paused()
    assert (pause.key, pause.by, pause.note, lanes_held) == ("service#scheduler", "ana", "chat migration", 1)
    assert holds().resume("service#scheduler") == 1
    events.drain()
    assert titles(feishu) == ["job 1", "job 2", "job 3"]
    assert holds().paused() == []


def test_a_paused_target_holds_its_lane_and_leaves_the_services_other_lanes_moving(
    by_target: Partner, events: EventsPipeline, feishu: FakeFeishu
) -> None:
    holds().pause("lane#deploys/chat_id:oc_ops", "ana", "")
    by_target.accept("d1", title="to ops")
    by_target.accept("d2", title="to other", target=OTHER)
    events.drain()
    assert titles(feishu) == [] and titles(feishu, "oc_other") == ["to other"]
    holds().resume("lane#deploys/chat_id:oc_ops")
    events.drain()
    assert titles(feishu) == ["to ops"]


def test_a_pause_made_while_a_worker_held_an_old_reading_is_still_honoured_and_a_resume_it_missed_too(
    partner: Partner, events: EventsPipeline, feishu: FakeFeishu
) -> None:
    """A worker keeps the pauses it read for a few seconds (HERALD_PAUSES_CACHE_SECONDS). A lane it holds after a
    resume it had not seen yet is put back by that worker itself: its hold re-reads the pause."""
    reconfigure(pauses_cache_seconds=3600)
    holds().pause("service#scheduler", "ana", "")
    partner.accept("e1", title="job 1")
    events.drain()  # this process read the pause: held
    assert feishu.log == []
    operator = holds(Container(current().settings))  # herald-ops, in a process of its own
    assert operator.resume("service#scheduler") == 1  # the worker's reading still says paused
    partner.accept("e2", title="job 2")
    events.drain()  # the worker holds the lane again, re-reads, finds no pause and puts it back itself
    assert titles(feishu) == ["job 1", "job 2"] and holds().paused() == []


@pytest.fixture
def deployed() -> Iterator[None]:
    with deployed_stack(STACK):
        yield


def ops(capsys: pytest.CaptureFixture[str], *args: str, code: int = 0) -> list[dict[str, object]]:
    return deployed_ops(capsys, STACK, *args, code=code)


def test_the_operator_pauses_lists_and_resumes_with_herald_ops(
    deployed: None, capsys: pytest.CaptureFixture[str]
) -> None:
    (paused,) = ops(capsys, "events", "pause", "--service", "deploys", "--target", "chat_id:oc_ops", "--note", "move")
    assert (paused["paused"], paused["note"]) == ("lane#deploys/chat_id:oc_ops", "move")
    ops(capsys, "events", "pause", "--service", "scheduler", "--by", "ana")
    (again,) = ops(capsys, "events", "pause", "--service", "scheduler", "--by", "bo")  # the table's condition holds
    assert again["by"] == "ana"
    listed = ops(capsys, "events", "paused")
    assert [(row["paused"], row["held"]) for row in listed] == [
        ("lane#deploys/chat_id:oc_ops", 0),
        ("service#scheduler", 0),
    ]
    assert ops(capsys, "events", "resume", "--service", "scheduler") == [
        {"resumed": "service#scheduler", "released": 0}
    ]
    assert [row["paused"] for row in ops(capsys, "events", "paused")] == ["lane#deploys/chat_id:oc_ops"]


def test_a_tenants_pushes_are_paused_and_resumed_with_herald_ops_confirms(
    deployed: None, capsys: pytest.CaptureFixture[str]
) -> None:
    (paused,) = ops(capsys, "confirms", "pause", "--tenant", "acme", "--note", "app re-approval", "--by", "ana")
    assert (paused["paused"], paused["by"], paused["note"]) == ("tenant#acme", "ana", "app re-approval")
    assert [row["paused"] for row in ops(capsys, "confirms", "paused")] == ["tenant#acme"]
    assert [row["paused"] for row in ops(capsys, "events", "paused")] == ["tenant#acme"]  # one list of pauses
    assert ops(capsys, "confirms", "resume", "--tenant", "acme") == [{"resumed": "tenant#acme", "released": 0}]
    assert main(["confirms", "resume", "--tenant", "acme", "--stack", STACK]) == 2  # not paused any more


def test_resuming_what_is_not_paused_is_refused_and_a_bad_target_is_a_usage_error(
    deployed: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["events", "resume", "--service", "ghost", "--stack", STACK]) == 2
    assert "nothing is paused" in capsys.readouterr().err
    assert main(["events", "pause", "--service", "svc", "--target", "oc_no_type", "--stack", STACK]) == 2
    assert "receive_id_type:receive_id" in capsys.readouterr().err
    assert ops(capsys, "events", "paused") == []


def status_of(partner: Partner, event_id: str) -> str:
    response = partner.api.get(f"/events/external/{event_id}", headers=partner.headers)
    assert response.status_code == 200, response.text
    return str(response.json()["data"]["status"])


def listed_as(partner: Partner, status: str) -> list[str]:
    response = partner.api.get("/events/external", params={"status": status}, headers=partner.headers)
    assert response.status_code == 200, response.text
    return [item["event_id"] for item in response.json()["data"]["items"]]


def test_a_held_event_reads_held_in_its_partners_status_api_and_goes_on_to_succeeded_after_resume(
    partner: Partner, events: EventsPipeline, feishu: FakeFeishu
) -> None:
    partner.accept("e1", title="job 1")
    assert status_of(partner, "e1") == "queued"
    holds().pause("service#scheduler", "ana", "")
    events.drain()
    assert status_of(partner, "e1") == "held" and feishu.log == []
    assert listed_as(partner, "held") == ["e1"] and listed_as(partner, "queued") == []
    holds().resume("service#scheduler")
    events.drain()
    assert status_of(partner, "e1") == "succeeded" and listed_as(partner, "held") == []


def test_a_tenant_pause_holds_every_service_of_the_tenant_until_its_resume(
    partner: Partner, by_target: Partner, events: EventsPipeline, feishu: FakeFeishu
) -> None:
    holds().pause("events-tenant#lalu", "ana", "app re-approval")
    partner.accept("e1", title="from scheduler")
    by_target.accept("d1", title="to other", target=OTHER)
    events.drain()
    assert feishu.log == [] and status_of(by_target, "d1") == "held"
    assert [(pause.key, held) for pause, held in holds().paused()] == [("events-tenant#lalu", 2)]
    assert holds().resume("events-tenant#lalu") == 2
    events.drain()
    assert titles(feishu) == ["from scheduler"] and titles(feishu, "oc_other") == ["to other"]


def test_events_pause_takes_a_tenant_or_a_service_and_refuses_both_or_neither(
    deployed: None, capsys: pytest.CaptureFixture[str]
) -> None:
    (paused,) = ops(capsys, "events", "pause", "--tenant", "acme")
    assert paused["paused"] == "events-tenant#acme"
    assert main(["events", "pause", "--tenant", "acme", "--service", "s", "--stack", STACK]) == 2
    assert main(["events", "pause", "--stack", STACK]) == 2
    assert main(["events", "pause", "--tenant", "acme", "--target", "chat_id:oc_1", "--stack", STACK]) == 2
    assert main(["events", "pause", "--service", "a/b", "--stack", STACK]) == 2
    assert main(["events", "pause", "--service", "s" * 300, "--stack", STACK]) == 2
    assert ops(capsys, "events", "resume", "--tenant", "acme") == [{"resumed": "events-tenant#acme", "released": 0}]
