"""300 events over 6 services, posted concurrently, dispatched by 4 concurrent workers while the provider
fails at random (rate limits: nothing done, retried): each service's cards arrive in exact receive order,
and none twice. In process on moto, through the real HTTP app and function entry points."""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi.testclient import TestClient

from herald.auth.service_keys import ServiceKeys
from herald_dev.fakes.feishu import FakeFeishu
from tests.functional.test_events import Partner
from tests.support.events import EventsPipeline

pytestmark = pytest.mark.slow  # about two minutes on one core: `make test` runs it beside the crash soak
SERVICES, PER_SERVICE = 6, 50


def test_300_events_over_6_services_with_random_transient_failures_arrive_once_each_in_order(
    api: TestClient, service_keys: ServiceKeys, events: EventsPipeline, feishu: FakeFeishu
) -> None:
    partners = [Partner(api, service_keys, f"svc{i}", [f"chat_id:oc_svc{i}"]) for i in range(SERVICES)]
    feishu._chaos = (0.15, random.Random(11))
    posted = threading.Event()

    def post_all(index: int) -> None:
        for n in range(PER_SERVICE):
            partners[index].accept(
                f"e{n}", title=f"svc{index} #{n}", target={"receive_id": f"oc_svc{index}", "receive_id_type": "chat_id"}
            )

    def pump() -> None:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            events.pump_stream()
            worked = events.pump_queue()
            if not worked:
                if posted.is_set() and len(feishu.log) >= SERVICES * PER_SERVICE:
                    return
                time.sleep(0.05)

    with ThreadPoolExecutor(max_workers=SERVICES + 4) as pool:
        pumps = [pool.submit(pump) for _ in range(4)]
        list(pool.map(post_all, range(SERVICES)))
        posted.set()
        for future in pumps:
            future.result()

    assert feishu.stats["refused"] > 10, "the run should have met transient failures"
    for index in range(SERVICES):
        delivered = [entry["title"] for entry in feishu.log if entry["receive_id"] == f"oc_svc{index}"]
        assert delivered == [f"svc{index} #{n}" for n in range(PER_SERVICE)]
