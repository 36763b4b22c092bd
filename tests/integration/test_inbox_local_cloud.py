"""The inbox through the local cloud: real WebSocket clients get each count change in version order;
TTL removal of an unread item lowers the count."""

from __future__ import annotations

import asyncio
import json
import secrets
from typing import Any

import httpx
import pytest
import websockets

from herald.auth.dynamo import DynamoServiceKeyStore
from herald.auth.service_keys import ServiceKeys
from herald.inbox.dynamo import DynamoInboxStore
from tests.support.inbox import connections_of, insert_past_retention
from tests.support.local_cloud import LocalCloudProcess
from tests.support.tokens import make_token
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration


def new_user() -> str:
    return str(30_000_000 + secrets.randbelow(10**9))


def producer_headers(cloud: LocalCloudProcess) -> dict[str, str]:
    store = DynamoServiceKeyStore(cloud.resource("ServiceKeysTable"), cloud.client("dynamodb"))
    key, _ = ServiceKeys(store).create_key("engine", ["/internal/v1/inbox"])
    return {"Authorization": f"Bearer {key}"}


def notify(cloud: LocalCloudProcess, headers: dict[str, str], user: str, tail: str) -> dict[str, Any]:
    body = {"user_id": user, "kind": "QUESTION_PENDING", "session_id": "s1", "tail": tail, "title": "Question"}
    response = httpx.post(f"{cloud.http_url}/internal/v1/inbox/notifications", json=body, headers=headers, timeout=60)
    assert response.status_code == 200, response.text
    return response.json()["data"]  # type: ignore[no-any-return]


def unread(cloud: LocalCloudProcess, user: str) -> int:
    response = httpx.get(
        f"{cloud.http_url}/api/v1/inbox/unread-count", headers={"Authorization": f"Bearer {make_token(user)}"}
    )
    return int(response.json()["data"]["unread_count"])


async def _collect(url: str, into: list[dict[str, Any]], ready: asyncio.Event, stop: asyncio.Event) -> None:
    async with websockets.connect(url) as ws:
        ready.set()
        while not stop.is_set():
            try:
                into.append(json.loads(await asyncio.wait_for(ws.recv(), 0.2)))
            except TimeoutError:
                continue


def _listed(cloud: LocalCloudProcess, user: str, count: int) -> None:
    found = connections_of(cloud, user)
    assert len(found) == count, found


def test_two_connections_of_a_user_get_every_update_in_version_order_and_others_nothing(
    cloud: LocalCloudProcess,
) -> None:
    me, someone_else = new_user(), new_user()
    headers = producer_headers(cloud)
    auth = {"Authorization": f"Bearer {make_token(me)}"}

    async def scenario() -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
        first: list[dict[str, Any]] = []
        second: list[dict[str, Any]] = []
        other: list[dict[str, Any]] = []
        stop = asyncio.Event()
        readies = [asyncio.Event() for _ in range(3)]
        tasks = [
            asyncio.create_task(_collect(f"{cloud.ws_url}/?token={make_token(me)}", first, readies[0], stop)),
            asyncio.create_task(_collect(f"{cloud.ws_url}/?token={make_token(me)}", second, readies[1], stop)),
            asyncio.create_task(_collect(f"{cloud.ws_url}/?token={make_token(someone_else)}", other, readies[2], stop)),
        ]
        for ready in readies:
            await asyncio.wait_for(ready.wait(), 10)
        await asyncio.to_thread(eventually, lambda: _listed(cloud, me, 2))  # the connections' index caught up
        created = [await asyncio.to_thread(notify, cloud, headers, me, f"t{i}") for i in range(3)]
        async with httpx.AsyncClient(base_url=cloud.http_url, headers=auth) as client:
            await client.post(f"/api/v1/inbox/notifications/{created[0]['notification_id']}/read")
            await client.post("/api/v1/inbox/notifications/read-all")

        def settled() -> None:
            for received in (first, second):
                assert received and received[-1]["unreadCount"] == 0 and received[-1]["version"] == 5, received

        await asyncio.to_thread(eventually, settled)
        await asyncio.sleep(0.5)  # the sleep is the behaviour: a frame out of order would have come by now
        stop.set()
        await asyncio.gather(*tasks)
        return first, second, other

    first, second, other = asyncio.run(scenario())
    for received in (first, second):
        versions = [m["version"] for m in received]
        assert versions == sorted(versions) and versions[-1] == 5
        assert all(m["type"] == "inbox_updated" for m in received)
        by_version = {m["version"]: m["unreadCount"] for m in received}
        assert all(by_version.get(v, c) == c for v, c in {1: 1, 2: 2, 3: 3, 4: 2, 5: 0}.items() if v in by_version)
    assert other == []


