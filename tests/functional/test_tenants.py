"""Tenants with their own providers, in process on moto: each app_code's pushes go through its own Tencent IM
app and its cards through its own Feishu app; a disabled tenant's deliveries wait and resume; a stack that
requires registration refuses an unknown tenant on every kind of caller before anything is written."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from fastapi.testclient import TestClient

from herald.api.app import create_app
from herald.auth.models import OWNER_CAPABILITY
from herald.auth.service_keys import ServiceKeys
from herald.events.wiring import event_store
from herald.holds.models import Held, HeldQueue, Pause
from herald.holds.wiring import holds
from herald.providers.tencent_im import verify_user_sig
from herald.tenants.models import FeishuApp, TencentImApp
from herald.tenants.wiring import switch_tenant, tenants
from herald_dev.fakes.feishu import FakeFeishu
from herald_dev.fakes.tencent_im import FakeTencentIm
from tests.support.aws import load_event, load_function
from tests.support.container import reconfigure
from tests.support.events import EventsPipeline
from tests.support.lambda_context import FakeLambdaContext
from tests.support.pipeline import ConfirmPipeline
from tests.support.tokens import make_token

ACME_IM = TencentImApp(1400000777, "acme_admin", "/herald/tenants/acme/tencent-im-key")
ACME_IM_KEY = "acme-tencent-im-key"
ACME_FEISHU = FeishuApp("cli_acme", "/herald/tenants/acme/feishu-secret")
ACME_FEISHU_SECRET = "acme-feishu-secret"


def _auth(user: str, app: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {make_token(user, app)}"}


def _store_secret(name: str, value: str) -> None:
    boto3.client("ssm").put_parameter(Name=name, Value=value, Type="SecureString", Overwrite=True)


@pytest.fixture
def acme(aws: Any) -> None:
    """Tenant `acme`, with its own Tencent IM app and Feishu app (their secrets in SSM); `lalu` uses the stack's."""
    reconfigure(tenant_cache_seconds=0)
    _store_secret(ACME_IM.secret_parameter, ACME_IM_KEY)
    _store_secret(ACME_FEISHU.secret_parameter, ACME_FEISHU_SECRET)
    tenants().set("acme", "Acme", ACME_IM, ACME_FEISHU)


@pytest.fixture
def acme_im(acme: None, pipeline: ConfirmPipeline, fake_im: FakeTencentIm) -> TestClient:
    """Acme's own Tencent IM app on the fake (its key the one in SSM), and the API to invite through."""
    fake_im.add_app(ACME_IM.sdk_app_id, ACME_IM.admin_identifier, ACME_IM_KEY)
    return TestClient(create_app())


def invite(api: TestClient, app: str, inviter: str = "10001", target: str = "10002") -> None:
    body = {"invitation_type": "host", "target_user_id": target}
    answer = api.post("/api/v1/role-invitations", json=body, headers=_auth(inviter, app))
    assert answer.status_code == 200, answer.text


def pushes_to(fake_im: FakeTencentIm, receiver: str) -> list[dict[str, Any]]:
    return [m for m in fake_im.messages if m["to"] == receiver]


def test_each_tenants_push_goes_through_its_own_tencent_im_app_signed_with_its_own_key(
    acme_im: TestClient, pipeline: ConfirmPipeline, fake_im: FakeTencentIm
) -> None:
    api = acme_im
    invite(api, "acme", target="20001")
    invite(api, "lalu", target="20002")
    pipeline.drain()
    (acme_push,), (lalu_push,) = pushes_to(fake_im, "20001"), pushes_to(fake_im, "20002")
    assert acme_push["sdk_app_id"] == ACME_IM.sdk_app_id and lalu_push["sdk_app_id"] == fake_im.sdk_app_id
    assert verify_user_sig(acme_push["usersig"], ACME_IM.sdk_app_id, ACME_IM_KEY, ACME_IM.admin_identifier) is None
    stack_key_on_acmes_sig = verify_user_sig(
        acme_push["usersig"], ACME_IM.sdk_app_id, fake_im.secret_key, ACME_IM.admin_identifier
    )
    assert stack_key_on_acmes_sig == "usersig signature mismatch"


def test_a_tenants_im_outage_holds_back_only_its_own_pushes(
    acme_im: TestClient, pipeline: ConfirmPipeline, fake_im: FakeTencentIm
) -> None:
    api = acme_im
    fake_im.set_outage(ACME_IM.sdk_app_id, 503)
    invite(api, "acme", target="20001")
    invite(api, "lalu", target="20002")
    pipeline.pump_streams()
    assert pipeline.pump_queue(backoff_elapses=True) == 2  # acme's push answered 503 is kept for a retry
    assert not pushes_to(fake_im, "20001") and len(pushes_to(fake_im, "20002")) == 1
    fake_im.set_outage(ACME_IM.sdk_app_id, 0)
    while pipeline.pump_queue(backoff_elapses=True):
        pass
    assert len(pushes_to(fake_im, "20001")) == 1


