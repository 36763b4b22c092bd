"""`make dev`, as a newcomer runs it: health answers, the WebSocket takes a token, the console and the sample
owner service answer, the reference agent engine merges messages sent during a turn into the next one, Ctrl-C
stops it cleanly."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path

import httpx
import pytest
import websockets

from tests.support.local_cloud import free_port, start_make_dev
from tests.support.tokens import make_token
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e


def watch_the_reference_engine_merge_a_queue(http_url: str) -> None:
    member = httpx.Client(base_url=http_url, headers={"Authorization": f"Bearer {make_token('10002')}"})
    messages = "/api/v1/sessions/demo/agents/assistant/messages"

    def first_post() -> httpx.Response:
        response = member.post(messages, json={"text": "hello"})
        assert response.status_code == 202, response.text  # the engine opens the demo session as it starts
        return response

    assert eventually(first_post, timeout=30).json()["data"]["delivery"] == "started"
    queued = [member.post(messages, json={"text": text}).json()["data"] for text in ("and", "more")]
    assert [q["delivery"] for q in queued] == ["queued", "queued"]

    def merged_and_finished() -> None:
        events = member.get("/api/v1/sessions/demo/events").json()["data"]["events"]
        started = [e["data"] for e in events if e["type"] == "turn.started"]
        assert [s["message_ids"] for s in started][1:] == [[q["message_id"] for q in queued]]
        assert [e["type"] for e in events].count("turn.finished") == 2

    eventually(merged_and_finished, timeout=30)


def test_make_dev_serves_health_and_a_websocket_that_accepts_a_token(tmp_path: Path) -> None:
    http_port, ws_port, moto_port, console_port, owner_port = (free_port() for _ in range(5))
    state = tmp_path / "local.json"
    env = {
        **os.environ,
        "HERALD_HTTP_PORT": str(http_port),
        "HERALD_WS_PORT": str(ws_port),
        "HERALD_MOTO_PORT": str(moto_port),
        "HERALD_TENCENT_IM_PORT": str(free_port()),
        "HERALD_FEISHU_PORT": str(free_port()),
        "HERALD_CONSOLE_PORT": str(console_port),
        "HERALD_SAMPLE_OWNER_PORT": str(owner_port),
        "HERALD_LOCAL_STATE": str(state),
        "HERALD_ENGINE_TURN_SECONDS": "2",
        "AWS_ACCESS_KEY_ID": "local",
        "AWS_SECRET_ACCESS_KEY": "local",
    }
    process = start_make_dev(env, state, tmp_path / "make-dev.log")
    try:
        health = httpx.get(f"http://127.0.0.1:{http_port}/api/v1/health")
        assert health.status_code == 200 and health.json()["data"]["status"] == "ok"

        async def ping() -> dict[str, str]:
            async with websockets.connect(f"ws://127.0.0.1:{ws_port}/?token={make_token('10002')}") as ws:
                await ws.send(json.dumps({"action": "ping"}))
                return json.loads(await asyncio.wait_for(ws.recv(), 5))  # type: ignore[no-any-return]

        assert asyncio.run(ping()) == {"type": "pong"}
        console = httpx.get(f"http://127.0.0.1:{console_port}/")
        assert console.status_code == 200 and "Herald console" in console.text
        assert httpx.get(f"http://127.0.0.1:{console_port}/console/config").json()["local"] is True
        group = eventually(lambda: httpx.get(f"http://127.0.0.1:{owner_port}/groups/night-owls").json())
        assert group["admin"] == "10001"
        watch_the_reference_engine_merge_a_queue(f"http://127.0.0.1:{http_port}")
    finally:
        os.killpg(process.pid, signal.SIGINT)
        code = process.wait(timeout=30)
    # Ctrl-C reaches make too, which then reports the interrupt (-SIGINT) once its recipe has exited.
    assert code in (0, -signal.SIGINT), (tmp_path / "make-dev.log").read_text()
    assert "local cloud stopped" in (tmp_path / "make-dev.log").read_text()
    # The newcomer watches the merged turn in the reference engine's log.
    assert "2 messages arrived while you were working" in (tmp_path / "make-dev.log").read_text()
    assert not state.exists()
