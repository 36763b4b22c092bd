"""Issue 49, item 4: one error shape. Every 4xx says in `message` what to change and names the field in
`data.field` where there is one; a body over the limit is 413; bad UTF-8, deep nesting, a body that is not JSON
and a wrong content type are told in Herald's words, never FastAPI's or pydantic's."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

URL = "/internal/v1/inbox/notifications"


def refused(api: TestClient, producer: dict[str, str], body: bytes, content_type: str = "application/json") -> Any:
    answer = api.post(URL, content=body, headers={**producer, "content-type": content_type})
    return answer.status_code, answer.json()


def test_a_body_over_64_kib_is_413_naming_the_body_whatever_it_holds(api: TestClient, producer: dict[str, str]) -> None:
    for body in (b'{"a":"' + b"x" * 70_000 + b'"}', b"{" * 70_000):
        status, answer = refused(api, producer, body)
        assert (status, answer["code"], answer["data"]["field"]) == (413, "PAYLOAD_TOO_LARGE", "body"), answer
        assert "65536" in answer["message"]


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b'{"app_code":"\xff\xfe"}', "not valid UTF-8"),
        (b"[" * 5_000 + b"]" * 5_000, "nested too deep"),
        (b"{nope", "not valid JSON"),
        ((b'{"a":' * 13) + b"1" + b"}" * 13, "nested deeper than 12 levels"),
    ],
)
def test_a_body_herald_cannot_read_is_told_in_its_own_words_naming_the_body(
    api: TestClient, producer: dict[str, str], body: bytes, said: str
) -> None:
    status, answer = refused(api, producer, body)
    assert status == 400 and answer["code"] == "INVALID_ARGUMENT", answer
    assert said in answer["message"] and "There was an error" not in answer["message"]
    assert answer["data"]["field"].startswith("body"), answer


def test_a_json_body_sent_as_another_content_type_says_which_content_type_to_send(
    api: TestClient, producer: dict[str, str]
) -> None:
    for content_type in ("text/plain", "application/x-www-form-urlencoded"):
        status, answer = refused(api, producer, b'{"a":1}', content_type)
        assert status == 400 and answer["data"]["field"] == "content-type", answer
        assert "content-type: application/json" in answer["message"] and "dictionary" not in answer["message"]


def test_a_missing_or_mistyped_field_is_named_in_data_field(api: TestClient, producer: dict[str, str]) -> None:
    status, answer = refused(api, producer, json.dumps({"app_code": "lalu"}).encode())
    assert status == 400 and answer["data"]["field"] == "body.kind" and "body.kind: Field required" in answer["message"]
    query = api.get("/api/v1/inbox/notifications", params={"page_size": "many"}, headers=_user())
    assert query.status_code == 400 and query.json()["data"]["field"] == "query.page_size", query.json()


def test_a_domain_refusal_that_names_a_field_of_the_request_carries_it_in_data_field(api: TestClient) -> None:
    token = api.get("/api/v1/inbox/notifications", params={"page_token": "garbage"}, headers=_user()).json()
    assert token["data"]["field"] == "query.page_token", token
    confirm = api.post("/api/v1/message/action-confirms/not-an-id/accept", json={"command_id": "c1"}, headers=_user())
    assert confirm.status_code == 400 and confirm.json()["data"]["field"] == "path.confirm_id", confirm.json()
    yourself = api.post("/api/v1/role-invitations", json={"invitation_type": "host", "target_user_id": "10002"},
                        headers=_user("10002"))  # fmt: skip
    assert yourself.status_code == 400 and "field" not in (yourself.json()["data"] or {}), yourself.json()


def _user(user: str = "10002") -> dict[str, str]:
    from tests.support.tokens import make_token

    return {"Authorization": f"Bearer {make_token(user)}"}


def test_every_4xx_of_the_contracts_table_is_the_envelope_with_a_message_that_says_what_to_change(
    api: TestClient, producer: dict[str, str], service_keys: Any
) -> None:
    partner, _ = service_keys.create_key("scheduler", ["/events/external"])
    unknown_confirm = "/api/v1/message/action-confirms/cfm_" + "0" * 32 + "/accept"
    answers = {
        400: api.get("/api/v1/inbox/notifications", params={"page_token": "garbage"}, headers=_user()),
        401: api.get("/api/v1/inbox/unread-count"),
        403: api.post(URL, json={}, headers={"Authorization": f"Bearer {partner}"}),
        404: api.post(unknown_confirm, json={"command_id": "c"}, headers=_user()),
        405: api.delete("/api/v1/inbox/unread-count", headers=_user()),
        413: api.post(URL, content=b"{" * 70_000, headers={**producer, "content-type": "application/json"}),
    }
    for status, answer in answers.items():
        body = answer.json()
        assert answer.status_code == status, (status, body)
        assert set(body) == {"code", "message", "data", "request_id"} and body["message"].strip(), (status, body)
        assert body["code"] != "INTERNAL" and "error parsing" not in body["message"], (status, body)
