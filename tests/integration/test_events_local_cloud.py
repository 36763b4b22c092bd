"""External events through the local cloud (CONTRACTS §3): partners post over HTTP, the stream outbox and the
dispatch queue run as their event source mappings do, and cards land in the fake Feishu."""

from __future__ import annotations

import json
import random
import secrets
import subprocess
import sys
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from herald.auth.dynamo import DynamoServiceKeyStore
from herald.auth.service_keys import ServiceKeys
from tests.support.local_cloud import REPO, LocalCloudProcess
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

    def post(self, n: int) -> None:
        body = {
            "event_id": f"{self.service_id}-{n}",
            "event_type": "job.progress",
            "data": {
                "title": f"{self.service_id} #{n}",
                "status": "running",
                "summary": f"step {n}",
                "target": {"receive_id": self.chat, "receive_id_type": "chat_id"},
            },
        }
        response = self.http.post("/events/external", json=body)
        assert response.status_code == 202, response.text


def cards(cloud: LocalCloudProcess) -> list[dict[str, Any]]:
    return httpx.get(f"{cloud.fake_url('feishu')}/__fake/messages").json()  # type: ignore[no-any-return]


def titles_for(cloud: LocalCloudProcess, partner: Partner) -> list[str]:
    return [card["title"] for card in cards(cloud) if card["receive_id"] == partner.chat]


def herald_ops(cloud: LocalCloudProcess, *args: str) -> list[dict[str, Any]]:
    command = [sys.executable, "-m", "herald_ops.cli", "events", *args, "--state-file", str(cloud.state_file)]
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


def test_unknown_blocks_its_service_only_until_an_operator_requeues_it(cloud: LocalCloudProcess) -> None:
    stuck, free = Partner(cloud, "stuck"), Partner(cloud, "free")
    httpx.post(
        f"{cloud.fake_url('feishu')}/__fake/faults", json=[{"op": "send", "after_send": True}]
    )  # the next send arrives, but its answer is lost
    stuck.post(0)
    eventually(lambda: _assert_unknown(cloud, stuck))
    for n in range(1, 4):
        stuck.post(n)
    for n in range(3):
        free.post(n)
    eventually(lambda: _assert_equal(titles_for(cloud, free), [f"{free.service_id} #{n}" for n in range(3)]))
    assert titles_for(cloud, stuck) == [f"{stuck.service_id} #0"]
    (blocked,) = [row for row in herald_ops(cloud, "blocked") if row["service_id"] == stuck.service_id]
    assert blocked["status"] == "unknown" and blocked["waiting_behind"] == 3 and blocked["why"]

    (resolved,) = herald_ops(
        cloud, "resolve", blocked["job_id"], "--requeue", "--by", "oncall", "--note", "not in Feishu"
    )
    assert resolved["resolutions"][-1]["by"] == "oncall"
    expected = [f"{stuck.service_id} #{n}" for n in range(4)]
    eventually(lambda: _assert_equal(titles_for(cloud, stuck), expected))  # the resend was deduplicated by uuid
    assert not [row for row in herald_ops(cloud, "unknown") if row["service_id"] == stuck.service_id]


def _assert_unknown(cloud: LocalCloudProcess, partner: Partner) -> None:
    rows = [row for row in herald_ops(cloud, "unknown") if row["service_id"] == partner.service_id]
    assert len(rows) == 1, rows


def _assert_equal(actual: Any, expected: Any) -> None:
    assert actual == expected
