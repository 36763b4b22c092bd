"""Two tenants with their own providers on the local cloud (moto, and DynamoDB Local + fauxqs): registered
with `herald-ops tenants set`, their secrets in the cloud's SSM. Each tenant's invitation reaches its own
Tencent IM app, signed with a UserSig the other app's key does not verify, and each tenant's card its own
Feishu app; an outage of one tenant's app holds back only that tenant's deliveries; neither `tenants list`
nor the cloud's log ever shows a secret."""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from typing import Any

import pytest
import websockets

from herald.auth.dynamo import DynamoServiceKeyStore
from herald.auth.service_keys import ServiceKeys
from herald.providers.tencent_im import verify_user_sig
from tests.support.local_cloud import LocalCloudProcess
from tests.support.tenants import Tenant, cards, ops, outage, pushes
from tests.support.tokens import make_token
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration


def test_each_tenant_reaches_its_own_im_app_and_one_apps_outage_holds_back_only_its_pushes(
    cloud: LocalCloudProcess,
) -> None:
    first, second = Tenant(cloud, 1), Tenant(cloud, 2)
    outage(cloud, "tencent_im", {"sdk_app_id": first.sdk_app_id}, 503)
    try:
        first.invite("31000001")
        second.invite("31000002")
        (push,) = eventually(lambda: _one(pushes(cloud, "31000002")), timeout=60)
        assert push["sdk_app_id"] == second.sdk_app_id
        assert verify_user_sig(push["usersig"], second.sdk_app_id, second.im_key, "administrator") is None
        assert verify_user_sig(push["usersig"], second.sdk_app_id, first.im_key, "administrator") is not None
        assert not pushes(cloud, "31000001")  # its app is down: its push waits for a retry
    finally:
        outage(cloud, "tencent_im", {"sdk_app_id": first.sdk_app_id}, 0)
    (push,) = eventually(lambda: _one(pushes(cloud, "31000001")), timeout=90)
    assert push["sdk_app_id"] == first.sdk_app_id
    assert verify_user_sig(push["usersig"], first.sdk_app_id, second.im_key, "administrator") is not None


def test_each_tenant_reaches_its_own_feishu_app_and_one_apps_outage_holds_back_only_its_cards(
    cloud: LocalCloudProcess,
) -> None:
    keys = ServiceKeys(DynamoServiceKeyStore(cloud.resource("ServiceKeysTable"), cloud.client("dynamodb")))
    first, second = Tenant(cloud, 1), Tenant(cloud, 2)
    outage(cloud, "feishu", {"app_id": first.feishu_app}, 503)
    try:
        first.post_event(keys, f"{first.app_code} built")
        second.post_event(keys, f"{second.app_code} built")
        (card,) = eventually(lambda: _one(cards(cloud, f"{second.app_code} built")), timeout=60)
        assert card["app_id"] == second.feishu_app
        assert not cards(cloud, f"{first.app_code} built")
    finally:
        outage(cloud, "feishu", {"app_id": first.feishu_app}, 0)
    (card,) = eventually(lambda: _one(cards(cloud, f"{first.app_code} built")), timeout=90)
    assert card["app_id"] == first.feishu_app


def test_tenants_list_and_the_clouds_log_never_show_a_secret(cloud: LocalCloudProcess) -> None:
    tenant = Tenant(cloud, 3)
    tenant.invite("31000003")
    eventually(lambda: _one(pushes(cloud, "31000003")), timeout=60)
    (listed,) = [t for t in ops(cloud, "tenants", "list") if t["app_code"] == tenant.app_code]
    assert listed["tencent_im"]["secret_parameter"] == tenant.im_parameter
    shown = json.dumps(ops(cloud, "tenants", "list")) + json.dumps(ops(cloud, "tenants", "show", tenant.app_code))
    log = cloud.log_path.read_text(errors="replace")
    for secret in (tenant.im_key, tenant.feishu_secret):
        assert secret not in shown and secret not in log


