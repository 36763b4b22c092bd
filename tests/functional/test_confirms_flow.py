"""Role invitation -> confirm -> IM push -> accept/reject, in process on moto with the fake Tencent IM.

Every worker runs as its event source mapping would feed it (tests/support/pipeline.py).
"""

from __future__ import annotations

import json
import time
from typing import Any

import boto3
import pytest
from fastapi.testclient import TestClient

from herald.api.app import create_app
from herald.budgets import IM_PUSH_MAX_ATTEMPTS, PROVIDER_CALL_MS, RECORD_OUTCOME_MS
from herald.confirms.delivery import IM_CONFIRM, Push
from herald.confirms.wiring import confirms
from herald.container import current
from herald.pagination import encode_token
from herald_dev.fakes.tencent_im import FakeTencentIm
from herald_dev.sqs_source import sqs_record
from tests.support.lambda_context import FakeLambdaContext
from tests.support.pipeline import ConfirmPipeline
from tests.support.tokens import make_token
from tests.support.waiting import eventually

INVITER, TARGET, STRANGER = "10001", "10002", "10009"


def _auth(user: str, app: str = "lalu") -> dict[str, str]:
    return {"Authorization": f"Bearer {make_token(user, app)}"}


@pytest.fixture
def api(pipeline: ConfirmPipeline) -> TestClient:
    return TestClient(create_app())


def invite(api: TestClient, kind: str = "host", target: str = TARGET, **extra: str) -> dict[str, Any]:
    response = api.post(
        "/api/v1/role-invitations",
        json={"invitation_type": kind, "target_user_id": target, **extra},
        headers=_auth(INVITER),
    )
    assert response.status_code == 200, response.text
    return response.json()["data"]  # type: ignore[no-any-return]


def confirm_ids(fake_im: FakeTencentIm, kind: str = IM_CONFIRM) -> list[str]:
    return [m["data"]["confirm_id"] for m in fake_im.messages if m["data"]["type"] == kind]


def stored_confirms() -> list[dict[str, Any]]:
    items = boto3.client("dynamodb").scan(TableName=current().settings.confirms_table)["Items"]
    return [i for i in items if i["item_type"]["S"] == "confirm"]


def invitation_item(invitation_id: str) -> dict[str, Any]:
    key = {"pk": {"S": f"INV#lalu#{invitation_id}"}}
    return boto3.client("dynamodb").get_item(TableName=current().settings.invitations_table, Key=key)["Item"]


def grants(user: str = TARGET) -> list[dict[str, Any]]:
    items = boto3.client("dynamodb").scan(TableName=current().settings.invitations_table)["Items"]
    return [i for i in items if i["pk"]["S"].startswith(f"ROLE#lalu#{user}#")]


def accept(api: TestClient, confirm_id: str, user: str = TARGET, command: str = "cmd-1") -> Any:
    return api.post(
        f"/api/v1/message/action-confirms/{confirm_id}/accept", json={"command_id": command}, headers=_auth(user)
    )


def reject(api: TestClient, confirm_id: str, user: str = TARGET, command: str = "cmd-2") -> Any:
    return api.post(
        f"/api/v1/message/action-confirms/{confirm_id}/reject",
        json={"command_id": command, "reason": "no"},
        headers=_auth(user),
    )


def created(
    api: TestClient, pipeline: ConfirmPipeline, fake_im: FakeTencentIm, **kwargs: Any
) -> tuple[dict[str, Any], str]:
    invitation = invite(api, **kwargs)
    pipeline.drain()
    (confirm_id,) = [c for c in confirm_ids(fake_im) if c in {i["confirm_id"]["S"] for i in stored_confirms()}][-1:]
    return invitation, confirm_id


def test_an_invitation_yields_one_pending_confirm_and_one_im_confirm_push(
    api: TestClient, pipeline: ConfirmPipeline, fake_im: FakeTencentIm
) -> None:
    invitation = invite(api, "agency", agency_name="ABC guild")
    assert invitation["status"] == "pending" and invitation["inviter_user_id"] == INVITER
    pipeline.drain()
    (confirm,) = stored_confirms()
    assert confirm["status"]["S"] == "pending" and confirm["business_id"]["S"] == invitation["invitation_id"]
    (message,) = fake_im.messages
    assert (message["from"], message["to"], message["desc"], message["ext"]) == (
        INVITER,
        TARGET,
        "im_confirm",
        "im_confirm",
    )
    data = message["data"]
    assert data["type"] == "im_confirm" and data["version"] == 1 and data["status"] == "pending"
    assert data["business_type"] == "role_invitation" and data["business_subtype"] == "agency"
    assert data["msg"] == "User 10001 invited you to join ABC guild as an agency"
    assert data["actions"] == [
        {"action": "reject", "label": "Reject", "style": "secondary"},
        {"action": "accept", "label": "Accept", "style": "primary"},
    ]
    assert data["expire_at_ms"] - data["created_at_ms"] == 7 * 86400 * 1000


