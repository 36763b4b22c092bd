"""Issue 49, item 1: a second `make dev` (`herald local`) beside a running one says so in one line, exits
non-zero and touches nothing of the first: not its ports, not its state file. A port another program holds is
named with the variable that moves it. Only the process that wrote a state file removes it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from herald_dev.already_running import owns, refusal
from herald_dev.cli import main
from herald_dev.config import LocalCloudConfig

FREE_PORTS = ["--http-port", "0", "--ws-port", "0", "--moto-port", "0", "--tencent-im-port", "0",
              "--feishu-port", "0", "--sample-owner-port", "-1", "--console-port", "-1"]  # fmt: skip


@pytest.fixture
def another_process() -> Iterator[int]:
    """A live process that is not this one (the first `make dev`)."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield process.pid
    process.kill()
    process.wait()


def test_a_second_local_cloud_beside_a_running_one_refuses_in_one_line_and_leaves_its_state_file(
    tmp_path: Path, another_process: int, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "local.json"
    state.write_text(json.dumps({"pid": another_process, "http_url": "http://127.0.0.1:8080"}))
    before = state.read_bytes(), state.stat().st_mtime_ns
    assert main(["local", "--state-file", str(state), *FREE_PORTS]) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert f"already running from this checkout (pid {another_process}, HTTP API on http://127.0.0.1:8080)" in line
    assert f"kill {another_process}" in line
    assert (state.read_bytes(), state.stat().st_mtime_ns) == before


def test_a_port_another_program_holds_is_named_with_the_variable_that_moves_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        arguments = [*FREE_PORTS, "--state-file", str(tmp_path / "local.json")]
        arguments[arguments.index("--moto-port") + 1] = str(port)
        assert main(["local", *arguments]) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert f"port {port} (moto) is in use by another program" in line and "HERALD_MOTO_PORT=" in line
    assert not (tmp_path / "local.json").exists()


def test_a_state_file_left_by_a_process_that_died_does_not_stop_a_new_cloud(tmp_path: Path) -> None:
    finished = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], check=True, capture_output=True, text=True
    )
    state = tmp_path / "local.json"
    state.write_text(json.dumps({"pid": int(finished.stdout), "http_url": "http://127.0.0.1:8080"}))
    config = LocalCloudConfig(
        template_path=tmp_path, http_port=0, ws_port=0, moto_port=0, tencent_im_port=0, feishu_port=0,
        sample_owner_port=-1, console_port=-1, state_file=state,
    )  # fmt: skip
    assert refusal(config) is None


def test_only_the_process_that_wrote_a_state_file_owns_it(tmp_path: Path, another_process: int) -> None:
    state = tmp_path / "local.json"
    state.write_text(json.dumps({"pid": another_process}))
    assert not owns(state)
    state.write_text(json.dumps({"pid": os.getpid()}))
    assert owns(state)
