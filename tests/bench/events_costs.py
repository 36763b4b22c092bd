"""DynamoDB cost of an external event: requests and reported capacity, from intake to its Feishu card.

Runs in process on moto (the workers fed as their event source mappings would; the fake Feishu on loopback)
with the meter of metering.py. moto reports fixed units per call, so the request counts are the
figures to read.

    python tests/bench/events_costs.py
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "infra"), str(REPO / "layers")]

from tests.bench.metering import Meter, install_hooks, metered, prepare_bench, print_report  # noqa: E402


def main() -> None:
    prepare_bench()
    from fastapi.testclient import TestClient
    from moto import mock_aws

    from herald_dev.fakes.feishu import FakeFeishu
    from tests.conftest import clear_herald_caches
    from tests.support.aws import create_stack
    from tests.support.events import EventsPipeline

    fake = FakeFeishu().start()
    os.environ.update(
        {
            "HERALD_FEISHU_BASE_URL": fake.url,
            "HERALD_FEISHU_APP_ID": fake.app_id,
            "HERALD_FEISHU_APP_SECRET": fake.app_secret,
        }
    )
    with mock_aws():
        install_hooks()
        stack = create_stack()
        os.environ["HERALD_EVENTS_QUEUE_URL"] = stack.resolve({"Ref": "EventsQueue"})
        os.environ["HERALD_EVENTS_DLQ_URL"] = stack.resolve({"Ref": "EventsDeadLetters"})
        os.environ["HERALD_EVENT_WEBHOOKS_QUEUE_URL"] = stack.resolve({"Ref": "EventWebhooksQueue"})
        os.environ["HERALD_EVENT_WEBHOOKS_DLQ_URL"] = stack.resolve({"Ref": "EventWebhooksDeadLetters"})
        clear_herald_caches()
        from herald.api.app import create_app
        from herald.auth.dynamo import DynamoServiceKeyStore
        from herald.auth.service_keys import ServiceKeys
        from herald.container import current

        keys = ServiceKeys(DynamoServiceKeyStore(current().settings.service_keys_table))
        key, _ = keys.create_key("scheduler", ["/events/external"], targets=["chat_id:oc_ops"])
        api = TestClient(create_app())
        pipeline = EventsPipeline(stack)
        headers = {"Authorization": f"Bearer {key}"}
        results: list[tuple[str, Meter]] = []

        def post(event_id: str, /, **data: Any) -> Any:
            body = {
                "event_id": event_id,
                "event_type": "job.failed",
                "data": {
                    "title": "t",
                    "status": "failed",
                    "target": {"receive_id": "oc_ops", "receive_id_type": "chat_id"},
                    **data,
                },
            }
            return api.post("/events/external", json=body, headers=headers)

        def measure(label: str, action: Callable[[], Any]) -> None:
            meter = Meter()
            with metered(meter):
                action()
            results.append((label, meter))

        post("warm-up")
        pipeline.drain()
        measure("accept an event (HTTP 202)", lambda: post("e1", event_id="card-1", revision=1))
        measure("its dispatch: outbox + worker -> card sent", pipeline.drain)
        measure("the same event again (202 duplicate)", lambda: post("e1", event_id="card-1", revision=1))
        measure("accept revision 2 of the card", lambda: post("e2", event_id="card-1", revision=2, status="ok"))
        measure("its dispatch -> card updated", pipeline.drain)
        measure("accept an older revision", lambda: post("e3", event_id="card-1", revision=1, summary="old"))
        measure("its dispatch -> skipped (stale)", pipeline.drain)
    fake.stop()

    print_report(results)


if __name__ == "__main__":
    main()
