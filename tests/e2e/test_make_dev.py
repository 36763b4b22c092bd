"""`make dev`, as a newcomer runs it: health answers, the WebSocket takes a token, the console and the sample
owner service answer, the reference agent engine takes messages sent during a turn into it between its steps and
waits for an approval it asks for, resuming on the member's accept; Ctrl-C,
a SIGINT to make alone or a SIGTERM stops every part with one line each and no traceback; the log is not
flooded by the console's polls; what it holds is kept across restarts unless FRESH=1."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
import websockets

from herald.auth.dynamo import DynamoServiceKeyStore
from herald.auth.service_keys import ServiceKeys
from tests.support.local_cloud import free_port, start_make_dev
from tests.support.tokens import make_token
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e


def watch_the_reference_engine_take_a_queue_and_wait_for_an_approval(http_url: str, im_url: str) -> None:
    """Messages sent during the turn's first step are taken into it between its steps, merged; a message asking
    for an approval makes the engine ask 10002, whose accept (through the confirm in the fake IM) resumes it."""
    member = httpx.Client(base_url=http_url, headers={"Authorization": f"Bearer {make_token('10002')}"})
    messages = "/api/v1/sessions/demo/agents/assistant/messages"

    def first_post() -> httpx.Response:
        response = member.post(messages, json={"text": "hello"})
        assert response.status_code == 202, response.text  # the engine opens the demo session as it starts
        return response

    assert eventually(first_post, timeout=30).json()["data"]["delivery"] == "started"
    queued = [member.post(messages, json={"text": text}).json()["data"] for text in ("and", "more")]
    assert [q["delivery"] for q in queued] == ["queued", "queued"]

    def events() -> list[dict[str, Any]]:
        return member.get("/api/v1/sessions/demo/events").json()["data"]["events"]  # type: ignore[no-any-return]

    def taken_and_finished() -> None:
        taken = [e["data"] for e in events() if e["type"] == "chat.message_delivered" and e["data"].get("taken")]
        assert [t["message_ids"] for t in taken] == [[q["message_id"] for q in queued]]
        assert [e["type"] for e in events()].count("turn.finished") == 1

    eventually(taken_and_finished, timeout=30)
    assert member.post(messages, json={"text": "please approve the release"}).json()["data"]["delivery"] == "started"

    def asked() -> str:
        pushes = [m for m in httpx.get(f"{im_url}/__fake/messages").json() if m["data"]["type"] == "im_confirm"]
        assert [p["data"]["business_type"] for p in pushes] == ["agent_approval"]
        return str(pushes[0]["data"]["confirm_id"])

    confirm_id = eventually(asked, timeout=30)
    accepted = member.post(f"/api/v1/message/action-confirms/{confirm_id}/accept", json={"command_id": "tap"})
    assert accepted.status_code == 200, accepted.text
    eventually(lambda: _count(events(), "turn.finished", 2), timeout=30)
    kinds = [e["type"] for e in events()]
    assert kinds.count("approval.decided") == 1 and kinds.index("turn.resumed") < len(kinds) - 1


def _count(events: list[dict[str, Any]], kind: str, expected: int) -> None:
    assert [e["type"] for e in events].count(kind) == expected


STOP_LINES = (
    "stopped the HTTP API",
    "stopped the WebSocket API and the console",
    "event sources",
    "functions",
    "stopped the provider fakes",
    "stopped the embedded AWS (moto)",
    "local cloud stopped",
)


def assert_stopped_cleanly(log: str, why: str) -> None:
    """Every part said it stopped, once, after the one line saying why; no traceback, no interrupt noise."""
    stopping = [line for line in log.splitlines() if "stopping:" in line]
    assert len(stopping) == 1 and why in stopping[0], log[-3000:]
    for part in STOP_LINES:
        assert len([line for line in log.splitlines() if part in line and "INFO" in line]) == 1, (part, log[-3000:])
    assert "Traceback" not in log and "KeyboardInterrupt" not in log, log[-3000:]


def dev_environment(tmp_path: Path, **ports: int) -> dict[str, str]:
    return {
        **os.environ,
        "HERALD_HTTP_PORT": str(ports["http"]),
        "HERALD_WS_PORT": str(ports["ws"]),
        "HERALD_MOTO_PORT": str(free_port()),
        "HERALD_TENCENT_IM_PORT": str(free_port()),
        "HERALD_FEISHU_PORT": str(free_port()),
        "HERALD_CONSOLE_PORT": str(ports["console"]),
        "HERALD_SAMPLE_OWNER_PORT": str(ports["owner"]),
        "HERALD_LOCAL_STATE": str(tmp_path / "local.json"),
        "HERALD_ENGINE_TURN_SECONDS": "2",
        "AWS_ACCESS_KEY_ID": "local",
        "AWS_SECRET_ACCESS_KEY": "local",
        "DEV_DATA": str(tmp_path / "dev-data"),
    }


def test_make_dev_serves_health_and_a_websocket_that_accepts_a_token(tmp_path: Path) -> None:
    http_port, ws_port, console_port, owner_port = (free_port() for _ in range(4))
    state = tmp_path / "local.json"
    env = dev_environment(tmp_path, http=http_port, ws=ws_port, console=console_port, owner=owner_port)
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
        im_url = f"http://127.0.0.1:{env['HERALD_TENCENT_IM_PORT']}"
        watch_the_reference_engine_take_a_queue_and_wait_for_an_approval(f"http://127.0.0.1:{http_port}", im_url)
        for _ in range(5):  # what the console polls, and health checks: no log line each
            assert httpx.get(f"http://127.0.0.1:{console_port}/console/operate").status_code == 200
            assert httpx.get(f"http://127.0.0.1:{http_port}/api/v1/health").status_code == 200
    finally:
        os.killpg(process.pid, signal.SIGINT)
        code = process.wait(timeout=30)
    # Ctrl-C reaches make too, which then reports the interrupt (-SIGINT) once its recipe has exited.
    log = (tmp_path / "make-dev.log").read_text()
    assert code in (0, -signal.SIGINT), log
    assert_stopped_cleanly(log, "SIGINT")
    assert "HTTP Request:" not in log and "/console/operate" not in log and "/api/v1/health" not in log, log
    # The newcomer watches, in the reference engine's log, the messages taken merged and the turn resumed.
    assert "took 2 waiting message(s):\n2 messages arrived while you were working" in log, log
    assert re.search(r"resumed: approval ap-[0-9a-f]{16}-1 approved by 10002", log), log
    assert not state.exists()
    # A line a person reads for each record, the functions' too: no raw JSON (that is `LOG_FORMAT=json`).
    assert not [line for line in log.splitlines() if line.lstrip().startswith(("{", '"'))], log
    assert re.search(r"^\d\d:\d\d:\d\d INFO  herald-[a-z-]+: ", log, re.MULTILINE), log


def test_make_dev_keeps_its_state_across_restarts_and_fresh_starts_empty(tmp_path: Path) -> None:
    """A SIGINT to make alone (make does not pass it on) stops it; a key, a notification, what the fake Feishu
    holds and the sample owner's own members outlive the restart; FRESH=1 starts empty, and the log says which
    it did."""
    http_port, owner_port = free_port(), free_port()
    env = dev_environment(tmp_path, http=http_port, ws=free_port(), console=free_port(), owner=owner_port)
    owner = f"http://127.0.0.1:{owner_port}"
    state, log_path = tmp_path / "local.json", tmp_path / "make-dev.log"
    api = f"http://127.0.0.1:{http_port}"

    def run(*make_variables: str) -> tuple[subprocess.Popen[bytes], str]:
        process = start_make_dev(env, state, log_path, *make_variables)
        return process, log_path.read_text()

    def stop(process: subprocess.Popen[bytes], signum: signal.Signals, to_make_alone: bool) -> str:
        (os.kill if to_make_alone else os.killpg)(process.pid, signum)
        process.wait(timeout=30)
        return log_path.read_text()

    process, log = run()
    assert "state: starting empty (nothing saved yet)" in log, log
    keys = ServiceKeys(DynamoServiceKeyStore("herald-local-ServiceKeysTable", local_dynamodb(env)))
    key, _ = keys.create_key("agent-platform", ["/internal/v1/inbox"])
    notification = {
        "app_code": "lalu",
        "user_id": "10003",
        "kind": "QUESTION_PENDING",
        "session_id": "s-kept",
        "tail": "q-1",
        "title": "Kept?",
        "content": "",
        "payload": {},
    }
    producer = {"Authorization": f"Bearer {key}"}
    assert httpx.post(f"{api}/internal/v1/inbox/notifications", json=notification, headers=producer).is_success
    let_in_a_member(api, owner, "10004")
    assert_stopped_cleanly(stop(process, signal.SIGINT, to_make_alone=True), "`make` (pid")
    assert not state.exists()
    snapshot = tmp_path / "dev-data" / "snapshot.json"
    assert snapshot.stat().st_mode & 0o777 == 0o600  # it holds the local secrets

    process, log = run()
    assert "state: restored from" in log, log
    user = {"Authorization": f"Bearer {make_token('10003')}"}
    assert httpx.get(f"{api}/api/v1/inbox/unread-count", headers=user).json()["data"]["unread_count"] == 1
    again = httpx.post(f"{api}/internal/v1/inbox/notifications", json=notification, headers=producer)
    assert again.json()["data"]["created"] is False  # the same key works, and the dedup record was kept
    group = eventually(lambda: httpx.get(f"{owner}/groups/night-owls").json(), timeout=30)
    assert "10004" in group["members"] and [r["state"] for r in group["requests"]] == ["accepted"]
    assert_stopped_cleanly(stop(process, signal.SIGTERM, to_make_alone=True), "SIGTERM")

    process, log = run("FRESH=1")
    assert "state: starting empty (--fresh)" in log, log
    assert httpx.get(f"{api}/api/v1/inbox/unread-count", headers=user).json()["data"]["unread_count"] == 0
    assert httpx.post(f"{api}/internal/v1/inbox/notifications", json=notification, headers=producer).status_code == 401
    stop(process, signal.SIGINT, to_make_alone=False)


def let_in_a_member(api: str, owner: str, user: str) -> None:
    """The sample owner asks its group's admin (10001), who accepts; the owner adds the member on Herald's call."""

    def asked() -> dict[str, Any]:
        answer = httpx.post(f"{owner}/groups/night-owls/join-requests", json={"user_id": user}, timeout=10)
        assert answer.status_code == 200, answer.text  # the owner registers with Herald as it starts
        return dict(answer.json())

    confirm_id = eventually(asked, timeout=30)["confirm_id"]
    admin = {"Authorization": f"Bearer {make_token('10001')}"}
    accepted = httpx.post(
        f"{api}/api/v1/message/action-confirms/{confirm_id}/accept", json={"command_id": "c-1"}, headers=admin
    )
    assert accepted.status_code == 200, accepted.text

    def member() -> None:
        assert user in httpx.get(f"{owner}/groups/night-owls").json()["members"]

    eventually(member, timeout=30)


def local_dynamodb(env: dict[str, str]) -> Any:
    """The embedded moto of a `make dev` started with `env`."""
    return boto3.client(
        "dynamodb",
        endpoint_url=f"http://127.0.0.1:{env['HERALD_MOTO_PORT']}",
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
