"""Inbox in process on moto: idempotent writes, exclusions, preferences, an exact unread count."""

from __future__ import annotations

import threading
import time
from typing import Any

import boto3
import pytest
from fastapi.testclient import TestClient
from herald_ops.template import StackTemplate

from herald.container import current
from herald.inbox.models import dedup_key
from herald.inbox.wiring import inbox
from herald.pagination import encode_token
from tests.support.tokens import make_token

USER, OTHER = "10002", "10003"


def _user(user: str = USER, app: str = "lalu") -> dict[str, str]:
    return {"Authorization": f"Bearer {make_token(user, app)}"}


def notify(api: TestClient, producer: dict[str, str], **fields: Any) -> dict[str, Any]:
    body = {
        "app_code": "lalu",
        "user_id": USER,
        "kind": "QUESTION_PENDING",
        "session_id": "s1",
        "tail": "r1",
        "title": "A question is waiting",
        "content": "Which branch?",
        "payload": {"request_id": "r1"},
        **fields,
    }
    response = api.post("/internal/v1/inbox/notifications", json=body, headers=producer)
    assert response.status_code == 200, response.text
    return response.json()["data"]  # type: ignore[no-any-return]


def count(api: TestClient, user: str = USER) -> int:
    return int(api.get("/api/v1/inbox/unread-count", headers=_user(user)).json()["data"]["unread_count"])


def items(api: TestClient, user: str = USER, **params: Any) -> list[dict[str, Any]]:
    return api.get("/api/v1/inbox/notifications", params=params, headers=_user(user)).json()["data"]["items"]  # type: ignore[no-any-return]


def test_same_dedup_key_twice_is_one_item_and_a_repeat_after_read_changes_nothing(
    api: TestClient, producer: dict[str, str]
) -> None:
    first = notify(api, producer)
    again = notify(api, producer, title="changed")
    assert first["created"] is True and again == {
        "notification_id": first["notification_id"],
        "created": False,
        "skipped": None,
    }
    (item,) = items(api)
    api.post(f"/api/v1/inbox/notifications/{item['notification_id']}/read", headers=_user())
    notify(api, producer, title="changed again")
    (after,) = items(api)
    assert (
        after["is_read"] is True and after["created_at_ms"] == item["created_at_ms"] and after["title"] == item["title"]
    )
    assert count(api) == 0


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"kind": "TASK_COMPLETED", "phase": "CANCELLED"}, "cancelled"),
        ({"kind": "TASK_COMPLETED", "session_type": "SUBAGENT"}, "session_type"),
        ({"kind": "TASK_FAILED", "session_type": "SIDE_TASK"}, "session_type"),
        ({"kind": "TASK_COMPLETED", "channel": "weixin"}, "bot_channel"),
        ({"kind": "QUESTION_PENDING", "channel": "feishu"}, "bot_channel"),
        ({"user_id": None}, "unknown_user"),
        ({"kind": "SUBAGENT_DONE", "payload": {"status": "FAILED"}}, "preference"),  # off by default
    ],
)
def test_excluded_events_are_skipped_and_store_nothing(
    api: TestClient, producer: dict[str, str], fields: dict[str, Any], reason: str
) -> None:
    result = notify(api, producer, **fields)
    assert result == {"notification_id": "", "created": False, "skipped": reason}
    assert items(api) == [] and count(api) == 0


def test_subagent_session_still_gets_its_subagent_done_and_scheduled_source_passes_through(
    api: TestClient, producer: dict[str, str]
) -> None:
    api.put("/api/v1/inbox/preferences", json={"subagent_done": True}, headers=_user())
    notify(api, producer, kind="SUBAGENT_DONE", session_type="SUBAGENT", payload={"status": "CANCELLED"}, tail="e1")
    notify(api, producer, kind="TASK_COMPLETED", phase="COMPLETED", payload={"source": "SCHEDULED"}, tail="e2")
    payloads = [i["payload"] for i in items(api)]
    assert payloads == [{"source": "SCHEDULED"}, {"status": "CANCELLED"}]