def test_a_disabled_tenants_push_is_held_off_its_queue_and_arrives_within_seconds_of_enable(
    cloud: LocalCloudProcess,
) -> None:
    """Issue 48: `tenants disable` made a push come back a minute later each time, so two pushes had not arrived
    50 s after `enable`, and a day's disable dead-lettered them. Now the worker holds it (off its queue: no
    receive spent, however long the disable lasts) and `enable` puts it back at once."""
    tenant = Tenant(cloud, 4)
    outage(cloud, "tencent_im", {"sdk_app_id": tenant.sdk_app_id}, 503)  # nothing goes out before the disable
    try:
        tenant.invite("31000004")
        ops(cloud, "tenants", "disable", tenant.app_code)
    finally:
        outage(cloud, "tencent_im", {"sdk_app_id": tenant.sdk_app_id}, 0)
    held = eventually(lambda: _held(cloud, tenant.app_code, at_least=1), timeout=60)
    assert all(key.startswith("push#") for key in held) and not pushes(cloud, "31000004")
    started = time.monotonic()
    (shown,) = ops(cloud, "tenants", "enable", tenant.app_code)
    assert shown["resumed_deliveries"] == len(held)
    eventually(lambda: _one(pushes(cloud, "31000004")), timeout=10)
    print(f"held push delivered {time.monotonic() - started:.1f} s after enable")
    assert _held(cloud, tenant.app_code) == []


def _held(cloud: LocalCloudProcess, app_code: str, at_least: int = 0) -> list[str]:
    """The keys of what HoldsTable holds for the tenant (AssertionError while fewer than `at_least`)."""
    answer = cloud.client("dynamodb").query(
        TableName=cloud.resource("HoldsTable"),
        KeyConditionExpression="#scope = :scope",
        ExpressionAttributeNames={"#scope": "scope"},
        ExpressionAttributeValues={":scope": {"S": f"tenant#{app_code}"}},
        ConsistentRead=True,
    )
    keys = [item["held_key"]["S"] for item in answer["Items"]]
    assert len(keys) >= at_least, keys
    return keys


def _one(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    assert len(items) == 1, items
    return items


def test_disabling_a_tenant_closes_its_open_websocket_with_a_reason_and_a_new_connect_is_refused(
    cloud: LocalCloudProcess,
) -> None:
    app_code = f"ws-{secrets.token_hex(3)}"
    ops(cloud, "tenants", "set", app_code)
    other = f"ws-{secrets.token_hex(3)}"
    ops(cloud, "tenants", "set", other)

    async def scenario() -> tuple[list[dict[str, Any]], int, dict[str, Any]]:
        url = f"{cloud.ws_url}/?token="
        async with (
            websockets.connect(url + make_token("31000010", app_code)) as refused_tenant,
            websockets.connect(url + make_token("31000010", other)) as served_tenant,
        ):
            (disabled,) = await asyncio.to_thread(ops, cloud, "tenants", "disable", app_code)
            frames = [json.loads(frame) async for frame in refused_tenant]  # ends when the gateway closes it
            await served_tenant.send(json.dumps({"action": "ping"}))
            pong = json.loads(await asyncio.wait_for(served_tenant.recv(), 10))
        with pytest.raises(websockets.InvalidStatus) as again:
            async with websockets.connect(url + make_token("31000011", app_code)):
                pass
        return frames, again.value.response.status_code, {**disabled, "pong": pong}

    try:
        frames, status, disabled = asyncio.run(asyncio.wait_for(scenario(), 60))
    finally:
        ops(cloud, "tenants", "enable", app_code)
    assert disabled["enabled"] is False and disabled["closed_connections"] == 1
    assert [(f["type"], f["reason"]) for f in frames] == [("connection_closed", "tenant_disabled")]
    assert status == 403 and disabled["pong"] == {"type": "pong"}
