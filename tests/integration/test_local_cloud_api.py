"""The real template on the local cloud: HTTP API, WebSocket API and its management API, as in AWS."""

from __future__ import annotations

import asyncio
import json
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

    return boto3.client(
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
