"""The real template on the local cloud: HTTP API, WebSocket API and its management API, as in AWS."""

from __future__ import annotations

import asyncio
import json
import re
import stat
import time

import httpx
import pytest
import websockets
from botocore.exceptions import ClientError

from tests.support.local_cloud import LOCAL_CREDENTIALS, LocalCloudProcess
from tests.support.tokens import make_token

pytestmark = pytest.mark.integration


def test_health_is_served(cloud: LocalCloudProcess) -> None:
    response = httpx.get(f"{cloud.http_url}/api/v1/health")
    assert response.status_code == 200
    assert response.json()["data"] == {"status": "ok", "stage": "local"}


def test_app_route_takes_a_dev_token_and_refuses_a_missing_one(cloud: LocalCloudProcess) -> None:
    ok = httpx.get(f"{cloud.http_url}/api/v1/me", headers={"Authorization": f"Bearer {make_token('10002')}"})
    assert ok.json()["data"]["user_id"] == "10002"
    refused = httpx.get(f"{cloud.http_url}/api/v1/me")
    assert refused.status_code == 401 and refused.json()["code"] == "UNAUTHORIZED"


def _management(cloud: LocalCloudProcess):  # type: ignore[no-untyped-def]
    import boto3

    return boto3.client(  # type: ignore[call-overload]
        "apigatewaymanagementapi", endpoint_url=cloud.ws_url.replace("ws://", "http://"), **LOCAL_CREDENTIALS
    )


def _connection_ids(cloud: LocalCloudProcess, user_key: str) -> list[str]:
    items = cloud.client("dynamodb").scan(TableName=cloud.resource("ConnectionsTable"))["Items"]
    return [item["connection_id"]["S"] for item in items if item["user_key"]["S"] == user_key]


def _wait_for(predicate, timeout: float = 10) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.1)


def test_websocket_accepts_a_token_and_pushes_reach_it_through_the_management_api(
    cloud: LocalCloudProcess,
) -> None:
    async def scenario() -> None:
        async with websockets.connect(f"{cloud.ws_url}/?token={make_token('20001')}") as ws:
            await ws.send(json.dumps({"action": "ping"}))
            assert json.loads(await asyncio.wait_for(ws.recv(), 5)) == {"type": "pong"}
            (connection_id,) = _connection_ids(cloud, "lalu#20001")
            await asyncio.to_thread(
                _management(cloud).post_to_connection, ConnectionId=connection_id, Data=b'{"type":"hello"}'
            )
            assert json.loads(await asyncio.wait_for(ws.recv(), 5)) == {"type": "hello"}
        await asyncio.to_thread(_wait_for, lambda: not _connection_ids(cloud, "lalu#20001"))
        with pytest.raises(ClientError) as gone:
            _management(cloud).post_to_connection(ConnectionId=connection_id, Data=b"{}")
        assert gone.value.response["Error"]["Code"] == "GoneException"

    asyncio.run(scenario())


@pytest.mark.parametrize(
    "token", ["", "garbage", make_token(ttl=-60), make_token(secret="wrong-secret-wrong-secret-wrong-xx")]
)
def test_websocket_refuses_a_bad_token_with_401(cloud: LocalCloudProcess, token: str) -> None:
    async def scenario() -> None:
        with pytest.raises(websockets.InvalidStatus) as refused:
            async with websockets.connect(f"{cloud.ws_url}/?token={token}"):
                pass
        assert refused.value.response.status_code == 401

    asyncio.run(scenario())


@pytest.mark.parametrize(
    "frame",
    [
        '{"action": "ping", "n": ' + "9" * 5000 + "}",  # past Python's 4,300-digit int limit: a ValueError
        "[" * 5000 + "]" * 5000,  # nested past the parser's recursion limit
        "not json",
        '"a string"',
        b"\x00\xff binary",
    ],
    ids=["5000-digit-number", "deep-nesting", "not-json", "not-an-object", "binary"],
)
def test_a_malformed_frame_gets_an_error_frame_and_the_connection_stays_open(
    cloud: LocalCloudProcess, frame: str | bytes
) -> None:
    async def scenario() -> None:
        async with websockets.connect(f"{cloud.ws_url}/?token={make_token('20011')}") as ws:
            await ws.send(frame)
            answer = json.loads(await asyncio.wait_for(ws.recv(), 5))
            assert answer["type"] == "error" and answer["code"] == "INVALID_ARGUMENT", answer
            await ws.send(json.dumps({"action": "ping"}))  # still open, still served
            assert json.loads(await asyncio.wait_for(ws.recv(), 5)) == {"type": "pong"}

    asyncio.run(scenario())


@pytest.mark.parametrize("size", [32 * 1024 + 1, 128 * 1024 + 1], ids=["over-a-frame", "over-a-message"])
def test_a_frame_over_api_gateways_quota_closes_with_1009(cloud: LocalCloudProcess, size: int) -> None:
    async def scenario() -> None:
        async with websockets.connect(f"{cloud.ws_url}/?token={make_token('20012')}", max_size=None) as ws:
            await ws.send(json.dumps({"action": "ping", "pad": "x" * size}))
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await asyncio.wait_for(ws.recv(), 5)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009

    asyncio.run(scenario())


def test_the_running_clouds_state_file_is_its_owners_alone_and_holds_no_service_key(cloud: LocalCloudProcess) -> None:
    """Every process of the machine's other users could read a 0644 state file; the reference engine's key in
    it worked against the API. Nothing that reads the state file needs a key: it is not there."""
    state = cloud.state_file
    assert stat.S_IMODE(state.stat().st_mode) == 0o600
    assert stat.S_IMODE(state.parent.stat().st_mode) == 0o700
    text = state.read_text()
    assert not re.search(r"hk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}", text) and "engine_key" not in text
