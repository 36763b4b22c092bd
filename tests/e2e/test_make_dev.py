"""`make dev`, as a newcomer runs it: health answers, the WebSocket takes a token, Ctrl-C stops it cleanly."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest
import websockets

from tests.support.local_cloud import REPO, free_port
from tests.support.tokens import make_token

pytestmark = pytest.mark.e2e


def test_make_dev_serves_health_and_a_websocket_that_accepts_a_token(tmp_path: Path) -> None:
    http_port, ws_port, moto_port = free_port(), free_port(), free_port()
    state = tmp_path / "local.json"
    env = {
        **os.environ,
        "HERALD_HTTP_PORT": str(http_port),
        "HERALD_WS_PORT": str(ws_port),
        "HERALD_MOTO_PORT": str(moto_port),
        "HERALD_TENCENT_IM_PORT": str(free_port()),
        "HERALD_FEISHU_PORT": str(free_port()),
        "HERALD_LOCAL_STATE": str(state),
        "AWS_ACCESS_KEY_ID": "local",
        "AWS_SECRET_ACCESS_KEY": "local",
    }
    log = (tmp_path / "make-dev.log").open("wb")
    process = subprocess.Popen(
        ["make", "dev"], cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 120
        while not state.exists():
            assert process.poll() is None, (tmp_path / "make-dev.log").read_text()
            assert time.monotonic() < deadline, "make dev did not become ready"
            time.sleep(0.2)
        health = httpx.get(f"http://127.0.0.1:{http_port}/api/v1/health")
        assert health.status_code == 200 and health.json()["data"]["status"] == "ok"

        async def ping() -> dict[str, str]:
            async with websockets.connect(f"ws://127.0.0.1:{ws_port}/?token={make_token('10002')}") as ws:
                await ws.send(json.dumps({"action": "ping"}))
                return json.loads(await asyncio.wait_for(ws.recv(), 5))  # type: ignore[no-any-return]

        assert asyncio.run(ping()) == {"type": "pong"}
    finally:
        os.killpg(process.pid, signal.SIGINT)
        code = process.wait(timeout=30)
    # Ctrl-C reaches make too, which then reports the interrupt (-SIGINT) once its recipe has exited.
    assert code in (0, -signal.SIGINT), (tmp_path / "make-dev.log").read_text()
    assert "local cloud stopped" in (tmp_path / "make-dev.log").read_text()
    assert not state.exists()
