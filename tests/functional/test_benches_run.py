"""No bench can rot: every script in tests/bench/ runs in `make test` at a smoke size (seconds). No figure is
asserted (benches print figures, they do not judge them); each must run to its end and print its report."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.support.aws import REPO

BENCH = REPO / "tests" / "bench"
# script -> (smoke-size arguments, a line its report always prints)
IN_PROCESS = {
    "cold_start.py": (["--samples", "1"], r'^\{"baseline_ms": \d+'),
    "confirm_costs.py": ([], r"^operation\s+table\s+request\s+count$"),
    "events_costs.py": ([], r"^operation\s+table\s+request\s+count$"),
    "turns_costs.py": ([], r"^operation\s+table\s+request\s+count$"),
    "inbox_costs.py": (["--sizes", "10", "--repeats", "1"], r"^write of one notification:$"),
}
DELIVERY_SMOKE = [
    "--cards", "2", "--revisions", "3", "--chats", "2", "--per-chat", "2", "--confirms", "6", "--receivers", "3",
    "--shared-events", "6", "--shared-chats", "3", "--urgent-events", "2",
]  # fmt: skip
# benches that start a local cloud of their own run with the long tests (tests/integration, marked slow)
ON_A_LOCAL_CLOUD = {
    "events_throughput.py": (["--events", "4"], r"^4 events, 20 services: +\d+\.\d+ events/s"),
    "delivery_at_limits.py": (
        DELIVERY_SMOKE,
        r'^\{"limits": .*"c_confirms": \{"delivered_per_s".*"d_shared_app": \{"with_fair_share"',
    ),
    "cost_per_million.py": (["--n", "1"], r'^\{"n": 1, "flows": \{"confirm"'),
}


def run_bench(script: str, arguments: list[str], report: str) -> str:
    """The bench's output, once it ran to its end and printed its report."""
    command = [sys.executable, str(BENCH / script), *arguments]
    finished = subprocess.run(command, check=False, capture_output=True, text=True, cwd=REPO, timeout=300)
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert re.search(report, finished.stdout, re.MULTILINE), finished.stdout[-3000:]
    return finished.stdout


def test_every_bench_script_is_smoke_run_in_make_test() -> None:
    scripts = {path.name for path in BENCH.glob("*.py") if 'if __name__ == "__main__":' in path.read_text()}
    assert scripts == set(IN_PROCESS) | set(ON_A_LOCAL_CLOUD)


# cold_start.py measures each function's imports in fresh interpreters: about a minute on one core
SLOW = {"cold_start.py"}


@pytest.mark.parametrize(
    "script", [pytest.param(name, marks=[pytest.mark.slow] if name in SLOW else []) for name in sorted(IN_PROCESS)]
)
def test_the_bench_runs_to_its_report(script: str) -> None:
    run_bench(script, *IN_PROCESS[script])
