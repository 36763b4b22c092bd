"""Key lifecycle through the operator's CLI against the running local cloud, and the rate-limit counter on
the real engine: many limiter instances (as many Lambda instances) never let more through than the limit."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from herald.errors import RateLimited
from herald.limits.dynamo import DynamoCounter
from herald.limits.service import Limit, RateLimiter
from tests.support.local_cloud import REPO, LocalCloudProcess
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration


def keys_cli(cloud: LocalCloudProcess, *args: str) -> str:
    command = [sys.executable, "-m", "herald_ops.cli", "keys", *args, "--state-file", str(cloud.state_file), "--json"]
    result = subprocess.run(command, check=False, capture_output=True, text=True, cwd=REPO, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def whoami(cloud: LocalCloudProcess, key: str) -> httpx.Response:
    return httpx.get(f"{cloud.http_url}/internal/v1/whoami", headers={"Authorization": f"Bearer {key}"}, timeout=30)


def test_keys_are_created_listed_rotated_and_revoked_with_the_cli(cloud: LocalCloudProcess) -> None:
    service = f"cli-{int(time.time() * 1000) % 10**9}"
    old = keys_cli(cloud, "create", "--service", service, "--cap", "/internal/v1", "--app-code", "acme").strip()
    old_id = old.split("_")[1]
    assert whoami(cloud, old).json()["data"]["app_codes"] == ["acme"]
    (listed,) = [json.loads(line) for line in keys_cli(cloud, "list", "--service", service).splitlines()]
    assert listed["key_id"] == old_id and listed["capabilities"] == ["/internal/v1"]
    assert "secret_hash" not in listed and old.split("_", 2)[2] not in json.dumps(listed)
    eventually(lambda: _assert(json.loads(keys_cli(cloud, "list", "--service", service))["last_used_at_ms"]))

    new = keys_cli(cloud, "rotate", old_id).strip()
    assert whoami(cloud, new).status_code == 200 and whoami(cloud, old).status_code == 200  # both, until revoked
    revoked = json.loads(keys_cli(cloud, "revoke", old_id))
    assert revoked["revoked_at_ms"] is not None
    eventually(lambda: _assert(whoami(cloud, old).status_code == 401), timeout=10)  # within the cache time
    assert whoami(cloud, new).json()["data"]["app_codes"] == ["acme"]
    rows = [json.loads(line) for line in keys_cli(cloud, "list", "--service", service).splitlines()]
    assert {row["key_id"]: row["rotated_from"] for row in rows} == {old_id: None, new.split("_")[1]: old_id}


def _assert(condition: Any) -> None:
    assert condition


def instances(cloud: LocalCloudProcess, limit: Limit, subject: str, now: list[int]) -> Callable[[int], int]:
    """One Lambda instance's limiter on the real table, at the test's time: how many of its 10 tries pass."""
    table = cloud.resource("RateLimitsTable")

    def instance_hits(_: int) -> int:
        limiter = RateLimiter(DynamoCounter(table, cloud.client("dynamodb")), clock=lambda: now[0])
        allowed = 0
        for _ in range(10):
            try:
                limiter.check(limit, subject)
                allowed += 1
            except RateLimited:
                pass
        return allowed

    return instance_hits


def test_limiters_in_many_instances_let_exactly_the_limit_through_on_the_real_engine(
    cloud: LocalCloudProcess,
) -> None:
    instance_hits = instances(cloud, Limit("test", per_window=20), f"burst-{time.time_ns()}", [1_800_000_000_000])
    with ThreadPoolExecutor(max_workers=5) as pool:
        allowed = sum(pool.map(instance_hits, range(5)))
    assert allowed == 20


def test_the_sliding_window_holds_across_a_minute_boundary_on_the_real_engine(cloud: LocalCloudProcess) -> None:
    """Fixed windows let the limit through on each side of a clock minute; the sliding one about once."""
    now = [1_800_000_000_000 + 59_000]
    instance_hits = instances(cloud, Limit("test", per_window=20), f"edge-{time.time_ns()}", now)
    with ThreadPoolExecutor(max_workers=4) as pool:
        before = sum(pool.map(instance_hits, range(4)))
        now[0] += 1_500  # 0.5 s into the next minute
        after = sum(pool.map(instance_hits, range(4)))
        now[0] += 30_000
        halfway = sum(pool.map(instance_hits, range(4)))
    assert (before, after, halfway) == (20, 0, 10)
