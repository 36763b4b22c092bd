"""A fault-injecting AWS endpoint: a proxy in front of the local cloud's AWS (moto, or DynamoDB Local and fauxqs)
that answers a share of DynamoDB and SQS calls with the faults AWS itself hands a serverless system, in AWS's own
wire format (status, `__type`, message, SQS's query-compatible error header), or forwards a call and drops its
reply (the write happened; the caller hears nothing). Which call gets which fault is decided by a seeded schedule
(the n-th faultable call's fate is the seed's), so a run is reproducible from its seed.

`herald local --aws-faults rate=0.03,seed=7` puts it in front of the functions (the local cloud's own pollers,
like Lambda's event source mappings, reach AWS directly); tests start it on a port of their own."""

from __future__ import annotations

import http.client
import json
import random
import threading
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

KINDS = ("throttle", "internal", "conflict", "unavailable", "lost-reply")
_DYNAMODB = "com.amazonaws.dynamodb.v20120810#"
_SQS = "com.amazonaws.sqs#"
_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem", "SendMessage",
                     "SendMessageBatch", "DeleteMessage", "ChangeMessageVisibility"})  # fmt: skip


@dataclass(frozen=True)
class FaultSpec:
    """`rate=0.03,seed=7[,kinds=throttle+internal+conflict+unavailable+lost-reply]`: the share of DynamoDB and SQS
    calls faulted, the schedule's seed, and which faults (each as likely as the others)."""

    rate: float
    seed: int
    kinds: tuple[str, ...] = KINDS

    @classmethod
    def parse(cls, text: str) -> FaultSpec:
        fields = dict(part.split("=", 1) for part in text.split(",") if "=" in part)
        kinds = tuple(fields.get("kinds", "+".join(KINDS)).split("+"))
        if unknown := [kind for kind in kinds if kind not in KINDS]:
            raise ValueError(f"unknown fault kinds {unknown}: one or more of {', '.join(KINDS)}")
        rate = float(fields.get("rate", "0.03"))
        if not 0 <= rate <= 1:
            raise ValueError("rate is a share of calls, 0 to 1")
        return cls(rate, int(fields.get("seed", "1")), kinds)


@dataclass
class Schedule:
    """The n-th faultable call's fate, from the seed alone."""

    spec: FaultSpec
    injected: Counter[str] = field(default_factory=Counter)
    calls: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def next_fault(self, operation: str) -> str | None:
        with self._lock:
            self.calls += 1
            draw = random.Random(f"{self.spec.seed}:{self.calls}")
        if draw.random() >= self.spec.rate:
            return None
        kind = draw.choice(self.spec.kinds)
        if kind == "lost-reply" and operation not in _WRITES:
            kind = "throttle"  # a read whose reply is lost is only a retry: fault it otherwise
        with self._lock:
            self.injected[kind] += 1
        return kind