@pytest.mark.parametrize(
    "fields",
    [
        {"kind": "NOPE"},
        {"kind": "SUBAGENT_DONE", "payload": {"status": "DONE"}},
        {"kind": "TASK_COMPLETED", "phase": "FAILED"},
        {"user_id": "alice"},
        {"session_id": "has space"},
        {"unexpected": 1},
    ],
)
def test_bad_producer_input_is_400_and_stores_nothing(
    api: TestClient, producer: dict[str, str], fields: dict[str, Any]
) -> None:
    api.put("/api/v1/inbox/preferences", json={"subagent_done": True}, headers=_user())
    body = {"user_id": USER, "kind": "QUESTION_PENDING", "session_id": "s", "tail": "t", "title": "x", **fields}
    assert api.post("/internal/v1/inbox/notifications", json=body, headers=producer).status_code == 400
    assert items(api) == []


def test_disabled_kind_is_skipped_and_task_completed_covers_failures(api: TestClient, producer: dict[str, str]) -> None:
    assert api.get("/api/v1/inbox/preferences", headers=_user()).json()["data"] == {
        "task_completed": True,
        "question_pending": True,
        "approval_pending": True,
        "subagent_done": False,
        "system_notify": True,
    }
    api.put("/api/v1/inbox/preferences", json={"task_completed": False}, headers=_user())
    assert notify(api, producer, kind="TASK_FAILED", tail="e9")["skipped"] == "preference"
    api.put("/api/v1/inbox/preferences", json={"task_completed": True}, headers=_user())
    assert notify(api, producer, kind="TASK_FAILED", tail="e9")["created"] is True
    assert api.put("/api/v1/inbox/preferences", json={"nonsense": True}, headers=_user()).status_code == 400


def test_system_notify_defaults_on_round_trips_alone_and_never_stops_recording(
    api: TestClient, producer: dict[str, str]
) -> None:
    assert api.get("/api/v1/inbox/preferences", headers=_user()).json()["data"]["system_notify"] is True
    saved = api.put("/api/v1/inbox/preferences", json={"system_notify": False}, headers=_user())
    assert saved.status_code == 200 and saved.json()["data"]["system_notify"] is False
    read = api.get("/api/v1/inbox/preferences", headers=_user()).json()["data"]
    assert read == {**read, "system_notify": False, "task_completed": True, "subagent_done": False}
    assert notify(api, producer, kind="TASK_COMPLETED", tail="t1")["created"] is True  # the client's switch only
    assert count(api) == 1
    assert api.get("/api/v1/inbox/preferences", headers=_user(OTHER)).json()["data"]["system_notify"] is True


def test_preferences_stored_before_system_notify_existed_read_it_as_on(api: TestClient, aws: StackTemplate) -> None:
    """A preferences item written by an earlier Herald (the four kind switches only)."""
    boto3.client("dynamodb").put_item(
        TableName=aws.physical_name("InboxTable"),
        Item={"pk": {"S": f"U#lalu#{USER}"}, "sk": {"S": "PREFS"}, "task_completed": {"BOOL": False}},
    )
    read = api.get("/api/v1/inbox/preferences", headers=_user()).json()["data"]
    assert read["task_completed"] is False and read["system_notify"] is True
    api.put("/api/v1/inbox/preferences", json={"system_notify": False}, headers=_user())
    read = api.get("/api/v1/inbox/preferences", headers=_user()).json()["data"]
    assert read["task_completed"] is False and read["system_notify"] is False


def test_resolve_marks_read_is_idempotent_and_unknown_is_not_found(api: TestClient, producer: dict[str, str]) -> None:
    notify(api, producer, kind="APPROVAL_PENDING", tail="req-7")
    body = {"app_code": "lalu", "user_id": USER, "kind": "APPROVAL_PENDING", "session_id": "s1", "tail": "req-7"}
    assert api.post("/internal/v1/inbox/notifications/resolve", json=body, headers=producer).json()["data"] == {
        "resolved": True
    }
    assert api.post("/internal/v1/inbox/notifications/resolve", json=body, headers=producer).json()["data"] == {
        "resolved": False
    }
    unknown = {**body, "tail": "never-seen"}
    response = api.post("/internal/v1/inbox/notifications/resolve", json=unknown, headers=producer)
    assert response.status_code == 404 and response.json()["code"] == "NOT_FOUND"
    assert count(api) == 0 and items(api)[0]["is_read"] is True


@pytest.fixture
def rival(service_keys: Any) -> dict[str, str]:
    """Another team's service in the same tenant, with the same inbox capability as `producer`."""
    key, _ = service_keys.create_key("rival", ["/internal/v1/inbox"])
    return {"Authorization": f"Bearer {key}"}