def test_ttl_removal_of_an_unread_item_lowers_the_count(cloud: LocalCloudProcess) -> None:
    me = new_user()
    store = DynamoInboxStore(cloud.resource("InboxTable"), cloud.client("dynamodb"))
    insert_past_retention(store, me, seconds_past=5)
    notify(cloud, producer_headers(cloud), me, "fresh")
    listed = httpx.get(
        f"{cloud.http_url}/api/v1/inbox/notifications", headers={"Authorization": f"Bearer {make_token(me)}"}
    )
    assert [i["title"] for i in listed.json()["data"]["items"]] == ["Question"]  # past retention: never listed

    def removed_and_counted_down() -> None:
        assert store.counter("lalu", me)[0] == 1  # the TTL removal took it off the counter

    eventually(removed_and_counted_down)
    assert unread(cloud, me) == 1
    items = cloud.client("dynamodb").query(
        TableName=cloud.resource("InboxTable"),
        KeyConditionExpression="pk = :p AND begins_with(sk, :n)",
        ExpressionAttributeValues={":p": {"S": f"U#lalu#{me}"}, ":n": {"S": "N#"}},
    )["Items"]
    assert [i["title"]["S"] for i in items] == ["Question"]  # the sweeper removed the expired one


def test_mark_all_read_racing_fifty_inserts_keeps_the_count_exact(cloud: LocalCloudProcess) -> None:
    from concurrent.futures import ThreadPoolExecutor

    me = new_user()
    headers = producer_headers(cloud)
    auth = {"Authorization": f"Bearer {make_token(me)}"}
    for i in range(20):
        notify(cloud, headers, me, f"before-{i}")
    with ThreadPoolExecutor(max_workers=26) as pool:
        inserts = [pool.submit(notify, cloud, headers, me, f"during-{i}") for i in range(50)]
        read_all = pool.submit(
            httpx.post, f"{cloud.http_url}/api/v1/inbox/notifications/read-all", headers=auth, timeout=60
        )
        # Every insert is stored once. (Under this load an engine call may time out and be retried by boto3;
        # the retry then finds its own first write and answers created:false with the same id.)
        assert len({f.result()["notification_id"] for f in inserts}) == 50
        assert read_all.result().status_code == 200
    listed: list[dict[str, Any]] = []
    token = ""
    while True:
        page = httpx.get(
            f"{cloud.http_url}/api/v1/inbox/notifications", params={"page_size": 100, "page_token": token}, headers=auth
        ).json()["data"]
        listed.extend(page["items"])
        token = page["next_page_token"]
        if not token:
            break
    assert len(listed) == 70
    assert unread(cloud, me) == sum(1 for item in listed if not item["is_read"])


def test_a_connection_is_told_and_closed_once_its_token_expired_instead_of_receiving_pushes(
    cloud: LocalCloudProcess,
) -> None:
    """Regression: an open WebSocket kept receiving pushes after its token expired."""
    me = new_user()
    headers = producer_headers(cloud)

    async def scenario() -> tuple[list[dict[str, Any]], bool]:
        frames: list[dict[str, Any]] = []
        async with websockets.connect(f"{cloud.ws_url}/?token={make_token(me, ttl=3)}") as ws:
            await asyncio.sleep(4.5)  # the sleep is the behaviour: the token expires while the connection is open
            notify(cloud, headers, me, "after-expiry")
            closed = False
            try:
                while True:
                    frames.append(json.loads(await asyncio.wait_for(ws.recv(), 15)))
            except websockets.ConnectionClosed:
                closed = True
            except TimeoutError:
                pass
        return frames, closed

    frames, closed = asyncio.run(scenario())
    assert [frame["type"] for frame in frames] == ["token_expired"] and closed


def test_system_notify_defaults_on_even_for_preferences_stored_before_it_and_round_trips(
    cloud: LocalCloudProcess,
) -> None:
    """On the local cloud's engine (DynamoDB Local under HERALD_TEST_DYNAMODB=local): a new user, a user whose
    preferences an earlier Herald stored (kind switches only), a PUT and GET round trip, a bad value."""
    fresh, earlier = new_user(), new_user()
    cloud.client("dynamodb").put_item(
        TableName=cloud.resource("InboxTable"),
        Item={"pk": {"S": f"U#lalu#{earlier}"}, "sk": {"S": "PREFS"}, "subagent_done": {"BOOL": True}},
    )

    def preferences(user: str, body: dict[str, Any] | None = None) -> httpx.Response:
        headers = {"Authorization": f"Bearer {make_token(user)}"}
        url = f"{cloud.http_url}/api/v1/inbox/preferences"
        return httpx.put(url, json=body, headers=headers) if body is not None else httpx.get(url, headers=headers)

    assert preferences(fresh).json()["data"]["system_notify"] is True
    stored = preferences(earlier).json()["data"]
    assert stored["system_notify"] is True and stored["subagent_done"] is True
    assert preferences(earlier, {"system_notify": False}).json()["data"]["system_notify"] is False
    assert preferences(earlier).json()["data"] == {**stored, "system_notify": False}
    refused = preferences(earlier, {"system_notify": "false"})
    assert refused.status_code == 400 and refused.json()["code"] == "INVALID_ARGUMENT"
    assert preferences(earlier).json()["data"]["system_notify"] is False
