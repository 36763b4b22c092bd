"""The Feishu client's tenant access token: cached, and asked again when the app secret it was issued for changed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from herald.providers.feishu import FeishuClient
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
