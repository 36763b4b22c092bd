"""Inbox read cost against history size: the unread count and the first list page for a user with 10,
10,000 and 100,000 notifications, plus the write cost of one notification.

Runs in process on moto, or against a real engine with `--dynamodb-endpoint` (e.g. DynamoDB Local: moto
scans a partition to answer a query, so its latency grows with the items stored; a real engine's does not).
Prints DynamoDB requests, the capacity units the engine reported, and the median
latency, each with its ratio to the 10-item case (the target is about 1x: nothing reads a user's history).

    python tests/bench/inbox_costs.py [--sizes 10 10000 100000] [--repeats 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "infra"), str(REPO / "layers")]

from tests.bench.metering import Meter, install_hooks, metered  # noqa: E402


def _seed(client: Any, table: str, user: str, count: int, now: int) -> None:
    """Load `count` notifications (a tenth unread) and their counter straight into the table."""
    from herald.dynamo import to_attr

    def to_item(values: dict[str, Any]) -> dict[str, Any]:
        return {name: to_attr(value) for name, value in values.items() if value is not None}

    from herald.inbox.dynamo import COUNTER, notification_sk, user_pk
    from herald.inbox.service import new_notification_id

    pk = user_pk("lalu", user)
    batch: list[dict[str, Any]] = []
    unread = 0
    for i in range(count):
        created = now - (count - i) * 1000
        notification_id = new_notification_id(created)
        is_unread = i % 10 == 0
        unread += is_unread
        values = {
            "pk": pk,
            "sk": notification_sk(notification_id),
            "app_code": "lalu",
            "user_id": user,
            "notification_id": notification_id,
            "kind": "TASK_COMPLETED",
            "title": f"Task {i} finished",
            "content": "All steps passed.",
            "session_id": f"s{i}",
            "dedup_key": f"{user}:TASK_COMPLETED:s{i}:e{i}",
            "is_read": not is_unread,
            "created_at_ms": created,
            "expires_at": created // 1000 + 90 * 86400,
        }
        if is_unread:
            values.update(unread_pk=pk, unread_sk=values["sk"])
        batch.append({"PutRequest": {"Item": to_item(values)}})
        if len(batch) == 25:
            client.batch_write_item(RequestItems={table: batch})
            batch = []
    if batch:
        client.batch_write_item(RequestItems={table: batch})
    client.put_item(
        TableName=table,
        Item=to_item({"pk": pk, "sk": COUNTER, "app_code": "lalu", "user_id": user, "unread": unread, "version": 1}),
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 10_000, 100_000])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--dynamodb-endpoint", help="a DynamoDB engine to use instead of moto")
    args = parser.parse_args()
    os.environ.update(
        {
            "AWS_ACCESS_KEY_ID": "bench",
            "AWS_SECRET_ACCESS_KEY": "bench",
            "AWS_DEFAULT_REGION": "us-east-1",
            "POWERTOOLS_LOG_LEVEL": "ERROR",
        }
    )
    import contextlib

    import boto3
    from moto import mock_aws

    from herald_dev import moto_patches
    from tests.conftest import TEST_ENV, clear_herald_caches

    os.environ.update({k: v for k, v in TEST_ENV.items() if not k.startswith("AWS_")})
    moto_patches.install()
    rows = []
    if args.dynamodb_endpoint:
        os.environ["AWS_ENDPOINT_URL_DYNAMODB"] = args.dynamodb_endpoint
        os.environ["AWS_ENDPOINT_URL_SQS"] = "http://127.0.0.1:9"  # queues are not used here
    engine = contextlib.nullcontext() if args.dynamodb_endpoint else mock_aws()
    with engine:
        install_hooks()
        from herald_ops.template import StackTemplate

        from herald_dev.provision import create_table

        stack = StackTemplate.from_file(REPO / "template.yaml", stack_name="test")
        create_table(stack, "InboxTable", boto3.client("dynamodb"))
        clear_herald_caches()
        from herald.auth.models import Principal
        from herald.clock import now_ms
        from herald.container import current
        from herald.inbox.models import Kind
        from herald.inbox.service import Incoming
        from herald.inbox.wiring import inbox

        client = boto3.client("dynamodb")
        table = current().settings.inbox_table
        service = inbox()
        for size in args.sizes:
            user = str(10_000 + size)
            started = time.monotonic()
            _seed(client, table, user, size, now_ms())
            seeded = time.monotonic() - started
            principal = Principal(user, "lalu")
            for label, call in (
                ("unread count", lambda u=user: service.unread_count("lalu", u)),
                ("first page (20)", lambda p=principal: service.page(p, False, 20, "")),
            ):
                meter = Meter()
                with metered(meter):
                    call()
                timings = []
                for _ in range(args.repeats):
                    t0 = time.perf_counter()
                    call()
                    timings.append(time.perf_counter() - t0)
                rows.append(
                    (
                        label,
                        size,
                        sum(meter.requests.values()),
                        sum(meter.capacity.values()),
                        statistics.median(timings),
                        seeded,
                    )
                )
        write = Meter()
        with metered(write):
            service.record(Incoming("lalu", "bench", "99", Kind.QUESTION_PENDING, "s", "t", "title", "", {}))
    base = {
        label: (requests, capacity, latency)
        for label, size, requests, capacity, latency, _ in rows
        if size == args.sizes[0]
    }
    header = ("read", "items", "requests", "capacity", "median ms", "x requests", "x capacity", "x latency")
    print("{:<16} {:>8} {:>8} {:>8} {:>9} {:>10} {:>10} {:>9}".format(*header))
    for label, size, requests, capacity, latency, _ in rows:
        b_req, b_cap, b_lat = base[label]
        print(
            f"{label:<16} {size:>8} {requests:>8} {capacity:>8g} {latency * 1000:>9.2f} "
            f"{requests / b_req:>10.2f} {capacity / b_cap if b_cap else 0:>10.2f} {latency / b_lat:>9.2f}"
        )
    print("\nwrite of one notification:")
    for (table_name, kind), count in sorted(write.requests.items()):
        print(f"  {table_name:<16} {kind:<22} {count}")
    print(f"  reported capacity units: {dict(write.capacity)}")


if __name__ == "__main__":
    main()
