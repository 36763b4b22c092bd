"""The benches that start their own local cloud, at a smoke size (tests/functional/test_benches_run.py
holds the rest and checks that every bench is run by one of the two)."""

from __future__ import annotations

import pytest

from tests.functional.test_benches_run import ON_A_LOCAL_CLOUD, run_bench

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("script", sorted(ON_A_LOCAL_CLOUD))
def test_the_bench_runs_to_its_report_on_a_local_cloud(script: str) -> None:
    run_bench(script, *ON_A_LOCAL_CLOUD[script])