def test_redelivered_stream_batches_create_one_confirm_and_one_push(
    api: TestClient, pipeline: ConfirmPipeline, fake_im: FakeTencentIm
) -> None:
    invite(api)
    invitation_records, confirm_records = pipeline.pump_streams()
    assert invitation_records and confirm_records
    for _ in range(3):  # Lambda retries the same batches
        pipeline.invitations_outbox({"Records": invitation_records}, FakeLambdaContext())
        pipeline.confirms_outbox({"Records": confirm_records}, FakeLambdaContext())
    pipeline.drain()
    assert len(stored_confirms()) == 1
    assert len(fake_im.messages) == 1


def test_a_push_queued_twice_past_fifo_deduplication_is_sent_once(
    api: TestClient, pipeline: ConfirmPipeline, fake_im: FakeTencentIm
) -> None:
    _, confirm_id = created(api, pipeline, fake_im)
    push = Push("lalu", confirm_id, IM_CONFIRM, "pending")
    sqs = boto3.client("sqs")
    for attempt in range(2):  # different deduplication ids: SQS would deliver both
        sqs.send_message(
            QueueUrl=current().settings.im_push_queue_url,
            MessageBody=json.dumps(push.to_message()),
            MessageGroupId=f"lalu#{TARGET}",
            MessageDeduplicationId=f"replay-{attempt}",
        )
    pipeline.drain()
    assert confirm_ids(fake_im) == [confirm_id]


def test_accept_grants_the_role_once_and_a_repeat_returns_the_same_view(
    api: TestClient, pipeline: ConfirmPipeline, fake_im: FakeTencentIm
) -> None:
    invitation, confirm_id = created(api, pipeline, fake_im)
    first = accept(api, confirm_id)
    assert first.status_code == 200
    assert first.json()["data"]["status"] == "accepted" and first.json()["data"]["processed_action"] == "accept"
    again = accept(api, confirm_id, command="another-command")
    assert again.status_code == 200 and again.json()["data"] == first.json()["data"]
    assert invitation_item(invitation["invitation_id"])["status"]["S"] == "accepted"
    assert invitation_item(invitation["invitation_id"])["version"]["N"] == "2"
    assert len(grants()) == 1
    pipeline.drain()
    updates = [m for m in fake_im.messages if m["data"]["type"] == "im_confirm_update"]
    assert len(updates) == 1 and updates[0]["data"]["status"] == "accepted"
    assert updates[0]["sync_other_machine"] == 1 and updates[0]["send_msg_control"] == ["NoUnread", "NoLastMsg"]


def test_reject_after_accept_is_a_conflict_and_the_state_stays(
    api: TestClient, pipeline: ConfirmPipeline, fake_im: FakeTencentIm
) -> None:
    _, confirm_id = created(api, pipeline, fake_im)
    accept(api, confirm_id)
    refused = reject(api, confirm_id)
    assert refused.status_code == 409
    assert refused.json()["code"] == "CONFLICT" and refused.json()["data"]["reason"] == "accepted"
    status = api.post(
        "/api/v1/message/action-confirms/status", json={"confirm_ids": [confirm_id]}, headers=_auth(TARGET)
    )
    assert status.json()["data"]["items"][0]["status"] == "accepted"


def test_reject_moves_invitation_and_confirm_to_rejected_without_a_grant(
    api: TestClient, pipeline: ConfirmPipeline, fake_im: FakeTencentIm
) -> None:
    invitation, confirm_id = created(api, pipeline, fake_im)
    response = reject(api, confirm_id)
    assert response.status_code == 200 and response.json()["data"]["status"] == "rejected"
    assert invitation_item(invitation["invitation_id"])["status"]["S"] == "rejected"
    assert grants() == []


