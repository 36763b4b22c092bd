"""The provider fakes enforce the limits a benchmark gives them as the providers do: a call over a limit is
refused with the provider's own rate-limit answer and not done, so a bench's zero refusals mean something."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from herald.confirms.models import CustomMessage
from herald.providers.tencent_im import TencentImClient, TencentImError
from herald_dev.fakes.feishu import FakeFeishu
from herald_dev.fakes.limits import EnforcedLimits
from herald_dev.fakes.tencent_im import FakeTencentIm


def test_a_call_over_a_scopes_limit_in_a_sliding_second_is_refused_and_not_counted() -> None:
    now = [100.0]
    limits = EnforcedLimits(clock=lambda: now[0])
    limits.configure({"app": 3, "chat": 2}, latency_ms=0)
    assert [limits.admit({"app": "a", "chat": "c1"}) for _ in range(3)] == [None, None, "chat"]
    assert limits.admit({"app": "a", "chat": "c2"}) is None  # another chat: its own window; the app's 3rd
    assert limits.admit({"app": "a", "chat": "c3"}) == "app"
    now[0] += 0.999
    assert limits.admit({"app": "a", "chat": "c3"}) == "app"  # the first calls are still inside the second
    now[0] += 0.002
    assert limits.admit({"app": "a", "chat": "c1"}) is None  # they left it
    assert limits.refused == {"chat": 1, "app": 2}


def test_no_limit_configured_refuses_nothing() -> None:
    limits = EnforcedLimits()
    assert all(limits.admit({"app": "a"}) is None for _ in range(1000))


@pytest.fixture
def feishu() -> Iterator[FakeFeishu]:
    fake = FakeFeishu().start()
    yield fake
    fake.stop()


def send(fake: FakeFeishu, token: str, chat: str) -> httpx.Response:
    card = json.dumps({"config": {"update_multi": True}, "elements": []})
    return httpx.post(
        f"{fake.url}/open-apis/im/v1/messages?receive_id_type=chat_id",
        json={"receive_id": chat, "msg_type": "interactive", "content": card},
        headers={"Authorization": f"Bearer {token}"},
    )


def test_feishu_refuses_over_a_chats_limit_with_230020_and_over_the_apps_with_99991400_and_http_429(
    feishu: FakeFeishu,
) -> None:
    httpx.post(f"{feishu.url}/__fake/limits", json={"app_per_second": 3, "chat_per_second": 2})
    feishu.limits.clock = lambda: 1_000.0  # every call within one second, however slow this machine answers
    token = httpx.post(
        f"{feishu.url}/open-apis/auth/v3/tenant_access_token/internal",
        json={"app_id": feishu.app_id, "app_secret": feishu.app_secret},
    ).json()["tenant_access_token"]
    answers = [send(feishu, token, chat) for chat in ("oc_a", "oc_a", "oc_a", "oc_b", "oc_c")]
    assert [(a.status_code, a.json()["code"]) for a in answers] == [
        (200, 0),
        (200, 0),
        (400, 230020),
        (200, 0),
        (429, 99991400),
    ]
    stats = httpx.get(f"{feishu.url}/__fake/stats").json()
    assert stats["sends"] == 3 and stats["rate_limited"] == {"chat": 1, "app": 1} and len(feishu.log) == 3


def test_tencent_im_refuses_sendmsg_over_the_apps_limit_with_60011_and_sends_nothing() -> None:
    fake = FakeTencentIm().start()
    try:
        httpx.post(f"{fake.url}/__fake/limits", json={"sendmsg_per_second": 2})
        fake.limits.clock = lambda: 1_000.0  # every call within one second, however slow this machine answers
        client = TencentImClient(fake.url, fake.sdk_app_id, fake.admin, lambda: fake.secret_key)
        outcomes: list[object] = []
        for n in range(3):
            try:
                client.send(
                    CustomMessage("10001", f"2000{n}", n + 1, {"type": "im_confirm"}, "im_confirm", "im_confirm")
                )
                outcomes.append("sent")
            except TencentImError as refused:
                outcomes.append((refused.error_code, refused.throttled))
        assert outcomes == ["sent", "sent", (60011, "app")]
        assert len(fake.messages) == 2 and httpx.get(f"{fake.url}/__fake/stats").json()["rate_limited"] == {
            "sendmsg": 1
        }
    finally:
        fake.stop()
