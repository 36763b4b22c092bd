"""The meter the cost benchmarks share: every DynamoDB call asks for `ReturnConsumedCapacity=TOTAL`, and the
requests (by table and kind) and reported capacity of each measured operation are counted and printed."""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

READS = {"GetItem", "BatchGetItem", "Query", "Scan"}
WRITES = {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem"}
CAPACITY_OPS = READS | WRITES | {"TransactWriteItems", "TransactGetItems"}


class Meter:
    def __init__(self) -> None:
        self.requests: Counter[tuple[str, str]] = Counter()
        self.capacity: defaultdict[str, float] = defaultdict(float)
        self.tables: dict[str, str] = {}

    def _short(self, table: str) -> str:
        return table.split("-", 1)[-1]

    def record(self, parsed: dict[str, Any], model: Any, params: dict[str, Any]) -> None:
        name = model.name
        if name == "TransactWriteItems":
            for item in params["TransactItems"]:
                ((action, body),) = item.items()
                self.requests[(self._short(body["TableName"]), f"tx-{action.lower()}")] += 1
        elif name in READS | WRITES:
            table = params.get("TableName") or next(iter(params.get("RequestItems", {"?": 0})))
            kind = "read" if name in READS else "write"
            self.requests[(self._short(table), f"{kind}:{name}")] += 1
        consumed = parsed.get("ConsumedCapacity")
        for entry in consumed if isinstance(consumed, list) else [consumed] if consumed else []:
            self.capacity[self._short(entry.get("TableName", "?"))] += float(entry.get("CapacityUnits", 0))


_current: list[Meter] = []


def _ask_for_capacity(params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
    if model.name in CAPACITY_OPS:
        params.setdefault("ReturnConsumedCapacity", "TOTAL")
    context["bench_params"] = params


def _record(parsed: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
    if _current:
        _current[-1].record(parsed, model, context.get("bench_params", {}))


def install_hooks() -> None:
    """On the default session, before any client exists (clients copy the session's hooks when made)."""
    import boto3

    session = boto3._get_default_session()
    session.events.register("provide-client-params.dynamodb.*", _ask_for_capacity)
    session.events.register("after-call.dynamodb.*", _record)


@contextmanager
def metered(meter: Meter) -> Iterator[None]:
    _current.append(meter)
    try:
        yield
    finally:
        _current.pop()


def prepare_bench() -> None:
    """Credentials for moto, quiet Powertools, the test settings (tables and queues of the test stack), and
    the corrections the tests run moto with (herald_dev.moto_patches)."""
    from herald_dev import moto_patches
    from tests.conftest import TEST_ENV

    moto_patches.install()
    os.environ.update(
        {
            "AWS_ACCESS_KEY_ID": "bench",
            "AWS_SECRET_ACCESS_KEY": "bench",
            "AWS_DEFAULT_REGION": "us-east-1",
            "POWERTOOLS_TRACE_DISABLED": "true",
            "POWERTOOLS_METRICS_DISABLED": "true",
            "POWERTOOLS_LOG_LEVEL": "ERROR",
        }
    )
    os.environ.update({k: v for k, v in TEST_ENV.items() if not k.startswith("AWS_")})


def print_report(results: list[tuple[str, Meter]]) -> None:
    print(f"{'operation':<44} {'table':<22} {'request':<22} {'count':>5}")
    for label, meter in results:
        for row, ((table, kind), count) in enumerate(sorted(meter.requests.items())):
            print(f"{label if row == 0 else '':<44} {table:<22} {kind:<22} {count:>5}")
        capacity = ", ".join(f"{t} {u:g}" for t, u in sorted(meter.capacity.items()))
        print(f"{'':<44} reported capacity units: {capacity}")
