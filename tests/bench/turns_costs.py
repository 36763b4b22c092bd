"""DynamoDB cost of the agent turn queue: requests and reported capacity per post, cancel and finish.

Runs in process on moto (the outbox fed as its event source mapping would) with the meter of metering.py.
moto reports fixed units per call, so the request counts are the figures to read.

    python tests/bench/turns_costs.py
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

    from tests.conftest import clear_herald_caches
    from tests.support.aws import create_stack
    from tests.support.turns import TurnsHarness

    with mock_aws():
        install_hooks()
        stack = create_stack()
        os.environ["HERALD_TURNS_QUEUE_URL"] = stack.resolve({"Ref": "TurnsQueue"})
        clear_herald_caches()
        from herald.api.app import create_app
        from herald.auth.dynamo import DynamoServiceKeyStore
        from herald.auth.service_keys import ServiceKeys
        from herald.container import current

        keys = ServiceKeys(DynamoServiceKeyStore(current().settings.service_keys_table))
        key, _ = keys.create_key("agent-engine", ["/internal/v1/sessions"])
        turns = TurnsHarness(TestClient(create_app()), stack, key)
        results: list[tuple[str, Meter]] = []

        def measure(label: str, action: Callable[[], Any]) -> Any:
            meter = Meter()
            with metered(meter):
                outcome = action()
            results.append((label, meter))
            return outcome

        turns.session("warm-up")
        turns.post("alice", "warm-up", session_id="warm-up")
        turns.next_turns()
        measure("engine opens a session (PUT)", turns.session)
        measure("message with no turn running (202 started)", lambda: turns.post("alice", "start"))
        (first,) = measure("its hand-over: outbox -> turn queue", turns.next_turns)
        queued = [measure(f"message during the turn (202 queued #{n})", lambda: turns.post("alice", "q")) for n in "12"]
        measure("cancel a waiting message (200)", lambda: turns.cancel("alice", queued[1].json()["data"]["message_id"]))
        for n in range(9):
            turns.post("alice", f"fill {n}")
        measure("11th pending message (409 message_queue_full)", lambda: turns.post("alice", "one too many"))
        measure("finish with 10 waiting -> next turn (200)", lambda: turns.step(first["turn_id"]))
        (second,) = measure("its hand-over: outbox -> turn queue", turns.next_turns)
        measure("finish with nothing waiting (200 idle)", lambda: turns.step(second["turn_id"]))
        measure("read the event log (one page)", turns.events)
    print_report(results)


if __name__ == "__main__":
    main()
