"""Cold start of every function in template.yaml, against `import boto3; boto3.client("dynamodb")`.

It measures what Lambda runs: the layer is built first with the same `layers/Makefile` target `sam build`
calls (dependencies and Herald as bytecode), and every sample is a fresh interpreter that sees only the
standard library and that layer (`python -S`, the layer on PYTHONPATH, as /opt/python is in Lambda).
Each sample imports the function's module (what Lambda's init phase runs) and creates the DynamoDB client
the function uses on its first request, then reports the time taken and its peak RSS. Prints medians and
the ratio to the baseline measured in the same run, from the same layer. Targets: <= 1.3x for stream and
queue workers and the WebSocket function, <= 2.0x for the HTTP function.

One reference row has no target: the FastAPI floor, an app of one route behind Mangum with no Herald code,
loaded the way Herald's entry points load (herald.coldstart), which is what any HTTP function on FastAPI
starts from.

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
LAYER_BUILD = REPO / ".herald" / "bench-layer"
sys.path[:0] = [str(REPO), str(REPO / "infra"), str(REPO / "layers")]

from herald_ops.template import StackTemplate  # noqa: E402

BASELINE = """
import time, resource
t0 = time.perf_counter()
import boto3
boto3.client("dynamodb")
elapsed = time.perf_counter() - t0
print(elapsed, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""

FASTAPI_FLOOR = """
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
    Mangum(app, lifespan="off")
boto3.client("dynamodb")
elapsed = time.perf_counter() - t0
print(elapsed, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""

FUNCTION = """
import time, resource, importlib.util, sys
t0 = time.perf_counter()
spec = importlib.util.spec_from_file_location("function_under_test", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
from herald import aws
aws.dynamodb()
elapsed = time.perf_counter() - t0
print(elapsed, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def _build_layer() -> Path:
    """The layer exactly as `sam build` makes it (layers/Makefile), so the figures are those of the artefact."""
    subprocess.run(
        [
            "make",
            "--no-print-directory",
            "-C",
            str(REPO / "layers"),
            "build-HeraldLayer",
            f"ARTIFACTS_DIR={LAYER_BUILD}",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return LAYER_BUILD / "python"


def _environment(layer: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("HERALD_", "AWS_", "POWERTOOLS_"))}
    stack = StackTemplate.from_file(REPO / "template.yaml", stack_name="bench")
    for logical_id in stack.of_type("AWS::Serverless::Function"):
        variables = stack.function_properties(logical_id).get("Environment", {}).get("Variables", {})
        env.update({key: str(value) for key, value in stack.resolve(variables).items()})
    env.update({"AWS_DEFAULT_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench"})
    env["PYTHONPATH"] = str(layer)
    return env


def _sample(code: str, args: list[str], env: dict[str, str]) -> tuple[float, int]:
    command = [sys.executable, "-S", "-c", code, *args]  # no site-packages: the layer and the stdlib only
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    elapsed, rss_kb = out.stdout.split()
    return float(elapsed), int(rss_kb)


def _summary(runs: list[tuple[float, int]]) -> tuple[float, int]:
    return statistics.median(r[0] for r in runs), max(r[1] for r in runs)


def _kind(properties: dict[str, object]) -> str:
    events = properties.get("Events") or {}
    types = {event.get("Type") for event in events.values()} if isinstance(events, dict) else set()
    if "HttpApi" in types:
        return "http"
    if types & {"SQS", "DynamoDB", "Schedule"}:
        return "worker"
    return "websocket"


TARGET = {"http": 2.0, "worker": 1.3, "websocket": 1.3}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=7)
    args = parser.parse_args()
    env = _environment(_build_layer())
    stack = StackTemplate.from_file(REPO / "template.yaml", stack_name="bench")
    functions = {lid: stack.function_properties(lid) for lid in stack.of_type("AWS::Serverless::Function")}
    samples: dict[str, list[tuple[float, int]]] = {name: [] for name in ["baseline", "floor", *functions]}
    for _ in range(args.samples):  # interleaved, so drift in machine load hits every target alike
        samples["baseline"].append(_sample(BASELINE, [], env))
        samples["floor"].append(_sample(FASTAPI_FLOOR, [], env))
        for logical_id, props in functions.items():
            samples[logical_id].append(_sample(FUNCTION, [str(REPO / str(props["CodeUri"]) / "app.py")], env))
    baseline, baseline_rss = _summary(samples["baseline"])
    rows = []
    for logical_id, props in functions.items():
        elapsed, rss = _summary(samples[logical_id])
        kind = _kind(props)
        rows.append((logical_id, kind, elapsed, elapsed / baseline, TARGET[kind], rss))
    print(f"baseline: import boto3 + boto3.client('dynamodb') = {baseline * 1000:.0f} ms", end="")
    print(f", peak RSS {baseline_rss / 1024:.0f} MiB")
    print(f"{'function':<24} {'kind':<10} {'init ms':>8} {'ratio':>6} {'target':>7} {'RSS MiB':>8}")
    floor, floor_rss = _summary(samples["floor"])
    reference = f"{floor * 1000:>8.0f} {floor / baseline:>6.2f} {'-':>7} {floor_rss / 1024:>8.0f}"
    print(f"{'(FastAPI floor)':<24} {'reference':<10} {reference}")
    for logical_id, kind, elapsed, ratio, target, rss in rows:
        verdict = "ok" if ratio <= target else "OVER"
        figures = f"{elapsed * 1000:>8.0f} {ratio:>6.2f} {target:>6.1f}x {rss / 1024:>8.0f}"
        print(f"{logical_id:<24} {kind:<10} {figures}  {verdict}")
    ratios = {r[0]: round(r[3], 2) for r in rows}
    print(
        json.dumps(
            {"baseline_ms": round(baseline * 1000), "fastapi_floor": round(floor / baseline, 2), "functions": ratios}
        )
    )


if __name__ == "__main__":
    main()