def test_a_disabled_tenants_pushes_are_held_off_their_queue_and_back_on_it_at_once_when_it_is_enabled(
    acme_im: TestClient, pipeline: ConfirmPipeline, fake_im: FakeTencentIm
) -> None:
    """Issue 48: a disabled tenant's push came back a minute later each time (at most fifteen), so after `enable`
    it waited for its delay to run out, and a tenant disabled for about a day had its pushes dead-lettered. Now the
    push is held: off its queue at its first receive (no receive spent however long the tenant stays disabled),
    and `enable` puts it back on the queue at once, where the next receive delivers it."""
    api = acme_im
    invite(api, "acme", target="20001")
    invite(api, "acme", target="20003")
    switch_tenant("acme", enabled=False)
    pipeline.pump_streams()
    assert pipeline.pump_queue() == 2
    assert pipeline.pump_queue(backoff_elapses=True) == 0  # held: nothing left on the queue to come back
    assert [held.queue for held in holds().held(Held.tenant_scope("acme"))] == [HeldQueue.IM_PUSH] * 2
    assert not pushes_to(fake_im, "20001") and fake_im.requests == 0  # never tried
    assert switch_tenant("acme", enabled=True)[1] == 2
    assert holds().held(Held.tenant_scope("acme")) == []
    assert pipeline.pump_queue() == 2  # back at once: no backoff to wait out
    assert len(pushes_to(fake_im, "20001")) == 1 and len(pushes_to(fake_im, "20003")) == 1


def test_a_paused_tenants_pushes_are_held_while_its_requests_are_served_and_go_out_on_resume(
    acme_im: TestClient, pipeline: ConfirmPipeline, fake_im: FakeTencentIm
) -> None:
    """Issue 48: `confirms pause --tenant APP` holds the tenant's IM pushes (its app being re-approved, say) while
    the tenant's users go on being served (not `disable`, which refuses them); another tenant's pushes go on."""
    reconfigure(tenant_cache_seconds=0, pauses_cache_seconds=0)
    holds().pause(Pause.key_of_tenant("acme"), "ana", "app re-approval")
    invite(acme_im, "acme", target="20001")  # served: the tenant is not disabled
    invite(acme_im, "lalu", target="20002")
    pipeline.drain(backoff_elapses=True)
    assert not pushes_to(fake_im, "20001") and len(pushes_to(fake_im, "20002")) == 1
    ((pause, held),) = holds().paused()
    assert (pause.key, held) == ("tenant#acme", 1)
    assert holds().resume("tenant#acme") == 1
    pipeline.drain()
    assert len(pushes_to(fake_im, "20001")) == 1


def test_each_tenants_cards_go_through_its_own_feishu_app_and_its_outage_holds_back_only_its_lanes(
    acme: None, events: EventsPipeline, feishu: FakeFeishu, service_keys: ServiceKeys
) -> None:
    feishu.add_app(ACME_FEISHU.app_id, ACME_FEISHU_SECRET)
    feishu.set_outage(ACME_FEISHU.app_id, 503)
    api = TestClient(create_app())
    for service, app in (("acme-ci", "acme"), ("lalu-ci", "lalu")):
        key, _ = service_keys.create_key(service, ["/events/external"], [app], targets=["chat_id:oc_ops"])
        body = {
            "event_id": f"{service}-1",
            "event_type": "build",
            "data": {
                "title": f"{service} built",
                "status": "ok",
                "target": {"receive_id": "oc_ops", "receive_id_type": "chat_id"},
            },
        }
        answer = api.post("/events/external", json=body, headers={"Authorization": f"Bearer {key}"})
        assert answer.status_code == 202, answer.text
    events.drain()
    assert [(entry["title"], entry["app_id"]) for entry in feishu.log] == [("lalu-ci built", feishu.app_id)]
    assert event_store().head("acme-ci").done_seq == 0  # its lane waits
    feishu.set_outage(ACME_FEISHU.app_id, 0)
    events.release_deferred()
    events.drain()
    assert ("acme-ci built", ACME_FEISHU.app_id) in [(entry["title"], entry["app_id"]) for entry in feishu.log]


