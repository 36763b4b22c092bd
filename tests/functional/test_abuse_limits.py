"""Abuse limits (contract §0): 429 with Retry-After per app user, per service key and per target, kept in
DynamoDB; caps on pending invitations; an agency name and a partner's card text shown as plain text."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from fastapi.testclient import TestClient

from herald.api.app import create_app
from herald.auth.service_keys import ServiceKeys
from herald_dev.fakes.feishu import FakeFeishu
from herald_dev.fakes.tencent_im import FakeTencentIm
from tests.support.clock import FakeClock, controlled_clock
from tests.support.container import reconfigure, shipped
from tests.support.events import EventsPipeline
from tests.support.local_cloud import RATE_LIMITS_OFF
from tests.support.pipeline import ConfirmPipeline
from tests.support.tokens import make_token

INVITER = "10001"


def _user(user: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {make_token(user)}"}


@pytest.fixture
def shipped_limits() -> Iterator[None]:
    """The limits as shipped (the other functional tests run with them off)."""
    reconfigure(**shipped(*RATE_LIMITS_OFF))
    yield


def start_of_a_window() -> FakeClock:
    """Herald's clock, held at the top of the next minute: a burst falls in one window with none before it,
    whatever the wall clock says (no waiting for a minute to turn). Call it after the settings are final."""
    clock = controlled_clock()
    clock.now += 60_000 - clock.now % 60_000
    return clock


def test_a_user_over_the_shipped_limit_gets_429_with_retry_after_and_others_do_not(
    api: TestClient, shipped_limits: None
) -> None:
    """Regression: 100 requests in a row were all 200."""
    start_of_a_window()
    statuses = [api.get("/api/v1/inbox/unread-count", headers=_user("10002")).status_code for _ in range(125)]
    assert statuses[:120] == [200] * 120 and statuses[120:] == [429] * 5
    refused = api.get("/api/v1/inbox/unread-count", headers=_user("10002"))
    assert refused.json()["code"] == "RATE_LIMITED" and refused.json()["data"]["reason"] == "user_rate_limited"
    assert int(refused.headers["Retry-After"]) == 61  # the window slides: until 1/120 of the next minute passed
    assert api.get("/api/v1/inbox/unread-count", headers=_user("10003")).status_code == 200


def test_a_service_key_over_its_limit_gets_429_and_another_key_does_not(
    api: TestClient, service_keys: ServiceKeys, monkeypatch: pytest.MonkeyPatch
) -> None:
    reconfigure(rate_limit_key_per_minute=5)
    first, _ = service_keys.create_key("engine", ["/internal/v1"])
    second, _ = service_keys.create_key("engine", ["/internal/v1"])
    start_of_a_window()
    statuses = [
        api.get("/internal/v1/whoami", headers={"Authorization": f"Bearer {first}"}).status_code for _ in range(7)
    ]
    assert statuses == [200] * 5 + [429] * 2
    assert api.get("/internal/v1/whoami", headers={"Authorization": f"Bearer {second}"}).status_code == 200


def test_events_to_one_target_over_its_limit_get_429_and_store_nothing(
    api: TestClient,
    events: EventsPipeline,
    feishu: FakeFeishu,
    service_keys: ServiceKeys,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reconfigure(rate_limit_target_per_minute=3)
    key, _ = service_keys.create_key("scheduler", ["/events/external"], targets=["chat_id:oc_a", "chat_id:oc_b"])
    headers = {"Authorization": f"Bearer {key}"}

    def post(event_id: str, chat: str) -> int:
        data = {"title": event_id, "status": "done", "target": {"receive_id": chat, "receive_id_type": "chat_id"}}
        body = {"event_id": event_id, "event_type": "job.done", "data": data}
        return int(api.post("/events/external", json=body, headers=headers).status_code)

    start_of_a_window()
    assert [post(f"a{n}", "oc_a") for n in range(4)] == [202, 202, 202, 429]
    assert post("b0", "oc_b") == 202
    events.drain()
    assert [entry["title"] for entry in feishu.log] == ["a0", "a1", "a2", "b0"]


def test_a_key_with_its_own_target_rate_is_held_to_it_and_other_keys_to_the_stacks(
    api: TestClient, service_keys: ServiceKeys
) -> None:
    reconfigure(rate_limit_target_per_minute=3)
    targets = ["chat_id:oc_a"]
    own, _ = service_keys.create_key("progress", ["/events/external"], targets=targets, target_rate=5)
    plain, _ = service_keys.create_key("nightly", ["/events/external"], targets=targets)

    def post(key: str, event_id: str) -> int:
        data = {"title": event_id, "status": "done", "target": {"receive_id": "oc_a", "receive_id_type": "chat_id"}}
        body = {"event_id": event_id, "event_type": "job.done", "data": data}
        return int(api.post("/events/external", json=body, headers={"Authorization": f"Bearer {key}"}).status_code)

    start_of_a_window()
    assert [post(own, f"p{n}") for n in range(6)] == [202] * 5 + [429]
    assert [post(plain, f"n{n}") for n in range(4)] == [202] * 3 + [429]


def test_the_shipped_target_limit_admits_what_feishu_delivers_to_one_chat() -> None:
    defaults = shipped("HERALD_RATE_LIMIT_TARGET_PER_MINUTE", "HERALD_FEISHU_CHAT_CALLS_PER_SECOND")
    assert defaults["rate_limit_target_per_minute"] == 60 * defaults["feishu_chat_calls_per_second"]


@pytest.fixture
def invitations(pipeline: ConfirmPipeline) -> TestClient:
    return TestClient(create_app())


def invite(api: TestClient, target: str, inviter: str = INVITER, **extra: str) -> Any:
    body = {"invitation_type": "host", "target_user_id": target, **extra}
    return api.post("/api/v1/role-invitations", json=body, headers=_user(inviter))


def test_one_inviter_has_at_most_ten_invitations_waiting_and_only_those_are_pushed(
    invitations: TestClient, pipeline: ConfirmPipeline, fake_im: FakeTencentIm
) -> None:
    """Regression: one user invited 30 strangers and 30 IM pushes went out."""
    statuses = [invite(invitations, str(20000 + n)).status_code for n in range(30)]
    assert statuses == [200] * 10 + [409] * 20
    refused = invite(invitations, "29999")
    assert refused.json()["data"]["reason"] == "too_many_pending_invitations"
    pipeline.drain(backoff_elapses=True)  # ten at once: those past the app's slots in flight come back
    assert len(fake_im.messages) == 10


def test_an_answered_invitation_frees_its_inviters_slot(invitations: TestClient) -> None:
    created = [invite(invitations, str(20000 + n)).json()["data"] for n in range(10)]
    assert invite(invitations, "29999").status_code == 409
    cancelled = invitations.post(
        f"/api/v1/role-invitations/{created[0]['invitation_id']}/cancel", headers=_user(INVITER)
    )
    assert cancelled.status_code == 200
    assert invite(invitations, "29999").status_code == 200


def test_one_target_has_at_most_five_invitations_waiting(invitations: TestClient) -> None:
    statuses = [invite(invitations, "20000", inviter=str(10100 + n)).status_code for n in range(6)]
    assert statuses == [200] * 5 + [409]
    refused = invite(invitations, "20000", inviter="10199")
    assert refused.json()["data"]["reason"] == "target_has_too_many_invitations"


def test_concurrent_invitations_never_exceed_the_inviters_cap(invitations: TestClient) -> None:
    go = threading.Barrier(16)

    def create(n: int) -> int:
        go.wait()
        return int(invite(invitations, str(30000 + n)).status_code)

    with ThreadPoolExecutor(max_workers=16) as pool:
        statuses = list(pool.map(create, range(16)))
    assert statuses.count(200) == 10 and statuses.count(409) == 6


@pytest.mark.parametrize(
    "agency_name",
    [
        "Herald Support - verify at https://evil.example",
        "Acme <b>Talent</b>",
        "Acme\nCall +1 555",
        "[click](https://evil.example)",
        "support@evil.example",
    ],
)
def test_agency_name_that_is_not_a_plain_name_is_400_and_invites_nobody(
    invitations: TestClient, pipeline: ConfirmPipeline, fake_im: FakeTencentIm, agency_name: str
) -> None:
    response = invite(invitations, "20001", invitation_type="agency", agency_name=agency_name)
    assert response.status_code == 400, response.text
    pipeline.drain()
    assert fake_im.messages == []


def test_a_plain_agency_name_reaches_the_target_as_text(
    invitations: TestClient, pipeline: ConfirmPipeline, fake_im: FakeTencentIm
) -> None:
    assert invite(invitations, "20001", invitation_type="agency", agency_name="星光 Talent & Co.").status_code == 200
    pipeline.drain()
    (message,) = fake_im.messages
    assert "星光 Talent & Co." in message["data"]["msg"]


@pytest.fixture
def partner(events: EventsPipeline, service_keys: ServiceKeys) -> Any:
    def key(allow_markdown: bool) -> dict[str, str]:
        created, _ = service_keys.create_key(
            "ci", ["/events/external"], targets=["chat_id:oc_ops"], allow_markdown=allow_markdown
        )
        return {"Authorization": f"Bearer {created}"}

    return key


def _card_event(event_id: str, summary: str, **data: Any) -> dict[str, Any]:
    target = {"receive_id": "oc_ops", "receive_id_type": "chat_id"}
    return {
        "event_id": event_id,
        "event_type": "job.done",
        "data": {"title": "t", "status": "done", "summary": summary, "target": target, **data},
    }


def test_partner_card_text_is_plain_text_unless_an_allowed_key_opts_into_markdown(
    api: TestClient, events: EventsPipeline, feishu: FakeFeishu, partner: Any
) -> None:
    """Regression: a partner's card text was rendered as Feishu markdown (links, @all)."""
    plain = partner(False)
    assert api.post("/events/external", json=_card_event("e1", "[x](https://evil.example)"), headers=plain).is_success
    refused = api.post("/events/external", json=_card_event("e2", "**x**", format="markdown"), headers=plain)
    assert refused.status_code == 403 and refused.json()["data"]["reason"] == "markdown_not_allowed"
    allowed = partner(True)
    assert api.post("/events/external", json=_card_event("e3", "**x**", format="markdown"), headers=allowed).is_success
    mention = api.post(
        "/events/external", json=_card_event("e4", '<at id="all"></at>', format="markdown"), headers=allowed
    )
    assert mention.status_code == 400
    events.drain()
    shown = [message["cards"][-1]["elements"][0]["text"] for message in feishu.messages.values()]
    assert sorted(json.dumps(text, sort_keys=True) for text in shown) == sorted(
        [
            json.dumps({"tag": "plain_text", "content": "[x](https://evil.example)"}, sort_keys=True),
            json.dumps({"tag": "lark_md", "content": "**x**"}, sort_keys=True),
        ]
    )


def test_the_python_sdk_honours_retry_after_and_its_retry_gets_through(
    service_keys: ServiceKeys, monkeypatch: pytest.MonkeyPatch, aws: object
) -> None:
    """The SDK against the real app and limiter: over the key's limit it sleeps what Retry-After says (here the
    test's clock moves instead of the test waiting), then the same request succeeds."""
    from herald_client import ServiceClient
    from tests.support.clock import controlled_clock

    reconfigure(rate_limit_key_per_minute=2)
    api = TestClient(create_app())
    clock = controlled_clock()
    key, _ = service_keys.create_key("sdk-limited", ["/internal/v1/inbox"])
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock.advance(int(seconds * 1000))

    client = ServiceClient("http://testserver", key, http=api, sleep=sleep)
    for n in range(3):
        assert client.notify("10002", "QUESTION_PENDING", "s", f"t{n}", f"Q{n}")["created"] is True
    # the third call met the limit once, slept, got through; the window slides, so the wait may reach into the
    # next minute (2 a minute: half of it, until the two carried hits weigh one) - tests/unit/test_rate_limits.py
    assert len(slept) == 1 and 1 <= slept[0] <= 90
