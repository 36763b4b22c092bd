"""Issue 49, item 1, with a real local cloud running: `herald local` again from the same checkout exits non-zero
at once with one line, and the first keeps serving with its state file in place."""

from __future__ import annotations

import subprocess
import sys

import httpx
import pytest

from tests.support.local_cloud import REPO, LocalCloudProcess

pytestmark = pytest.mark.integration


def test_a_second_herald_local_leaves_the_running_cloud_serving_and_its_state_file_in_place(
    cloud: LocalCloudProcess,
) -> None:
    before = cloud.state_file.read_bytes()
    command = [sys.executable, "-m", "herald_dev.cli", "local", "--state-file", str(cloud.state_file)]
    second = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=60, check=False)
    assert second.returncode == 1, second.stderr
    assert "a local cloud is already running from this checkout" in second.stderr
    assert len(second.stderr.strip().splitlines()) == 1, second.stderr
    assert cloud.state_file.read_bytes() == before
    assert httpx.get(f"{cloud.http_url}/api/v1/health", timeout=30).status_code == 200