def test_another_service_cannot_resolve_a_producers_notification_and_is_told_what_an_unknown_one_gets(
    api: TestClient, producer: dict[str, str], rival: dict[str, str]
) -> None:
    notify(api, producer, kind="APPROVAL_PENDING", tail="req-7")
    body = {"app_code": "lalu", "user_id": USER, "kind": "APPROVAL_PENDING", "session_id": "s1", "tail": "req-7"}
    foreign = api.post("/internal/v1/inbox/notifications/resolve", json=body, headers=rival)
    unknown = api.post("/internal/v1/inbox/notifications/resolve", json={**body, "tail": "none"}, headers=rival)
    assert foreign.status_code == unknown.status_code == 404
    assert {k: v for k, v in foreign.json().items() if k != "request_id"} == {
        k: v for k, v in unknown.json().items() if k != "request_id"
    }
    assert count(api) == 1 and items(api)[0]["is_read"] is False
    assert api.post("/internal/v1/inbox/notifications/resolve", json=body, headers=producer).json()["data"] == {
        "resolved": True
    }
    assert count(api) == 0


def test_a_rival_writing_first_does_not_take_a_producers_dedup_key(
    api: TestClient, producer: dict[str, str], rival: dict[str, str]
) -> None:
    planted = notify(api, rival, kind="APPROVAL_PENDING", tail="req-7", title="Approve at https://evil.example")
    genuine = notify(api, producer, kind="APPROVAL_PENDING", tail="req-7", title="Approve the deploy")
    assert planted["created"] is True and genuine["created"] is True
    assert genuine["notification_id"] != planted["notification_id"]
    again = notify(api, producer, kind="APPROVAL_PENDING", tail="req-7", title="changed")
    assert again == {"notification_id": genuine["notification_id"], "created": False, "skipped": None}
    titles = {item["notification_id"]: item["title"] for item in items(api)}
    assert titles[genuine["notification_id"]] == "Approve the deploy"


def test_distinct_sessions_and_tails_of_one_producer_never_share_a_key(
    api: TestClient, producer: dict[str, str]
) -> None:
    first = notify(api, producer, session_id="run:42", tail="step")
    second = notify(api, producer, session_id="run", tail="42:step")
    assert first["created"] is True and second["created"] is True
    assert first["notification_id"] != second["notification_id"] and count(api) == 2


def test_dedup_keys_of_distinct_tuples_are_distinct() -> None:
    tuples = [
        ("engine", "1", "QUESTION_PENDING", "run:42", "step"),
        ("engine", "1", "QUESTION_PENDING", "run", "42:step"),
        ("engine", "1", "QUESTION_PENDING", "run%3A42", "step"),
        ("engine:1", "", "QUESTION_PENDING", "run", "step"),
        ("rival", "1", "QUESTION_PENDING", "run:42", "step"),
    ]
    keys = {dedup_key(*parts) for parts in tuples}  # type: ignore[arg-type]
    assert len(keys) == len(tuples)