def test_only_the_receiver_may_act_and_others_learn_nothing(
    api: TestClient, pipeline: ConfirmPipeline, fake_im: FakeTencentIm
) -> None:
    _, confirm_id = created(api, pipeline, fake_im)
    assert accept(api, confirm_id, user=INVITER).status_code == 403  # the sender sees it but may not act
    assert accept(api, confirm_id, user=STRANGER).status_code == 404  # a stranger cannot tell it exists
    other_tenant = api.post(
        f"/api/v1/message/action-confirms/{confirm_id}/accept", json={"command_id": "x"}, headers=_auth(TARGET, "other")
    )
    assert other_tenant.status_code == 404
    assert accept(api, "cfm_" + "0" * 32).status_code == 404
    assert accept(api, "not-a-confirm").status_code == 400
    assert (
        api.post(f"/api/v1/message/action-confirms/{confirm_id}/accept", json={}, headers=_auth(TARGET)).status_code
        == 400
    )
    assert accept(api, confirm_id, command="bad command!").status_code == 400
    assert stored_confirms()[0]["status"]["S"] == "pending"


def test_status_batch_shows_only_the_callers_confirms(
    api: TestClient, pipeline: ConfirmPipeline, fake_im: FakeTencentIm
) -> None:
    _, confirm_id = created(api, pipeline, fake_im)
    unknown = "cfm_" + "1" * 32
    body = {"confirm_ids": [confirm_id, unknown, confirm_id]}
    for user, expected in ((TARGET, [confirm_id]), (INVITER, [confirm_id]), (STRANGER, [])):
        items = api.post("/api/v1/message/action-confirms/status", json=body, headers=_auth(user)).json()["data"][
            "items"
        ]
        assert [i["confirm_id"] for i in items] == expected
    too_many = {"confirm_ids": [unknown] * 101}
    assert api.post("/api/v1/message/action-confirms/status", json=too_many, headers=_auth(TARGET)).status_code == 400
    malformed = {"confirm_ids": ["nope"]}
    assert api.post("/api/v1/message/action-confirms/status", json=malformed, headers=_auth(TARGET)).status_code == 400


def test_conversation_list_is_newest_first_and_pages_without_gaps(
    api: TestClient, pipeline: ConfirmPipeline, fake_im: FakeTencentIm
) -> None:
    for kind in ("host", "agency", "bd"):
        invite(api, kind, agency_name="G" if kind == "agency" else "")
        time.sleep(0.002)  # the sleep is the behaviour: confirms made milliseconds apart page newest first
    invite(api, "host", target="10003")
    pipeline.drain()
    seen: list[dict[str, Any]] = []
    token = ""
    while True:
        page = api.get(
            "/api/v1/message/action-confirms",
            params={"peer_user_id": INVITER, "page_size": 2, "page_token": token},
            headers=_auth(TARGET),
        ).json()["data"]
        seen.extend(page["items"])
        token = page["next_page_token"]
        if not token:
            break
    assert [c["business_subtype"] for c in seen] == ["bd", "agency", "host"]
    assert [c["created_at_ms"] for c in seen] == sorted((c["created_at_ms"] for c in seen), reverse=True)
    first = api.get(
        "/api/v1/message/action-confirms", params={"peer_user_id": INVITER, "page_size": 1}, headers=_auth(TARGET)
    )
    stolen = first.json()["data"]["next_page_token"]
    other_pair = api.get(
        "/api/v1/message/action-confirms",
        params={"peer_user_id": "10003", "page_token": stolen},
        headers=_auth(INVITER),
    )
    assert other_pair.status_code == 400
    assert (
        api.get(
            "/api/v1/message/action-confirms", params={"peer_user_id": INVITER, "page_size": 101}, headers=_auth(TARGET)
        ).status_code
        == 400
    )


@pytest.mark.parametrize(
    "key",
    [
        {"pk": 5, "pair_key": "x", "pair_sort": "y"},  # a key of the wrong type
        {"pk": "x", "pair_key": "x"},  # a key short of the index's
        {"nope": "x"},  # a key the table does not have
    ],
    ids=["wrong-type", "missing-key", "unknown-key"],
)
def test_a_tampered_page_token_of_the_callers_own_conversation_is_400_not_500(
    api: TestClient, key: dict[str, object]
) -> None:
    pair = f"lalu#{min(TARGET, INVITER)}#{max(TARGET, INVITER)}"
    response = api.get(
        "/api/v1/message/action-confirms",
        params={"peer_user_id": INVITER, "page_token": encode_token({"pair": pair, **key})},
        headers=_auth(TARGET),
    )
    assert response.status_code == 400, response.text
    assert "page_token" in response.json()["message"]


