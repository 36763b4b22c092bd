"""Cold start of every function in template.yaml, against `import boto3; boto3.client("dynamodb")`.

It measures what Lambda runs: the layer is built first with the same `layers/Makefile` target `sam build`
calls (dependencies and Herald as bytecode), and every sample is a fresh interpreter that sees only the
standard library and that layer (`python -S`, the layer on PYTHONPATH, as /opt/python is in Lambda).
Each sample imports the function's module (what Lambda's init phase runs) and creates the DynamoDB client
the function uses on its first request; the HTTP function then answers its first request (`GET
/api/v1/health`, an API Gateway HTTP API event through its handler), timed apart. Prints medians and the
ratio of init plus first request to the baseline measured in the same run, from the same layer. Targets:
<= 1.3x for stream and queue workers and the WebSocket function; for the HTTP function, the FastAPI floor's
ratio + 0.35.

The floor row is that reference: an app of one route behind Mangum with no Herald code, loaded the way
Herald's entry points load (herald.coldstart), answering its first request the same way: what any HTTP
function on FastAPI starts from. Cost moved from init into the first request counts all the same.

    python tests/bench/cold_start.py [--samples 7]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "infra"), str(REPO / "layers")]

from herald_ops.template import StackTemplate  # noqa: E402

from tests.support.layer_build import built_layer  # noqa: E402

BASELINE = """
import time, resource
t0 = time.perf_counter()
import boto3
boto3.client("dynamodb")
elapsed = time.perf_counter() - t0
print(elapsed, 0.0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""

FIRST_REQUEST = """
class Context:
    function_name = "bench"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:bench"
    aws_request_id = "bench-1"
    def get_remaining_time_in_millis(self):
        return 15000
def first_request(handler, path, status=200):
    http = {"method": "GET", "path": path, "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1", "userAgent": "bench"}
    event = {
        "version": "2.0", "routeKey": "$default", "rawPath": path, "rawQueryString": "", "headers": {"host": "bench"},
        "requestContext": {"http": http, "requestId": "bench-1", "routeKey": "$default", "stage": "$default",
                           "accountId": "123456789012", "apiId": "bench", "domainName": "bench", "timeEpoch": 0},
        "isBase64Encoded": False,
    }
    answer = handler(event, Context())
    assert answer["statusCode"] == status, answer
"""

FASTAPI_FLOOR = (
    FIRST_REQUEST
    + """
import time, resource
t0 = time.perf_counter()
from herald.coldstart import permanent_imports  # loaded as every entry point loads
with permanent_imports():
    import boto3
    from fastapi import FastAPI
    from mangum import Mangum
    from pydantic import BaseModel
    class Health(BaseModel):
        status: str
    app = FastAPI()
    app.get("/health", response_model=Health)(lambda: Health(status="ok"))
    handler = Mangum(app, lifespan="off")
boto3.client("dynamodb")
elapsed = time.perf_counter() - t0
first_request(handler, "/health")
print(elapsed, time.perf_counter() - t0 - elapsed, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""
)

FUNCTION = (
    FIRST_REQUEST
    + """
import time, resource, importlib.util, sys
t0 = time.perf_counter()
spec = importlib.util.spec_from_file_location("function_under_test", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
from herald import aws
aws.dynamodb()
elapsed = time.perf_counter() - t0
if sys.argv[2] == "http":
    first_request(module.handler, "/api/v1/health")
print(elapsed, time.perf_counter() - t0 - elapsed, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""
)


# The HTTP function includes a bounded context's routes when a request first needs them (herald.api.routing):
# what the first request to one context pays for that (its module and its routes, here the inbox's, answered 401
# without a token), against the same request once they are in.
CONTEXT_PATH = "/api/v1/inbox/unread-count"
CONTEXT_REQUEST = (
    FIRST_REQUEST
    + f"""
import time, importlib.util, sys
spec = importlib.util.spec_from_file_location("function_under_test", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
first_request(module.handler, "/api/v1/health")
t0 = time.perf_counter()
first_request(module.handler, "{CONTEXT_PATH}", 401)
t1 = time.perf_counter()
first_request(module.handler, "{CONTEXT_PATH}", 401)
print(t1 - t0, time.perf_counter() - t1, 0)
"""
)


def _environment(layer: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("HERALD_", "AWS_", "POWERTOOLS_"))}
    stack = StackTemplate.from_file(REPO / "template.yaml", stack_name="bench")
    for logical_id in stack.of_type("AWS::Serverless::Function"):
        variables = stack.function_properties(logical_id).get("Environment", {}).get("Variables", {})
        env.update({key: str(value) for key, value in stack.resolve(variables).items()})
    env.update({"AWS_DEFAULT_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench"})
    env["PYTHONPATH"] = str(layer)
    return env


Sample = tuple[float, float, int]  # init s, first request s, peak RSS KiB


def _sample(code: str, args: list[str], env: dict[str, str]) -> Sample:
    command = [sys.executable, "-S", "-c", code, *args]  # no site-packages: the layer and the stdlib only
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    init, first, rss_kb = out.stdout.strip().splitlines()[-1].split()  # after any log line the handler printed
    return float(init), float(first), int(rss_kb)


def _summary(runs: list[Sample]) -> Sample:
    """Median init and first request, and the largest RSS."""
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs), max(r[2] for r in runs)


def _kind(properties: dict[str, object]) -> str:
    events = properties.get("Events") or {}
    types = {event.get("Type") for event in events.values()} if isinstance(events, dict) else set()
    if "HttpApi" in types:
        return "http"
    if types & {"SQS", "DynamoDB", "Schedule"}:
        return "worker"
    return "websocket"


WORKER_TARGET = 1.3  # x the baseline, for stream and queue workers and the WebSocket function
HTTP_OVER_FLOOR = 0.35  # the HTTP function: at most this much over the FastAPI floor's ratio, in the same run


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=7)
    args = parser.parse_args()
    env = _environment(built_layer())
    stack = StackTemplate.from_file(REPO / "template.yaml", stack_name="bench")
    functions = {lid: stack.function_properties(lid) for lid in stack.of_type("AWS::Serverless::Function")}
    samples: dict[str, list[Sample]] = {name: [] for name in ["baseline", "floor", "context", *functions]}
    for _ in range(args.samples):  # interleaved, so drift in machine load hits every target alike
        samples["baseline"].append(_sample(BASELINE, [], env))
        samples["floor"].append(_sample(FASTAPI_FLOOR, [], env))
        for logical_id, props in functions.items():
            code = [str(REPO / str(props["CodeUri"]) / "app.py"), _kind(props)]
            samples[logical_id].append(_sample(FUNCTION, code, env))
            if _kind(props) == "http":
                samples["context"].append(_sample(CONTEXT_REQUEST, code[:1], env))
    baseline, _, baseline_rss = _summary(samples["baseline"])
    floor_init, floor_first, floor_rss = _summary(samples["floor"])
    floor = (floor_init + floor_first) / baseline
    print(f"baseline: import boto3 + boto3.client('dynamodb') = {baseline * 1000:.0f} ms", end="")
    print(f", peak RSS {baseline_rss / 1024:.0f} MiB")
    print(f"{'function':<24} {'kind':<10} {'init ms':>8} {'1st req':>8} {'ratio':>6} {'target':>7} {'RSS MiB':>8}")
    print(
        f"{'(FastAPI floor)':<24} {'reference':<10} {floor_init * 1000:>8.0f} {floor_first * 1000:>8.0f} "
        f"{floor:>6.2f} {'-':>7} {floor_rss / 1024:>8.0f}"
    )
    ratios = {}
    for logical_id, props in functions.items():
        init, first, rss = _summary(samples[logical_id])
        kind = _kind(props)
        ratio = (init + first) / baseline
        target = floor + HTTP_OVER_FLOOR if kind == "http" else WORKER_TARGET
        verdict = "ok" if ratio <= target else "OVER"
        first_ms = f"{first * 1000:>8.0f}" if kind == "http" else f"{'-':>8}"
        figures = f"{init * 1000:>8.0f} {first_ms} {ratio:>6.2f} {target:>6.2f}x {rss / 1024:>8.0f}"
        print(f"{logical_id:<24} {kind:<10} {figures}  {verdict}")
        ratios[logical_id] = round(ratio, 2)
    if samples["context"]:
        context_first, context_again, _ = _summary(samples["context"])
        print(
            f"HTTP: a context's first request (GET {CONTEXT_PATH}, 401) includes its routes: "
            f"{context_first * 1000:.0f} ms; the same request again {context_again * 1000:.0f} ms"
        )
    print(json.dumps({"baseline_ms": round(baseline * 1000), "fastapi_floor": round(floor, 2), "functions": ratios}))


if __name__ == "__main__":
    main()
