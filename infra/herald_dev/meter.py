"""What a local cloud would be billed for on AWS, counted as it runs (tests/bench/cost_per_million.py).

With `HERALD_LOCAL_METER=DIR` in its environment, each process of a local cloud (the cloud itself, each Lambda
instance, the HTTP function's server) counts what AWS bills by: DynamoDB read and write request units (every
call asks for `ReturnConsumedCapacity`, by table), SQS requests (each in 64 KB units), API Gateway WebSocket
messages (`@connections` posts and frames received), HTTP API requests, Lambda invocations and GB-seconds (the
handler's own time at the function's memory size). Each process appends its counts since its last line to
`DIR/<pid>.jsonl`; a reader adds every line of every file. Without the variable, nothing is counted."""

from __future__ import annotations

import json
import os
import threading
from collections import Counter, defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from herald_dev.runtime import LocalFunction

METER_VARIABLE = "HERALD_LOCAL_METER"
FUNCTION_NAME_VARIABLE = "HERALD_LOCAL_FUNCTION_NAME"  # a server process's function, for its meter (`metered_as`)
FUNCTION_MEMORY_VARIABLE = "HERALD_LOCAL_FUNCTION_MEMORY_MB"
SQS_UNIT_BYTES = 64 * 1024  # SQS bills a request per 64 KB chunk of its payload
_READS = {"GetItem", "BatchGetItem", "Query", "Scan", "TransactGetItems"}
_SQS_PAYLOADS = {"SendMessage": "MessageBody", "SendMessageBatch": "Entries"}


class ProcessMeter:
    """This process's counts, appended to its file on `flush` (only what changed since the last)."""

    def __init__(self, directory: Path) -> None:
        self._path = directory / f"{os.getpid()}.jsonl"
        self._counts: defaultdict[str, float] = defaultdict(float)
        self._lock = threading.Lock()

    def count(self, key: str, amount: float = 1) -> None:
        with self._lock:
            self._counts[key] += amount

    def flush(self) -> None:
        with self._lock:
            counts, self._counts = self._counts, defaultdict(float)
        if counts:
            with self._path.open("a") as file:
                file.write(json.dumps(dict(counts)) + "\n")

    def install_aws_hooks(self, functions: bool) -> None:
        """On boto3's default session, before any client is made (a client copies its session's hooks). The
        local cloud's own process counts only its event sources' SQS requests (a Lambda event source mapping's
        are billed): its DynamoDB calls emulate what AWS does for free (TTL deletes) or sets up the stack."""
        import boto3

        events = boto3._get_default_session().events
        events.register("provide-client-params.sqs.*", self._sqs_asked)
        events.register("after-call.sqs.ReceiveMessage", self._sqs_received)
        if functions:
            events.register("provide-client-params.dynamodb.*", _ask_for_capacity)
            events.register("after-call.dynamodb.*", self._dynamodb_answered)
            events.register("before-call.apigatewaymanagementapi.PostToConnection", self._websocket_posted)

    def invoked(self, function: str, memory_mb: int, seconds: float) -> None:
        """A Lambda invocation of `function`, its handler running `seconds` (billed by the ms, at its memory)."""
        self.count(f"lambda.invocations.{function}")
        self.count(f"lambda.gb_s.{function}", -(-seconds * 1000 // 1) / 1000 * memory_mb / 1024)

    def _dynamodb_answered(self, parsed: dict[str, Any], model: Any, **_: Any) -> None:
        consumed = parsed.get("ConsumedCapacity")
        unit = "rru" if model.name in _READS else "wru"
        for entry in consumed if isinstance(consumed, list) else [consumed] if consumed else []:
            self.count(f"dynamodb.{unit}.{_short(entry.get('TableName', '?'))}", float(entry.get("CapacityUnits", 0)))
        self.count("dynamodb.requests")

    def _sqs_asked(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        """A request (ReceiveMessage's once answered: an empty poll is the mapping's idle cost, not a flow's)."""
        if model.name != "ReceiveMessage":
            payload = json.dumps(params.get(_SQS_PAYLOADS[model.name], "")) if model.name in _SQS_PAYLOADS else ""
            self.count(f"sqs.{model.name}", max(1, -(-len(payload.encode()) // SQS_UNIT_BYTES)))

    def _sqs_received(self, parsed: dict[str, Any], **_: Any) -> None:
        if parsed.get("Messages"):
            self.count("sqs.ReceiveMessage")

    def _websocket_posted(self, **_: Any) -> None:
        self.count("websocket.messages")


def _ask_for_capacity(params: dict[str, Any], model: Any, **_: Any) -> None:
    if model.name not in {"DescribeTable", "ListTables", "CreateTable", "DeleteTable", "DescribeStream"}:
        params.setdefault("ReturnConsumedCapacity", "TOTAL")


def _short(table: str) -> str:
    return table.split("-", 1)[-1]


_meters: dict[str, ProcessMeter] = {}  # this process's, by directory (one)


def process_meter(functions: bool = True) -> ProcessMeter | None:
    """This process's meter, its AWS hooks installed on first use (None: the cloud is not metered). `functions`:
    a function's process (every AWS call it makes is billed), not the local cloud's own."""
    directory = os.environ.get(METER_VARIABLE)
    if not directory:
        return None
    if directory not in _meters:
        _meters[directory] = ProcessMeter(Path(directory))
        _meters[directory].install_aws_hooks(functions)
    return _meters[directory]


def meter_the_cloud(stop: threading.Event) -> None:
    """The local cloud's own process: its event sources' requests counted, written twice a second until `stop`."""
    meter = process_meter(functions=False)
    if meter is not None:

        def flush_until_stopped() -> None:
            while not stop.wait(0.5):
                meter.flush()
            meter.flush()

        threading.Thread(target=flush_until_stopped, name="meter", daemon=True).start()


def metered_as(function: LocalFunction) -> dict[str, str]:
    """The environment a function's server process needs for its meter to name it (Lambda's own runtime passes
    the same as AWS_LAMBDA_FUNCTION_NAME and AWS_LAMBDA_FUNCTION_MEMORY_SIZE)."""
    return {FUNCTION_NAME_VARIABLE: function.name, FUNCTION_MEMORY_VARIABLE: str(function.memory_mb)}


def read_meter(directory: Path) -> Counter[str]:
    """Every process's counts so far, added up."""
    total: Counter[str] = Counter()
    for path in directory.glob("*.jsonl"):
        for line in path.read_text().splitlines():
            total.update(json.loads(line))
    return total