def test_inviter_cancel_cancels_the_confirm_and_pushes_the_update(
    api: TestClient, pipeline: ConfirmPipeline, fake_im: FakeTencentIm
) -> None:
    invitation, confirm_id = created(api, pipeline, fake_im)
    path = f"/api/v1/role-invitations/{invitation['invitation_id']}/cancel"
    assert api.post(path, headers=_auth(TARGET)).status_code == 403
    assert api.post(path, headers=_auth(STRANGER)).status_code == 404
    assert api.post(path, headers=_auth(INVITER)).json()["data"]["status"] == "cancelled"
    assert api.post(path, headers=_auth(INVITER)).status_code == 409
    pipeline.drain()
    assert stored_confirms()[0]["status"]["S"] == "cancelled"
    assert accept(api, confirm_id).status_code == 409
    assert [m["data"]["status"] for m in fake_im.messages] == ["pending", "cancelled"]


def test_invitation_is_visible_to_its_parties_only(api: TestClient, pipeline: ConfirmPipeline) -> None:
    invitation = invite(api)
    path = f"/api/v1/role-invitations/{invitation['invitation_id']}"
    assert api.get(path, headers=_auth(INVITER)).status_code == 200
    assert api.get(path, headers=_auth(TARGET)).status_code == 200
    assert api.get(path, headers=_auth(STRANGER)).status_code == 404
    assert api.get(path, headers=_auth(TARGET, "other")).status_code == 404
    assert api.get("/api/v1/role-invitations/inv_bad", headers=_auth(INVITER)).status_code == 400


@pytest.mark.parametrize(
    "body",
    [
        {"invitation_type": "king", "target_user_id": TARGET},
        {"invitation_type": "host", "target_user_id": INVITER},
        {"invitation_type": "host", "target_user_id": "abc"},
        {"invitation_type": "agency", "target_user_id": TARGET},
        {"invitation_type": "host", "target_user_id": TARGET, "extra": 1},
    ],
)
def test_bad_invitations_are_400_and_store_nothing(
    api: TestClient, pipeline: ConfirmPipeline, body: dict[str, Any]
) -> None:
    assert api.post("/api/v1/role-invitations", json=body, headers=_auth(INVITER)).status_code == 400
    assert boto3.client("dynamodb").scan(TableName=current().settings.invitations_table)["Count"] == 0


def test_a_second_pending_invitation_of_the_same_kind_is_a_conflict(api: TestClient, pipeline: ConfirmPipeline) -> None:
    invitation = invite(api)
    second = api.post(
        "/api/v1/role-invitations", json={"invitation_type": "host", "target_user_id": TARGET}, headers=_auth(INVITER)
    )
    assert second.status_code == 409 and second.json()["data"]["reason"] == "invitation_pending"
    api.post(f"/api/v1/role-invitations/{invitation['invitation_id']}/cancel", headers=_auth(INVITER))
    assert invite(api)["status"] == "pending"  # once decided, a new one may be sent


def _came_back(pipeline: ConfirmPipeline) -> None:
    assert pipeline.pump_queue() >= 1


def test_im_5xx_then_ok_sends_one_message(api: TestClient, pipeline: ConfirmPipeline, fake_im: FakeTencentIm) -> None:
    fake_im.queue_faults({"status": 500})
    invite(api)
    pipeline.drain()
    assert fake_im.messages == [] and fake_im.requests == 1
    eventually(lambda: _came_back(pipeline), timeout=15)  # hidden for its backoff (2 s after the first receive)
    pipeline.drain()
    assert len(fake_im.messages) == 1
    (delivery,) = boto3.client("dynamodb").scan(TableName=current().settings.deliveries_table)["Items"]
    assert delivery["status"]["S"] == "sent" and delivery["attempts"]["N"] == "2"
    assert delivery["last_error"]["S"].startswith("Tencent IM answered HTTP 500")
    assert int(delivery["msg_random"]["N"]) == fake_im.messages[0]["msg_random"]


def test_permanent_im_error_dead_letters_the_push_with_its_reason(
    api: TestClient, pipeline: ConfirmPipeline, fake_im: FakeTencentIm
) -> None:
    fake_im.queue_faults({"error_code": 20003, "info": "To_Account is invalid"})
    invite(api)
    pipeline.drain()
    assert fake_im.messages == []
    dead = boto3.client("sqs").receive_message(
        QueueUrl=current().settings.im_push_dlq_url, MessageAttributeNames=["All"], MaxNumberOfMessages=10
    )["Messages"]
    assert len(dead) == 1
    assert "20003" in dead[0]["MessageAttributes"]["failure_reason"]["StringValue"]
    (delivery,) = boto3.client("dynamodb").scan(TableName=current().settings.deliveries_table)["Items"]
    assert delivery["status"]["S"] == "failed"