def _legacy_notification(aws: StackTemplate, tail: str) -> str:
    """A notification as an earlier Herald stored it: its dedup key without a producer, and no producer on it."""
    table = aws.physical_name("InboxTable")
    now_ms = int(time.time() * 1000)
    notification_id = f"ntf_{now_ms:013d}aabbccdd"
    pk, sk = f"U#lalu#{USER}", f"N#{notification_id}"
    client = boto3.client("dynamodb")
    client.put_item(
        TableName=table,
        Item={
            "pk": {"S": pk}, "sk": {"S": sk}, "unread_pk": {"S": pk}, "unread_sk": {"S": sk},
            "app_code": {"S": "lalu"}, "user_id": {"S": USER}, "notification_id": {"S": notification_id},
            "kind": {"S": "APPROVAL_PENDING"}, "title": {"S": "old"}, "session_id": {"S": "s1"},
            "dedup_key": {"S": f"{USER}:APPROVAL_PENDING:s1:{tail}"}, "is_read": {"BOOL": False},
            "created_at_ms": {"N": str(now_ms)}, "expires_at": {"N": str(now_ms // 1000 + 86400)},
        },
    )  # fmt: skip
    client.put_item(
        TableName=table,
        Item={
            "pk": {"S": f"D#lalu#{USER}:APPROVAL_PENDING:s1:{tail}"}, "sk": {"S": "D"},
            "notification_pk": {"S": pk}, "notification_sk": {"S": sk}, "notification_id": {"S": notification_id},
            "expires_at": {"N": str(now_ms // 1000 + 86400)},
        },
    )  # fmt: skip
    client.update_item(
        TableName=table,
        Key={"pk": {"S": pk}, "sk": {"S": "COUNTER"}},
        UpdateExpression="ADD unread :one, version :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
    )
    return notification_id


def test_notifications_stored_before_producers_were_recorded_still_dedup_and_resolve(
    api: TestClient, aws: StackTemplate, producer: dict[str, str]
) -> None:
    legacy = _legacy_notification(aws, "req-old")
    assert notify(api, producer, kind="APPROVAL_PENDING", tail="req-old") == {
        "notification_id": legacy,
        "created": False,
        "skipped": None,
    }
    body = {"app_code": "lalu", "user_id": USER, "kind": "APPROVAL_PENDING", "session_id": "s1", "tail": "req-old"}
    assert api.post("/internal/v1/inbox/notifications/resolve", json=body, headers=producer).json()["data"] == {
        "resolved": True
    }
    assert count(api) == 0 and [item["notification_id"] for item in items(api)] == [legacy]


def test_the_writer_and_resolve_share_one_dedup_key(
    api: TestClient, producer: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import herald.inbox.service as service_module

    built: list[str] = []

    def spy(*parts: Any) -> str:
        built.append(dedup_key(*parts))
        return built[-1]

    monkeypatch.setattr(service_module, "dedup_key", spy)
    notify(api, producer, kind="QUESTION_PENDING", session_id="s9", tail="q:9")
    body = {"user_id": USER, "kind": "QUESTION_PENDING", "session_id": "s9", "tail": "q:9"}
    assert api.post("/internal/v1/inbox/notifications/resolve", json=body, headers=producer).json()["data"]["resolved"]
    assert built == ["by:engine:10002:QUESTION_PENDING:s9:q%3A9"] * 2
    stored = boto3.client("dynamodb").get_item(
        TableName=current().settings.inbox_table,
        Key={"pk": {"S": "D#lalu#by:engine:10002:QUESTION_PENDING:s9:q%3A9"}, "sk": {"S": "D"}},
    )
    assert "Item" in stored


def test_other_users_and_tenants_cannot_read_mark_or_delete(api: TestClient, producer: dict[str, str]) -> None:
    notification_id = notify(api, producer)["notification_id"]
    for headers in (_user(OTHER), _user(USER, "other")):
        assert api.post(f"/api/v1/inbox/notifications/{notification_id}/read", headers=headers).status_code == 404
        assert api.delete(f"/api/v1/inbox/notifications/{notification_id}", headers=headers).status_code == 404
        assert api.get("/api/v1/inbox/notifications", headers=headers).json()["data"]["items"] == []
    assert count(api) == 1
    assert api.post("/api/v1/inbox/notifications/ntf_bad/read", headers=_user()).status_code == 400
    assert api.post("/internal/v1/inbox/notifications", json={}, headers=_user()).status_code == 401


def test_delete_of_an_unread_item_lowers_the_count_once(api: TestClient, producer: dict[str, str]) -> None:
    first = notify(api, producer, tail="a")["notification_id"]
    notify(api, producer, tail="b")
    assert api.delete(f"/api/v1/inbox/notifications/{first}", headers=_user()).json()["data"] == {"unread_count": 1}
    assert api.delete(f"/api/v1/inbox/notifications/{first}", headers=_user()).status_code == 404
    assert count(api) == 1 and len(items(api)) == 1


def test_mark_all_read_racing_fifty_inserts_leaves_the_true_count(
    api: TestClient, producer: dict[str, str], aws: StackTemplate
) -> None:
    for i in range(30):
        notify(api, producer, tail=f"before-{i}", payload={"batch": "before"})
    service = inbox()

    failures: list[BaseException] = []

    def insert(i: int) -> None:
        try:
            notify(api, producer, tail=f"during-{i}", payload={"batch": "during"})
        except BaseException as exc:  # surfaced below: a thread's assertion would vanish
            failures.append(exc)

    threads = [threading.Thread(target=insert, args=(i,)) for i in range(50)]
    for thread in threads:
        thread.start()
    read_all = api.post("/api/v1/inbox/notifications/read-all", headers=_user())
    assert read_all.status_code == 200, read_all.text
    for thread in threads:
        thread.join()
    assert failures == []
    everything = []
    token = ""
    while True:
        page = api.get(
            "/api/v1/inbox/notifications", params={"page_size": 100, "page_token": token}, headers=_user()
        ).json()["data"]
        everything.extend(page["items"])
        token = page["next_page_token"]
        if not token:
            break
    truly_unread = sum(1 for i in everything if not i["is_read"])
    assert len(everything) == 80
    assert count(api) == truly_unread == service.unread_count("lalu", USER)
    assert all(i["is_read"] for i in everything if i["payload"]["batch"] == "before")  # existed when it began


def test_pages_are_newest_first_without_duplicates_or_gaps_while_items_arrive(
    api: TestClient, producer: dict[str, str]
) -> None:
    for i in range(7):
        notify(api, producer, tail=f"old-{i}")
    seen: list[str] = []
    token = ""
    for round_ in range(10):
        page = api.get(
            "/api/v1/inbox/notifications", params={"page_size": 2, "page_token": token}, headers=_user()
        ).json()["data"]
        seen.extend(i["notification_id"] for i in page["items"])
        notify(api, producer, tail=f"new-{round_}")  # arrives while paging: newer than every cursor
        token = page["next_page_token"]
        if not token:
            break
    assert len(seen) == len(set(seen)) == 7
    assert seen == sorted(seen, reverse=True)
    other = api.get("/api/v1/inbox/notifications", params={"page_token": token or "e30"}, headers=_user(OTHER))
    assert other.status_code == 400  # another user's token, or one naming no user


def test_unread_only_lists_only_unread(api: TestClient, producer: dict[str, str]) -> None:
    first = notify(api, producer, tail="x")["notification_id"]
    notify(api, producer, tail="y")
    api.post(f"/api/v1/inbox/notifications/{first}/read", headers=_user())
    unread = items(api, unread_only="true")
    assert [i["is_read"] for i in unread] == [False] and len(items(api)) == 2


def test_producer_key_writes_only_into_its_own_tenants(api: TestClient, service_keys: Any) -> None:
    """Regression: an inbox producer key wrote into any app_code."""
    key, _ = service_keys.create_key("acme-engine", ["/internal/v1/inbox"], app_codes=["acme"])
    headers = {"Authorization": f"Bearer {key}"}
    body = {"user_id": USER, "kind": "QUESTION_PENDING", "session_id": "s1", "tail": "r1", "title": "t"}
    refused = api.post("/internal/v1/inbox/notifications", json={**body, "app_code": "lalu"}, headers=headers)
    assert refused.status_code == 403 and refused.json()["data"]["reason"] == "tenant_not_allowed"
    assert count(api) == 0
    assert api.post("/internal/v1/inbox/notifications", json=body, headers=headers).status_code == 200
    assert (
        count(api) == 0
        and int(api.get("/api/v1/inbox/unread-count", headers=_user(USER, "acme")).json()["data"]["unread_count"]) == 1
    )


@pytest.mark.parametrize(
    "cursor",
    [
        {"user": f"lalu#{USER}", "unread": 0, "pk": 5, "sk": "N#x"},  # a key of the wrong type
        {"user": f"lalu#{USER}", "unread": 0, "nope": "x"},  # a key the table does not have
        {"user": f"lalu#{USER}", "unread": 1, "pk": f"U#lalu#{USER}", "sk": "N#x"},  # the index's keys missing
    ],
    ids=["wrong-type", "unknown-key", "missing-index-keys"],
)
def test_a_tampered_page_token_in_the_callers_own_scope_is_400_not_500(
    api: TestClient, producer: dict[str, str], cursor: dict[str, object]
) -> None:
    notify(api, producer, tail="one")
    unread_only = "true" if cursor["unread"] else "false"
    response = api.get(
        "/api/v1/inbox/notifications",
        params={"page_token": encode_token(cursor), "unread_only": unread_only},
        headers=_user(),
    )
    assert response.status_code == 400, response.text
    assert "page_token" in response.json()["message"]
