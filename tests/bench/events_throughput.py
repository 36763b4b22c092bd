"""End-to-end throughput of external events on the local cloud: 1 service vs 20 services.

Starts `herald local` (embedded moto, fake Feishu), posts the same number of events spread over 1 and then
over 20 services, and prints the events per second from the first post until the last card arrived. One
service runs strictly one job at a time; many run in parallel, so the ratio shows the parallelism.

    python tests/bench/events_throughput.py [--events 60]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "infra"), str(REPO / "layers")]

import httpx  # noqa: E402

from herald.auth.dynamo import DynamoServiceKeyStore  # noqa: E402
from herald.auth.service_keys import ServiceKeys  # noqa: E402
from tests.support.local_cloud import LocalCloudProcess  # noqa: E402


def run(cloud: LocalCloudProcess, services: int, events: int, tag: str) -> float:
    keys = ServiceKeys(DynamoServiceKeyStore(cloud.resource("ServiceKeysTable"), cloud.client("dynamodb")))
    clients = []
    for index in range(services):
        service_id = f"{tag}-{index}"
        key, _ = keys.create_key(service_id, ["/events/external"], targets=[f"chat_id:oc_{service_id}"])
        clients.append((service_id, httpx.Client(base_url=cloud.http_url, headers={"Authorization": f"Bearer {key}"})))
    feishu = cloud.fake_url("feishu")
    before = len(httpx.get(f"{feishu}/__fake/messages").json())
    started = time.monotonic()

    def post(index: int) -> None:
        service_id, client = clients[index % services]
        target = {"receive_id": f"oc_{service_id}", "receive_id_type": "chat_id"}
        body = {
            "event_id": f"e{index}",
            "event_type": "bench",
            "data": {"title": f"#{index}", "status": "ok", "target": target},
        }
        client.post("/events/external", json=body, timeout=60).raise_for_status()

    with ThreadPoolExecutor(max_workers=min(services, 8)) as pool:
        list(pool.map(post, range(events)))
    while len(httpx.get(f"{feishu}/__fake/messages").json()) - before < events:
        if time.monotonic() - started > 600:
            raise SystemExit("not delivered within 10 minutes")
        time.sleep(0.2)
    return events / (time.monotonic() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=60)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        cloud = LocalCloudProcess(Path(workdir)).start()
        try:
            one = run(cloud, 1, args.events, "one")
            many = run(cloud, 20, args.events, "many")
        finally:
            cloud.stop()
    print(f"{args.events} events, 1 service:   {one:6.2f} events/s")
    print(f"{args.events} events, 20 services: {many:6.2f} events/s  ({many / one:.2f}x)")


if __name__ == "__main__":
    main()