def test_a_tencent_outage_dead_letters_the_push_that_failed_and_not_those_waiting_behind_it(
    api: TestClient, pipeline: ConfirmPipeline, fake_im: FakeTencentIm
) -> None:
    """Three pushes to one receiver share a message group: while the first fails, the two behind it are
    received and skipped, untried, once per attempt. Only Herald's own attempt count dead-letters."""
    fake_im.queue_faults(*[{"status": 500}] * IM_PUSH_MAX_ATTEMPTS)
    for inviter in ("10001", "10003", "10004"):
        response = api.post(
            "/api/v1/role-invitations",
            json={"invitation_type": "host", "target_user_id": TARGET},
            headers=_auth(inviter),
        )
        assert response.status_code == 200, response.text
    pipeline.pump_streams()
    for _ in range(3 * IM_PUSH_MAX_ATTEMPTS):
        if not pipeline.pump_queue(backoff_elapses=True):
            break
    sqs = boto3.client("sqs")
    dead = sqs.receive_message(
        QueueUrl=current().settings.im_push_dlq_url, MessageAttributeNames=["All"], MaxNumberOfMessages=10
    ).get("Messages", [])
    assert len(dead) == 1
    reason = dead[0]["MessageAttributes"]["failure_reason"]["StringValue"]
    assert reason.startswith(f"gave up after {IM_PUSH_MAX_ATTEMPTS} attempts: Tencent IM answered HTTP 500")
    failed_confirm = json.loads(dead[0]["Body"])["confirm_id"]
    assert len(fake_im.messages) == 2 and failed_confirm not in confirm_ids(fake_im)
    # The two behind it were received, untried, as often as the push ahead of them failed.
    receives = [
        int(record["attributes"]["ApproximateReceiveCount"])
        for event in pipeline.delivered_events
        for record in event["Records"]
        if json.loads(record["body"])["confirm_id"] != failed_confirm
    ]
    assert max(receives) >= IM_PUSH_MAX_ATTEMPTS
    deliveries = boto3.client("dynamodb").scan(TableName=current().settings.deliveries_table)["Items"]
    by_status = sorted((d["status"]["S"], int(d["attempts"]["N"])) for d in deliveries)
    assert by_status == [("failed", IM_PUSH_MAX_ATTEMPTS), ("sent", 1), ("sent", 1)]  # each sent at its first try


def test_a_push_without_time_left_for_its_call_is_returned_untried_and_visible_at_once(
    api: TestClient, pipeline: ConfirmPipeline, fake_im: FakeTencentIm
) -> None:
    invite(api)
    pipeline.pump_streams()
    sqs = boto3.client("sqs")
    (message,) = sqs.receive_message(QueueUrl=pipeline.queue_url, AttributeNames=["All"])["Messages"]
    record = sqs_record(message, pipeline.queue_arn, "us-east-1")
    almost_over = FakeLambdaContext(remaining_ms=PROVIDER_CALL_MS + RECORD_OUTCOME_MS - 1)
    result = pipeline.im_sender({"Records": [record]}, almost_over)
    assert result["batchItemFailures"] == [{"itemIdentifier": message["MessageId"]}]
    assert fake_im.requests == 0
    (delivery,) = boto3.client("dynamodb").scan(TableName=current().settings.deliveries_table)["Items"]
    assert "attempts" not in delivery or delivery["attempts"]["N"] == "0"
    assert "sending_since_ms" not in delivery
    (again,) = sqs.receive_message(QueueUrl=pipeline.queue_url)["Messages"]  # no backoff: it never ran
    assert again["MessageId"] == message["MessageId"]


def test_operators_see_a_confirms_delivery_state(
    api: TestClient, pipeline: ConfirmPipeline, fake_im: FakeTencentIm
) -> None:
    from herald.auth.wiring import service_keys

    _, confirm_id = created(api, pipeline, fake_im)
    key, _ = service_keys().create_key("support", ["/internal/v1/confirms"])
    response = api.get(f"/internal/v1/confirms/{confirm_id}/deliveries", headers={"Authorization": f"Bearer {key}"})
    body = response.json()["data"]
    assert body["confirm"]["confirm_id"] == confirm_id
    assert [(d["push"], d["status"], d["attempts"]) for d in body["deliveries"]] == [("im_confirm", "sent", 1)]
    assert body["deliveries"][0]["sent_at_ms"] > 0
    assert confirms().get("lalu", confirm_id).status.value == "pending"
