"""DynamoDB cost of the confirm operations: requests and consumed capacity per operation.

Runs in process on moto (the workers fed as their event source mappings would), asks every DynamoDB call
for `ReturnConsumedCapacity=TOTAL` and prints, per operation, the requests by table and kind (reads,
writes, transactional writes) and the capacity units the engine reported. moto reports fixed units per
call, so the request counts are the figures to read; the confirm-side write count is the target
(accept: at most 3 writes on the confirms table, plus the owner's own).

    python tests/bench/confirm_costs.py
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

    from herald_dev.fakes.tencent_im import FakeTencentIm
    from tests.conftest import clear_herald_caches
    from tests.support.aws import create_stack
    from tests.support.pipeline import ConfirmPipeline
    from tests.support.tokens import make_token

    fake = FakeTencentIm().start()
    os.environ.update(
        {
            "HERALD_TENCENT_IM_BASE_URL": fake.url,
            "HERALD_TENCENT_IM_SDK_APP_ID": str(fake.sdk_app_id),
            "HERALD_TENCENT_IM_ADMIN_IDENTIFIER": fake.admin,
            "HERALD_TENCENT_IM_SECRET_KEY": fake.secret_key,
        }
    )
    with mock_aws():
        install_hooks()  # inside: mock_aws starts from a fresh default session
        stack = create_stack()
        clear_herald_caches()
        from herald.api.app import create_app

        api = TestClient(create_app())
        pipeline = ConfirmPipeline(stack)
        inviter = {"Authorization": f"Bearer {make_token('10001')}"}
        target = {"Authorization": f"Bearer {make_token('10002')}"}
        results: list[tuple[str, Meter]] = []

        def measure(label: str, action: Callable[[], Any]) -> Any:
            meter = Meter()
            with metered(meter):
                value = action()
            results.append((label, meter))
            return value

        def create_and_push() -> str:
            api.post(
                "/api/v1/role-invitations", json={"invitation_type": "host", "target_user_id": "10002"}, headers=inviter
            )
            pipeline.drain(rounds=2)
            return str(fake.messages[-1]["data"]["confirm_id"])

        confirm_id = measure("create invitation -> confirm -> IM push", create_and_push)
        measure(
            "accept (HTTP request only)",
            lambda: api.post(
                f"/api/v1/message/action-confirms/{confirm_id}/accept", json={"command_id": "c1"}, headers=target
            ),
        )
        measure("accept -> im_confirm_update push (workers)", lambda: pipeline.drain(rounds=2))
        ids = [confirm_id] + [f"cfm_{i:032x}" for i in range(99)]
        measure(
            "status batch of 100",
            lambda: api.post("/api/v1/message/action-confirms/status", json={"confirm_ids": ids}, headers=target),
        )
        measure(
            "one list page (50)",
            lambda: api.get("/api/v1/message/action-confirms", params={"peer_user_id": "10001"}, headers=target),
        )
    fake.stop()

    print_report(results)
    accept_meter = results[1][1]
    confirm_writes = sum(
        c for (t, k), c in accept_meter.requests.items() if t == "ConfirmsTable" and not k.startswith("read")
    )
    print(f"\naccept: {confirm_writes} writes on the confirms table (target <= 3)")


if __name__ == "__main__":
    main()
