"""What Herald costs to run on AWS: each flow's billed units per operation, and USD per million of it.

Starts a local cloud (DynamoDB Local, fauxqs, the provider fakes answering at once) with its meter on
(herald_dev.meter: each of its processes counts what AWS bills by) and runs `--n` of each flow, one after the
other (after one uncounted warm-up operation each), each operation waited for to its last side effect and the
cloud left to go quiet before the next flow:

  confirm       a role invitation (a built-in confirm) -> its Tencent IM push -> the receiver's accept -> the
                update push
  notification  a producer's notification -> the unread count pushed over the user's open WebSocket -> the
                user reads it (and the count pushed again)
  event         a partner's external event (a card, revision 1) -> its Feishu card
  turn message  a member's message to an idle agent -> the turn on the turn queue -> the engine (played here)
                takes it off the queue and finishes the turn

Printed per flow, per operation: DynamoDB read and write request units (on-demand: what each call's
`ConsumedCapacity` reports, by table in the JSON), SQS requests (64 KB units; a Lambda event source mapping's
receives that returned messages, and its deletes; its empty polls are the queue's idle cost, not a flow's),
Lambda invocations and GB-seconds (each handler's own time on this machine, where DynamoDB Local answers far
slower than DynamoDB, at its function's MemorySize: an upper bound), HTTP API requests and
WebSocket messages; then USD per operation and per million at AWS's published prices (tests/bench/aws_prices.py:
us-east-1, no free tier). Not in the figures, and said so: DynamoDB Streams reads by Lambda (free), storage,
CloudWatch logs and metrics, data transfer, and the providers' own answer time (the fakes answer at once; each
100 ms a real provider takes adds 0.1 s at the calling function's memory: README works it out). A user's
WebSocket connection costs connection minutes while it is open, whatever flows: printed for a month.

    python tests/bench/cost_per_million.py [--n 20]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "infra"), str(REPO / "layers")]

from herald_dev.meter import METER_VARIABLE, process_meter, read_meter  # noqa: E402
from tests.bench import aws_prices as price  # noqa: E402
from tests.bench.flows import Flows  # noqa: E402
from tests.bench.shared_app import backing_engines, cloud_running  # noqa: E402

QUIET_S = 1.5  # a flow's work is done once the meter has not moved for this long
MINUTES_A_MONTH = 30 * 24 * 60


def settled(directory: Path) -> Counter[str]:
    """Every count so far, once nothing has been counted for QUIET_S (the processes write theirs as they go)."""
    last, quiet_since = read_meter(directory), time.monotonic()
    while time.monotonic() - quiet_since < QUIET_S:
        time.sleep(0.25)
        if (now := read_meter(directory)) != last:
            last, quiet_since = now, time.monotonic()
    return last


def units(counts: Counter[str], n: int) -> dict[str, Any]:
    """A flow's billed units per operation."""

    def total(prefix: str) -> float:
        return sum(value for key, value in counts.items() if key.startswith(prefix)) / n

    return {
        "dynamodb_rru": round(total("dynamodb.rru."), 2),
        "dynamodb_wru": round(total("dynamodb.wru."), 2),
        "sqs_requests": round(total("sqs."), 2),
        "lambda_invocations": round(total("lambda.invocations."), 2),
        "lambda_gb_s": round(total("lambda.gb_s."), 5),
        "http_requests": round(total("apigateway.http_requests"), 2),
        "websocket_messages": round(total("websocket.messages"), 2),
        "by_table": {
            k.split(".", 1)[1]: round(v / n, 2) for k, v in sorted(counts.items()) if k.startswith("dynamodb.")
        },
        "by_function": {  # invocations, and GB-seconds
            "{1} {0}".format(*k.split(".", 2)[1:]).split("-", 1)[-1]: round(v / n, 4)
            for k, v in sorted(counts.items())
            if k.startswith("lambda.")
        },
    }


def usd(unit: dict[str, Any]) -> dict[str, float]:
    parts = {
        "dynamodb": unit["dynamodb_rru"] * price.DYNAMODB_READ_REQUEST_UNIT
        + unit["dynamodb_wru"] * price.DYNAMODB_WRITE_REQUEST_UNIT,
        "sqs": unit["sqs_requests"] * price.SQS_FIFO_REQUEST,
        "lambda": unit["lambda_invocations"] * price.LAMBDA_REQUEST + unit["lambda_gb_s"] * price.LAMBDA_GB_SECOND,
        "api_gateway": unit["http_requests"] * price.HTTP_API_REQUEST
        + unit["websocket_messages"] * price.WEBSOCKET_MESSAGE,
    }
    return {f"usd_per_million_{name}": round(cost * 1_000_000, 2) for name, cost in parts.items()} | {
        "usd_per_million": round(sum(parts.values()) * 1_000_000, 2)
    }


def print_table(report: dict[str, dict[str, Any]]) -> None:
    columns = ("dynamodb_rru", "dynamodb_wru", "sqs_requests", "lambda_invocations", "lambda_gb_s", "http_requests")
    header = ("flow (per operation)", *columns, "websocket_messages", "usd_per_million")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for flow, figures in report.items():
        cells = [flow, *(str(figures[c]) for c in columns), str(figures["websocket_messages"])]
        print("| " + " | ".join(cells) + f" | {figures['usd_per_million']:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=20, help="operations of each flow")
    args = parser.parse_args()
    report: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as workdir:
        work, meter_dir = Path(workdir), Path(workdir) / "meter"
        meter_dir.mkdir()
        os.environ[METER_VARIABLE] = str(meter_dir)  # the cloud's processes and this one (the engine's queue reads)
        bench_meter = process_meter(functions=False)
        assert bench_meter is not None
        deployed = {"HERALD_TENANT_CACHE_SECONDS": "30"}  # as deployed (`make dev` reads a tenant on every use)
        with backing_engines(work, local=True) as engines, cloud_running(work, engines, deployed) as cloud:
            flows = Flows(cloud)
            for name, flow in flows.all().items():
                flow.prepare()
                flow.run(args.n)  # a warm-up, not counted: each function's first request loads what it serves
                bench_meter.flush()
                before = settled(meter_dir)
                for index in range(args.n):
                    flow.run(index)
                bench_meter.flush()
                counts = settled(meter_dir)
                counts.subtract(before)
                figures = units(+counts, args.n)
                report[name] = figures | usd(figures)
                print(f"{name}: {json.dumps(report[name])}", flush=True)
    print_table(report)
    connected = MINUTES_A_MONTH * price.WEBSOCKET_CONNECTION_MINUTE
    print(f"\none user's WebSocket connection open all month: {MINUTES_A_MONTH} connection minutes, ${connected:.4f}")
    print(f"prices: {price.REGION}, read {price.READ_ON} (tests/bench/aws_prices.py); n = {args.n} of each flow")
    print(json.dumps({"n": args.n, "flows": report, "prices_read_on": price.READ_ON}))


if __name__ == "__main__":
    main()
