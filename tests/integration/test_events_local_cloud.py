"""External events through the local cloud (contract §3): partners post over HTTP, the stream outbox and the
dispatch queue run as their event source mappings do, and cards land in the fake Feishu."""

from __future__ import annotations

import json
import random
import secrets
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from herald.auth.dynamo import DynamoServiceKeyStore
from herald.auth.service_keys import ServiceKeys
from tests.support.local_cloud import REPO, LocalCloudProcess, running_cloud
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration
PER_SERVICE = 6


class Partner:
    def __init__(self, cloud: LocalCloudProcess, name: str) -> None:
        self.service_id = f"{name}-{secrets.token_hex(3)}"
        self.chat = f"oc_{self.service_id}"
        keys = ServiceKeys(DynamoServiceKeyStore(cloud.resource("ServiceKeysTable"), cloud.client("dynamodb")))
        key, _ = keys.create_key(self.service_id, ["/events/external"], targets=[f"chat_id:{self.chat}"])
        self.http = httpx.Client(base_url=cloud.http_url, headers={"Authorization": f"Bearer {key}"}, timeout=30)

    def post(self, n: int, card: str | None = None, revision: int | None = None) -> None:
        body: dict[str, Any] = {
            "event_id": f"{self.service_id}-{n}",
            "event_type": "job.progress",
            "data": {
                "title": f"{self.service_id} #{n}",
                "status": "running",
                "summary": f"step {n}",
                "target": {"receive_id": self.chat, "receive_id_type": "chat_id"},
            },
        }
        if card is not None:
            body["data"].update({"event_id": card, "revision": revision})
        response = self.http.post("/events/external", json=body)
        assert response.status_code == 202, response.text


def cards(cloud: LocalCloudProcess) -> list[dict[str, Any]]:
    return httpx.get(f"{cloud.fake_url('feishu')}/__fake/messages").json()  # type: ignore[no-any-return]


def titles_for(cloud: LocalCloudProcess, partner: Partner) -> list[str]:
    return [card["title"] for card in cards(cloud) if card["receive_id"] == partner.chat]


def herald_ops(cloud: LocalCloudProcess, *args: str) -> list[dict[str, Any]]:
    command = [sys.executable, "-m", "herald_ops.cli", "events", *args, "--state-file", str(cloud.state_file), "--json"]
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO, check=True, timeout=60)
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def test_events_of_6_services_with_transient_failures_arrive_once_each_in_receive_order(
    cloud: LocalCloudProcess,
) -> None:
    """36 events through the whole local cloud (the 300-event run is in process: test_events_at_scale.py)."""
    partners = [Partner(cloud, f"svc{index}") for index in range(6)]
    fake = cloud.fake_url("feishu")
    httpx.post(f"{fake}/__fake/chaos", json={"rate": 0.25, "seed": 5})
    try:
        order = [(partner, n) for partner in partners for n in range(PER_SERVICE)]
        random.Random(3).shuffle(order)  # interleave the services, keeping each one's own order below
        by_partner: dict[Partner, list[int]] = defaultdict(list)
        for partner, _ in order:
            by_partner[partner].append(len(by_partner[partner]))
        with ThreadPoolExecutor(max_workers=6) as pool:
            list(pool.map(lambda p: [p.post(n) for n in by_partner[p]], partners))

        def all_delivered() -> None:
            for partner in partners:
                assert len(titles_for(cloud, partner)) >= PER_SERVICE, partner.service_id

        eventually(all_delivered, timeout=180)
    finally:
        httpx.post(f"{fake}/__fake/chaos", json={"rate": 0})
    stats = httpx.get(f"{fake}/__fake/stats").json()
    assert stats["refused"] > 0, "the run should have met transient failures"
    for partner in partners:
        assert titles_for(cloud, partner) == [f"{partner.service_id} #{n}" for n in range(PER_SERVICE)]


@pytest.mark.parametrize(
    "fault",
    [
        pytest.param({"op": "send", "hang": 6.5}, id="accepted-never-answered"),
        pytest.param({"op": "send", "after_send": True, "answer": {"msg": "internal error"}}, id="500-without-a-code"),
    ],
)
def test_an_unknown_send_heals_itself_one_card_per_card_id_and_later_revisions_update_it(
    cloud: LocalCloudProcess, fault: dict[str, Any]
) -> None:
    """Feishu does the send but its answer never comes (past the client's 5 s timeout) or is a 500 without an
    error code: the job is UNKNOWN, blocks only its service, and Herald settles it by resending with the
    job's uuid inside Feishu's window; nobody runs the runbook."""
    stuck, free = Partner(cloud, "stuck"), Partner(cloud, "free")
    httpx.post(f"{cloud.fake_url('feishu')}/__fake/faults", json=[fault])
    stuck.post(0, card="build", revision=1)
    eventually(lambda: _assert_equal(len(titles_for(cloud, stuck)), 1))  # Feishu took it (and the fault with it)
    for n in range(1, 3):
        stuck.post(n, card="build", revision=n + 1)
    for n in range(3):
        free.post(n)
    eventually(lambda: _assert_equal(titles_for(cloud, free), [f"{free.service_id} #{n}" for n in range(3)]))
    last = f"{stuck.service_id} #2"
    eventually(lambda: _assert_equal(titles_for(cloud, stuck)[-1:], [last]), timeout=60)
    log = [card for card in cards(cloud) if card["receive_id"] == stuck.chat]
    # Revision 2 is sent unless revision 3 was already waiting behind it when its turn came (superseded).
    second = _job(cloud, stuck, 2)
    middle = [] if second["status"] == "superseded" else [f"{stuck.service_id} #1"]
    assert [card["title"] for card in log] == [f"{stuck.service_id} #0", *middle, last]
    assert [card["op"] for card in log] == ["send"] + ["update"] * (len(log) - 1)  # one message for the card id
    assert len({card["message_id"] for card in log}) == 1
    assert not [row for row in herald_ops(cloud, "unknown") if row["service_id"] == stuck.service_id]
    settled = _job(cloud, stuck, 1)
    assert settled["status"] == "succeeded" and settled["message_id"] == log[0]["message_id"]
    assert settled["resolutions"][-1]["by"] == "herald" and settled["evidence"]


