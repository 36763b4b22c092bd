"""The Feishu client's tenant access token: cached, and asked again when the app secret it was issued for changed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from herald.events.models import Card
from herald.providers.feishu import FeishuClient, FeishuError
from herald.providers.http import HttpResponse
from herald_dev.fakes.feishu import FakeFeishu


@pytest.fixture
def fake() -> Iterator[FakeFeishu]:
    feishu = FakeFeishu().start()
    yield feishu
    feishu.stop()


def test_the_token_is_reused_and_asked_again_once_the_secret_is_rotated(fake: FakeFeishu) -> None:
    secrets = [fake.app_secret]
    client = FeishuClient(fake.url, fake.app_id, lambda: secrets[-1])
    first = client.tenant_access_token()
    assert client.tenant_access_token() == first and fake.stats["token_requests"] == 1
    fake.add_app(fake.app_id, "rotated-secret")  # the app's secret rotated, and so did the parameter's value
    secrets.append("rotated-secret")
    assert client.tenant_access_token() != first
    assert fake.stats["token_requests"] == 2


def test_a_held_chat_is_a_throttled_refusal_carrying_feishus_reset(fake: FakeFeishu) -> None:
    """Feishu's frequency control answers 429, 99991400 and `x-ogw-ratelimit-reset` (seconds until it accepts)."""
    client = FeishuClient(fake.url, fake.app_id, lambda: fake.app_secret)
    fake.hold("oc_held", 35)
    with pytest.raises(FeishuError) as refused:
        client.send_card("chat_id", "oc_held", Card("t", "s", "", "e"), "u-1")
    assert (refused.value.throttled, refused.value.code, refused.value.maybe_delivered) == ("app", 99991400, False)
    assert refused.value.retry_after_ms == 35_000 and fake.held_refusals == {"oc_held": 1}
    assert client.send_card("chat_id", "oc_free", Card("t", "s", "", "e"), "u-2").startswith("om_")


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"x-ogw-ratelimit-reset": "52"}, 52.0),
        ({"retry-after": "3"}, 3.0),
        ({"x-ogw-ratelimit-reset": "soon", "retry-after": "2"}, 2.0),
        ({"x-ogw-ratelimit-reset": "-1"}, None),
        ({"x-ogw-ratelimit-reset": "nan"}, None),
        ({"x-ogw-ratelimit-reset": "inf"}, None),
        ({}, None),
    ],
)
def test_a_wait_is_read_only_from_a_finite_number_of_seconds(headers: dict[str, str], seconds: float | None) -> None:
    response = HttpResponse(429, b"{}", headers)
    assert response.seconds("x-ogw-ratelimit-reset", "retry-after") == seconds
