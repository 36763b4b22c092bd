"""`make soak`: the load mix against a fresh local cloud, optionally SIGKILLed and restarted under load, then
the audit (tests/soak/load.py). Prints each run's figures as JSON; exits non-zero if anything was lost,
doubled, reordered or miscounted, or any request got a 5xx.

    python tests/soak/run.py --seconds 180                 # load only (embedded moto)
    python tests/soak/run.py --seconds 180 --crashes 3     # SIGKILL + restart 3 times under load

With crashes, what must outlive the local cloud runs beside it: DynamoDB Local (the tables and their
streams) and `herald backing` (SQS and the provider fakes). The restarted local cloud reads the streams
from their start again, as a Lambda mapping whose checkpoint was lost would: the workers are idempotent.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "infra"), str(REPO / "layers")]

from tests.soak.load import LoadRun  # noqa: E402
from tests.support.local_cloud import RATE_LIMITS_OFF, DynamoDBLocal, LocalCloudProcess, start_backing  # noqa: E402


def crash_and_restart(cloud: LocalCloudProcess, crashes: int, seconds: float, seed: int, log: list[float]) -> None:
    """SIGKILL at random moments of the load, restarting each time."""
    rng = random.Random(seed)
    started = time.monotonic()
    for moment in sorted(rng.uniform(0.15, 0.85) * seconds for _ in range(crashes)):
        time.sleep(max(0.0, started + moment - time.monotonic()))
        cloud.kill()
        log.append(round(time.monotonic() - started, 1))
        cloud.start(timeout=120)


def soak(seconds: float, crashes: int, workers: int, seed: int, drain_timeout: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="herald-soak-") as tmp:
        workdir = Path(tmp)
        dynamodb = backing = None
        try:
            if crashes:
                dynamodb = DynamoDBLocal(workdir).start()
                backing, backing_state = start_backing(workdir)
                cloud = LocalCloudProcess(
                    workdir, dynamodb_endpoint=dynamodb.endpoint, backing=backing_state, env=RATE_LIMITS_OFF
                )
            else:
                cloud = LocalCloudProcess(workdir, env=RATE_LIMITS_OFF)
            cloud.start(timeout=120)
            load = LoadRun(cloud.state, seconds, workers, seed)
            kills: list[float] = []
            chaos = threading.Thread(target=crash_and_restart, args=(cloud, crashes, seconds, seed, kills))
            chaos.start()
            report = asyncio.run(load.run(drain_timeout))
            chaos.join()
            cloud.stop()
            return {"crashes": crashes, "killed_at_s": kills, **report}
        finally:
            if backing is not None:
                backing.terminate()
                backing.wait(timeout=20)
            if dynamodb is not None:
                dynamodb.stop()


def healthy(report: dict[str, Any]) -> bool:
    audit = report["audit"]
    return bool(
        report["5xx"] == 0
        and audit["lost"] == 0
        and audit["duplicates"] == 0
        and audit["out_of_order"] == 0
        and audit["unread_miscounted"] == 0
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=180)
    parser.add_argument("--crashes", type=int, default=0, help="SIGKILL + restart the local cloud this many times")
    parser.add_argument("--workers", type=int, default=3, help="workers per part of the mix")
    parser.add_argument("--drain-timeout", type=float, default=240)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    report = soak(args.seconds, args.crashes, args.workers, args.seed, args.drain_timeout)
    print(json.dumps(report, indent=2))
    return 0 if healthy(report) else 1


if __name__ == "__main__":
    sys.exit(main())