def _job(cloud: LocalCloudProcess, partner: Partner, seq: int) -> dict[str, Any]:
    from herald.events.dynamo import DynamoEventStore
    from herald.events.operations import describe

    job = DynamoEventStore(cloud.resource("ExternalEventsTable"), cloud.client("dynamodb")).job(partner.service_id, seq)
    assert job is not None
    return describe(job)


def _assert_equal(actual: Any, expected: Any) -> None:
    assert actual == expected


@pytest.fixture(scope="module")
def closed_window_cloud(
    tmp_path_factory: pytest.TempPathFactory, dynamodb_endpoint: str | None, sqs_endpoint: str | None
) -> Iterator[LocalCloudProcess]:
    """A local cloud configured as if Feishu's uuid window had already closed for every send."""
    env = {"HERALD_EVENTS_SEND_DEDUP_WINDOW_SECONDS": "0"}
    yield from running_cloud(tmp_path_factory, "closed-window", dynamodb_endpoint, sqs_endpoint, env)


def test_past_the_uuid_window_an_unknown_send_waits_for_an_operator_with_its_evidence(
    closed_window_cloud: LocalCloudProcess,
) -> None:
    cloud = closed_window_cloud
    stuck = Partner(cloud, "late")
    httpx.post(f"{cloud.fake_url('feishu')}/__fake/faults", json=[{"op": "send", "after_send": True}])
    stuck.post(0)
    stuck.post(1)

    def left_to_an_operator() -> dict[str, Any]:
        rows = [row for row in herald_ops(cloud, "unknown") if row["service_id"] == stuck.service_id]
        assert len(rows) == 1 and rows[0]["awaiting_operator"] is True, rows
        return rows[0]

    row = eventually(left_to_an_operator)
    assert "uuid window" in row["evidence"][-1] and row["waiting_behind"] == 1
    assert titles_for(cloud, stuck) == [f"{stuck.service_id} #0"]  # never sent a second time
    (resolved,) = herald_ops(cloud, "resolve", row["job_id"], "--sent", "om_found", "--by", "oncall")
    assert resolved["resolutions"][-1]["by"] == "oncall"
    eventually(lambda: _assert_equal(titles_for(cloud, stuck), [f"{stuck.service_id} #{n}" for n in range(2)]))


def test_a_service_ordering_by_target_blocks_only_the_refused_chats_lane_and_the_cli_shows_and_resolves_it(
    cloud: LocalCloudProcess,
) -> None:
    """`keys create --order target`: one lane per chat. Feishu refuses the first card to one chat (the job
    fails); the other chat's events go on; `events blocked` names the lane; skipping the job drains it."""
    service = f"lanes-{secrets.token_hex(3)}"
    blocked, free = f"oc_{service}_a", f"oc_{service}_b"
    command = [
        sys.executable,
        "-m",
        "herald_ops.cli",
        "keys",
        "create",
        "--service",
        service,
        "--cap",
        "/events/external",
    ]
    command += ["--target", f"chat_id:{blocked}", "--target", f"chat_id:{free}", "--order", "target"]
    command += ["--state-file", str(cloud.state_file), "--json"]
    created = subprocess.run(command, capture_output=True, text=True, cwd=REPO, check=True)
    assert '"order": "target"' in created.stderr
    http = httpx.Client(
        base_url=cloud.http_url, headers={"Authorization": f"Bearer {created.stdout.strip()}"}, timeout=30
    )

    def post(n: int, chat: str) -> None:
        data = {
            "title": f"{service} #{n}",
            "status": "running",
            "target": {"receive_id": chat, "receive_id_type": "chat_id"},
        }
        response = http.post(
            "/events/external", json={"event_id": f"{service}-{n}", "event_type": "job.progress", "data": data}
        )
        assert response.status_code == 202, response.text

    def titles(chat: str) -> list[str]:
        return [card["title"] for card in cards(cloud) if card["receive_id"] == chat]

    httpx.post(f"{cloud.fake_url('feishu')}/__fake/faults", json=[{"op": "send", "code": 230001, "status": 400}])
    post(0, blocked)
    lane = f"{service}/chat_id:{blocked}"

    def blocked_row() -> dict[str, Any]:
        rows = [row for row in herald_ops(cloud, "blocked") if row["service_id"] == service]
        assert len(rows) == 1, rows
        return rows[0]

    row = eventually(blocked_row)
    assert (row["lane"], row["job_id"], row["status"]) == (lane, f"{lane}:1", "failed")
    post(1, blocked)
    for n in range(2, 5):
        post(n, free)
    eventually(lambda: _assert_equal(titles(free), [f"{service} #{n}" for n in range(2, 5)]))
    assert titles(blocked) == [] and eventually(blocked_row)["waiting_behind"] == 1
    (skipped,) = herald_ops(cloud, "resolve", row["job_id"], "--skip", "--by", "oncall")
    assert skipped["status"] == "skipped"
    eventually(lambda: _assert_equal(titles(blocked), [f"{service} #1"]))
