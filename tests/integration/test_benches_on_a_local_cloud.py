"""The benches that start their own local cloud, at a smoke size (tests/functional/test_benches_run.py
holds the rest and checks that every bench is run by one of the two)."""

from __future__ import annotations

import json

import pytest

from tests.functional.test_benches_run import ON_A_LOCAL_CLOUD, run_bench

# Minutes of a local cloud's work, so `make test` runs them beside the crash soak.
pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.mark.parametrize("script", sorted(ON_A_LOCAL_CLOUD))
def test_the_bench_runs_to_its_report_on_a_local_cloud(script: str) -> None:
    output = run_bench(script, *ON_A_LOCAL_CLOUD[script])
    report = json.loads(output.splitlines()[-1]) if script != "events_throughput.py" else {}
    if script == "delivery_at_limits.py":  # its audit is no figure: nothing is ever out of order or doubled
        scenarios = [report[name] for name in ("a_revisions", "b_lanes", "c_confirms", "d_shared_app")]
        assert [scenario["order_violations"] for scenario in scenarios] == [0, 0, 0, 0], report
        assert report["c_confirms"]["doubled"] == 0 and report["a_revisions"]["max_calls_per_card"] <= 2, report
    if script == "cost_per_million.py":  # a meter that counted nothing would price every flow at $0
        flows = report["flows"]
        assert all(flow["dynamodb_wru"] > 0 and flow["lambda_invocations"] > 0 for flow in flows.values()), flows
        assert flows["confirm"]["sqs_requests"] > 0 and flows["notification"]["websocket_messages"] > 0, flows
        assert all(flow["http_requests"] >= 1 and flow["usd_per_million"] > 0 for flow in flows.values()), flows