def aws_error(service: str, kind: str, operation: str, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """The status and JSON body AWS answers with for a fault `kind` of `service` (dynamodb or sqs)."""
    if service == "sqs":
        code, status = {"throttle": ("ThrottlingException", 400), "internal": ("InternalError", 500)}.get(
            kind, ("ServiceUnavailable", 503)
        )
        return status, {"__type": f"{_SQS}{code}", "message": f"injected {kind}"}
    if kind == "conflict" and operation == "TransactWriteItems":
        reasons = [{"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"}] * len(
            request.get("TransactItems", [])
        )
        message = "Transaction cancelled, please refer cancellation reasons for specific reasons [TransactionConflict]"
        return 400, {"__type": f"{_DYNAMODB}TransactionCanceledException", "message": message,
                     "CancellationReasons": reasons}  # fmt: skip
    if kind in ("internal", "unavailable"):
        return 500, {"__type": f"{_DYNAMODB}InternalServerError", "message": "Internal server error"}
    return 400, {"__type": f"{_DYNAMODB}ProvisionedThroughputExceededException", "message": "injected throttle"}


class FaultProxy:
    def __init__(self, upstreams: dict[str, str], spec: FaultSpec, host: str = "127.0.0.1", port: int = 0) -> None:
        """`upstreams`: service ("dynamodb", "sqs", "*") -> endpoint URL the proxy forwards to."""
        self.schedule = Schedule(spec)
        self._upstreams = upstreams
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # http.server's name
                proxy.handle(self)

            def do_GET(self) -> None:  # what was injected so far, for a soak's figures
                counts = {"calls": proxy.schedule.calls, "injected": dict(proxy.schedule.injected)}
                content = json.dumps(counts).encode()
                self.send_response(200 if self.path == "/__faults" else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            def log_message(self, *args: Any) -> None:  # quiet: the local cloud logs what matters
                pass

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fault-proxy", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[0], self._server.server_address[1]
        return f"http://{host.decode() if isinstance(host, bytes) else host}:{port}"

    @property
    def environment(self) -> dict[str, str]:
        """What points a function's AWS clients at the proxy (its DynamoDB and SQS calls, and the rest passed on)."""
        return dict.fromkeys(("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_SQS"), self.url)

    def summary(self) -> str:
        kinds = ", ".join(f"{kind} {count}" for kind, count in sorted(self.schedule.injected.items())) or "none"
        return f"{self.schedule.calls} calls through the fault proxy, faults injected: {kinds}"

    def start(self) -> FaultProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def handle(self, request: BaseHTTPRequestHandler) -> None:
        body = request.rfile.read(int(request.headers.get("Content-Length", "0") or 0))
        service, operation = _target(request.headers.get("X-Amz-Target", ""), body)
        fault = self.schedule.next_fault(operation) if service in ("dynamodb", "sqs") else None
        if fault is not None and fault != "lost-reply":
            parsed = _json(body)
            status, answer = aws_error(service, fault, operation, parsed)
            self._answer(request, status, json.dumps(answer).encode(), service, answer["__type"])
            return
        status, headers, content = self._forward(service, request, body)
        if fault == "lost-reply":  # it happened; the caller hears nothing and retries
            request.close_connection = True
            request.connection.shutdown(2)
            return
        request.send_response(status)
        for name, value in headers:
            if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                request.send_header(name, value)
        request.send_header("Content-Length", str(len(content)))
        request.end_headers()
        request.wfile.write(content)

    def _forward(
        self, service: str, request: BaseHTTPRequestHandler, body: bytes
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        upstream = urlsplit(self._upstreams.get(service) or self._upstreams["*"])
        connection = http.client.HTTPConnection(upstream.hostname or "127.0.0.1", upstream.port or 80, timeout=60)
        try:
            headers = {k: v for k, v in request.headers.items() if k.lower() not in ("host", "connection")}
            connection.request("POST", request.path, body=body, headers=headers)
            answer = connection.getresponse()
            return answer.status, answer.getheaders(), answer.read()
        finally:
            connection.close()

    @staticmethod
    def _answer(request: BaseHTTPRequestHandler, status: int, content: bytes, service: str, error_type: str) -> None:
        request.send_response(status)
        request.send_header("Content-Type", "application/x-amz-json-1.0")
        if service == "sqs":  # SQS's JSON protocol names the query-compatible code in a header too
            code = error_type.rsplit("#", 1)[-1]
            request.send_header("x-amzn-query-error", f"{code};{'Receiver' if status >= 500 else 'Sender'}")
        request.send_header("x-amzn-RequestId", "injected-fault")
        request.send_header("Content-Length", str(len(content)))
        request.end_headers()
        request.wfile.write(content)


def _target(target: str, body: bytes) -> tuple[str, str]:
    """(service, operation) of a request: the JSON protocols' X-Amz-Target, or a query protocol's Action."""
    prefix, _, operation = target.partition(".")
    if prefix.startswith("DynamoDBStreams"):
        return "dynamodbstreams", operation
    if prefix.startswith("DynamoDB"):
        return "dynamodb", operation
    if prefix == "AmazonSQS":
        return "sqs", operation
    action = parse_qs(body.decode("utf-8", "replace")).get("Action", [""])[0]
    return ("sqs", action) if action else ("other", "")


def _json(body: bytes) -> dict[str, Any]:
    try:
        parsed = json.loads(body or b"{}")
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}