def test_a_disabled_tenants_lanes_are_held_and_deliver_in_order_at_once_when_it_is_enabled(
    acme: None, events: EventsPipeline, feishu: FakeFeishu, service_keys: ServiceKeys
) -> None:
    """Issue 48: the lane's message is held (one hold a lane, however many of its messages come), nothing is tried
    while the tenant is disabled, and `enable` nudges the lane at once: its events go out in their order."""
    feishu.add_app(ACME_FEISHU.app_id, ACME_FEISHU_SECRET)
    api = TestClient(create_app())
    key, _ = service_keys.create_key("acme-ci", ["/events/external"], ["acme"], targets=["chat_id:oc_ops"])
    target = {"receive_id": "oc_ops", "receive_id_type": "chat_id"}
    for n in (1, 2):
        body = {
            "event_id": f"acme-{n}",
            "event_type": "build",
            "data": {"title": f"acme {n}", "status": "ok", "target": target},
        }
        answer = api.post("/events/external", json=body, headers={"Authorization": f"Bearer {key}"})
        assert answer.status_code == 202
    switch_tenant("acme", enabled=False)  # before either is delivered
    events.drain()
    assert not feishu.log and feishu.stats["token_requests"] == 0  # held, never tried
    assert [held.key for held in holds().held(Held.tenant_scope("acme"))] == ["lane#acme-ci"]
    assert events.release_deferred() == 0  # nothing was handed back to come back later
    switch_tenant("acme", enabled=True)
    events.drain()
    assert [(entry["title"], entry["app_id"]) for entry in feishu.log] == [
        ("acme 1", ACME_FEISHU.app_id),
        ("acme 2", ACME_FEISHU.app_id),
    ]


# ---------------------------------------------------------------------------------------------- admission
@pytest.fixture
def registration_required(aws: Any) -> None:
    reconfigure(require_registered_tenants=True, tenant_cache_seconds=0)
    tenants().set("lalu", "Lalu", None, None)


def test_a_token_of_an_unregistered_tenant_is_403_tenant_unknown_and_changes_nothing(
    registration_required: None,
) -> None:
    api = TestClient(create_app())
    refused = api.post("/api/v1/inbox/notifications/read-all", headers=_auth("10001", "ghost"))
    assert refused.status_code == 403 and refused.json()["data"]["reason"] == "tenant_unknown"
    assert api.get("/api/v1/inbox/unread-count", headers=_auth("10001", "lalu")).status_code == 200


def test_a_key_of_an_unregistered_or_disabled_tenant_is_403_before_anything_is_written(
    registration_required: None, service_keys: ServiceKeys
) -> None:
    api = TestClient(create_app())
    ghost, _ = service_keys.create_key("producer", ["/internal/v1/inbox"], ["ghost"])
    body = {"user_id": "10001", "kind": "TASK_COMPLETED", "session_id": "s1", "tail": "t1", "title": "done"}
    refused = api.post("/internal/v1/inbox/notifications", json=body, headers={"Authorization": f"Bearer {ghost}"})
    assert refused.status_code == 403 and refused.json()["data"]["reason"] == "tenant_unknown"
    tenants().switch("lalu", enabled=False)
    lalu, _ = service_keys.create_key("producer", ["/internal/v1/inbox"], ["lalu"])
    refused = api.post("/internal/v1/inbox/notifications", json=body, headers={"Authorization": f"Bearer {lalu}"})
    assert refused.status_code == 403 and refused.json()["data"]["reason"] == "tenant_disabled"
    assert boto3.client("dynamodb").scan(TableName=_inbox_table())["Count"] == 0


def test_an_owner_key_of_an_unregistered_tenant_is_403_on_the_owner_routes(
    registration_required: None, service_keys: ServiceKeys
) -> None:
    api = TestClient(create_app())
    key, _ = service_keys.create_key("owner", [OWNER_CAPABILITY], ["ghost"])
    refused = api.get("/internal/v1/confirms/owners", headers={"Authorization": f"Bearer {key}"})
    assert refused.status_code == 403 and refused.json()["data"]["reason"] == "tenant_unknown"


def test_a_websocket_connect_of_an_unregistered_tenant_is_403(registration_required: None) -> None:
    handler = load_function("websocket").handler
    event: dict[str, Any] = load_event("websocket/connect.json")
    event["queryStringParameters"] = {"token": make_token("10001", "ghost")}
    assert handler(event, FakeLambdaContext())["statusCode"] == 403
    event["queryStringParameters"] = {"token": make_token("10001", "lalu")}
    assert handler(event, FakeLambdaContext())["statusCode"] == 200


def _inbox_table() -> str:
    from herald.container import current

    return current().settings.inbox_table
