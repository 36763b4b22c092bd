"""Bad input is a 400 that names the field and changes nothing (contract §0): every input the launch review
reproduced as a 500 or as lax coercion, on moto, in process."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.support.tokens import make_token

USER = "10002"
NOTIFICATION = '{"user_id":"10002","kind":"QUESTION_PENDING","session_id":"s1","tail":"r1","title":"t","payload":%s}'


def _user(user: str = USER) -> dict[str, str]:
    return {"Authorization": f"Bearer {make_token(user)}"}


def _post_raw(api: TestClient, path: str, raw: str, headers: dict[str, str]) -> Any:
    return api.post(path, content=raw.encode(), headers={**headers, "Content-Type": "application/json"})


def _nested(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        pytest.param('{"n":1e308}', "payload.n", id="1e308"),
        pytest.param('{"n":NaN}', "body", id="NaN"),
        pytest.param('{"n":Infinity}', "body", id="Infinity"),
        pytest.param('{"s":"\\udfff"}', "body.payload.s", id="lone-surrogate"),
        pytest.param(_nested(40), "body", id="nested-40-deep"),
        pytest.param('{"n":' + "9" * 41 + "}", "payload.n", id="41-digit-number"),
        pytest.param('{"":1}', "body.payload", id="empty-key"),
        pytest.param('{"s":"' + "x" * 5_000 + '"}', "payload.s", id="string-over-the-payload-limit"),
        pytest.param(_nested(9), "payload.a", id="payload-nested-9-deep"),
    ],
)
def test_unstorable_or_oversized_payload_is_400_naming_the_field_and_stores_nothing(
    api: TestClient, producer: dict[str, str], payload: str, field: str
) -> None:
    response = _post_raw(api, "/internal/v1/inbox/notifications", NOTIFICATION % payload, producer)
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["code"] == "INVALID_ARGUMENT" and field in body["message"], body["message"][:300]
    listed = api.get("/api/v1/inbox/notifications", headers=_user()).json()["data"]
    assert listed["items"] == [] and listed["unread_count"] == 0


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param("{" + ",".join(f'"k{n}":1' for n in range(100_000)) + "}", id="100k-keys"),
        pytest.param('{"s":"' + "x" * 450_000 + '"}', id="450KB-string"),
    ],
)
def test_a_body_over_64_kib_is_413_naming_the_body_and_stores_nothing(
    api: TestClient, producer: dict[str, str], payload: str
) -> None:
    response = _post_raw(api, "/internal/v1/inbox/notifications", NOTIFICATION % payload, producer)
    assert response.status_code == 413, response.text
    assert (response.json()["code"], response.json()["data"]["field"]) == ("PAYLOAD_TOO_LARGE", "body")
    listed = api.get("/api/v1/inbox/notifications", headers=_user()).json()["data"]
    assert listed["items"] == [] and listed["unread_count"] == 0


def test_payload_at_the_documented_limits_is_accepted_and_read_back_as_sent(
    api: TestClient, producer: dict[str, str]
) -> None:
    payload = {"n": 12345678901234567890123456789012345678, "f": 1.5e-100, "deep": json.loads(_nested(7))}
    response = _post_raw(api, "/internal/v1/inbox/notifications", NOTIFICATION % json.dumps(payload), producer)
    assert response.status_code == 200, response.text
    (item,) = api.get("/api/v1/inbox/notifications", headers=_user()).json()["data"]["items"]
    assert item["payload"] == payload


@pytest.mark.parametrize("switch", ["subagent_done", "system_notify"])
@pytest.mark.parametrize("value", ["yes", 1, None, "true", 0, [], {}])
def test_preference_that_is_not_a_boolean_is_400_and_changes_nothing(api: TestClient, switch: str, value: Any) -> None:
    before = api.get("/api/v1/inbox/preferences", headers=_user()).json()["data"]
    response = api.put("/api/v1/inbox/preferences", json={switch: value}, headers=_user())
    assert response.status_code == 400 and response.json()["code"] == "INVALID_ARGUMENT", response.text
    assert api.get("/api/v1/inbox/preferences", headers=_user()).json()["data"] == before


@pytest.mark.parametrize("revision", [True, "2", 10**40, 2**53, 1.0])
def test_revision_that_is_not_a_bounded_integer_is_400(api: TestClient, service_keys: Any, revision: Any) -> None:
    key, _ = service_keys.create_key("scheduler", ["/events/external"], targets=["chat_id:oc_ops"])
    body = {
        "event_id": "e1",
        "event_type": "job.done",
        "data": {
            "event_id": "card-1",
            "revision": revision,
            "title": "t",
            "status": "done",
            "target": {"receive_id": "oc_ops", "receive_id_type": "chat_id"},
        },
    }
    response = api.post("/events/external", json=body, headers={"Authorization": f"Bearer {key}"})
    assert response.status_code == 400 and response.json()["code"] == "INVALID_ARGUMENT", response.text


def test_id_with_a_trailing_newline_is_400_and_invites_nobody(pipeline: Any) -> None:
    """Regression: "10002\\n" passed re.match("^...$"), invited another account and slipped past the
    one-pending-invitation rule."""
    from herald.api.app import create_app

    api = TestClient(create_app())
    inviter = {"Authorization": f"Bearer {make_token('10001')}"}
    assert api.post(
        "/api/v1/role-invitations", json={"invitation_type": "host", "target_user_id": "10002"}, headers=inviter
    ).is_success
    response = api.post(
        "/api/v1/role-invitations", json={"invitation_type": "host", "target_user_id": "10002\n"}, headers=inviter
    )
    assert response.status_code == 400, response.text


def test_session_member_id_with_a_newline_is_400(turns: Any) -> None:
    response = turns.session(members={"alice\n": "developer"})
    assert response.status_code == 400, response.text


def test_openapi_documents_the_payload_limits(api: TestClient) -> None:
    schema = api.get("/api/v1/openapi.json").json()
    payload = schema["components"]["schemas"]["NotificationIn"]["properties"]["payload"]
    assert "16384 bytes" in payload["description"] and "no empty keys" in payload["description"]
