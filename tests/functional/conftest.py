from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from herald_ops.template import StackTemplate
from moto import mock_aws

from herald.api.app import create_app
from herald.auth.dynamo import DynamoServiceKeyStore
from herald.auth.service_keys import ServiceKeys
from herald.container import current
from herald_dev import moto_patches
from herald_dev.fakes.feishu import FakeFeishu
from herald_dev.fakes.tencent_im import FakeTencentIm
from tests.conftest import clear_herald_caches
from tests.support.aws import create_stack
from tests.support.events import EventsPipeline
from tests.support.pipeline import ConfirmPipeline
from tests.support.turns import TurnsHarness


@pytest.fixture
def aws() -> Iterator[StackTemplate]:
    moto_patches.install()
    with mock_aws():
        yield create_stack()


@pytest.fixture
def fake_im(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeTencentIm]:
    fake = FakeTencentIm().start()
    monkeypatch.setenv("HERALD_TENCENT_IM_BASE_URL", fake.url)
    monkeypatch.setenv("HERALD_TENCENT_IM_SDK_APP_ID", str(fake.sdk_app_id))
    monkeypatch.setenv("HERALD_TENCENT_IM_ADMIN_IDENTIFIER", fake.admin)
    monkeypatch.setenv("HERALD_TENCENT_IM_SECRET_KEY", fake.secret_key)
    yield fake
    fake.stop()


@pytest.fixture
def confirm_stack(aws: StackTemplate, fake_im: FakeTencentIm, monkeypatch: pytest.MonkeyPatch) -> StackTemplate:
    """The test env names queue URLs of real AWS; point them at the queues mock_aws created."""
    monkeypatch.setenv("HERALD_IM_PUSH_QUEUE_URL", aws.resolve({"Ref": "ImPushQueue"}))
    monkeypatch.setenv("HERALD_IM_PUSH_DLQ_URL", aws.resolve({"Ref": "ImPushDeadLetters"}))
    clear_herald_caches()
    return aws


@pytest.fixture
def pipeline(confirm_stack: StackTemplate) -> ConfirmPipeline:
    return ConfirmPipeline(confirm_stack)


@pytest.fixture
def client(aws: StackTemplate) -> TestClient:
    return TestClient(create_app())


@pytest.fixture
def api(aws: StackTemplate) -> TestClient:
    return TestClient(create_app())


@pytest.fixture
def producer(service_keys: ServiceKeys) -> dict[str, str]:
    """A producer service's credentials (capability /internal/v1/inbox)."""
    key, _ = service_keys.create_key("engine", ["/internal/v1/inbox"])
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def service_keys(aws: StackTemplate) -> ServiceKeys:
    return ServiceKeys(DynamoServiceKeyStore(current().settings.service_keys_table))


@pytest.fixture
def feishu(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeFeishu]:
    fake = FakeFeishu().start()
    monkeypatch.setenv("HERALD_FEISHU_BASE_URL", fake.url)
    monkeypatch.setenv("HERALD_FEISHU_APP_ID", fake.app_id)
    monkeypatch.setenv("HERALD_FEISHU_APP_SECRET", fake.app_secret)
    monkeypatch.setenv("HERALD_EVENTS_RETRY_BASE_MS", "1")
    yield fake
    fake.stop()


@pytest.fixture
def events(aws: StackTemplate, feishu: FakeFeishu, monkeypatch: pytest.MonkeyPatch) -> EventsPipeline:
    monkeypatch.setenv("HERALD_EVENTS_QUEUE_URL", aws.resolve({"Ref": "EventsQueue"}))
    monkeypatch.setenv("HERALD_EVENTS_DLQ_URL", aws.resolve({"Ref": "EventsDeadLetters"}))
    clear_herald_caches()
    return EventsPipeline(aws)


@pytest.fixture
def turns(
    api: TestClient, aws: StackTemplate, service_keys: ServiceKeys, monkeypatch: pytest.MonkeyPatch
) -> TurnsHarness:
    """The agent engine's key (capability /internal/v1/sessions) and the turn queue of mock_aws."""
    monkeypatch.setenv("HERALD_TURNS_QUEUE_URL", aws.resolve({"Ref": "TurnsQueue"}))
    clear_herald_caches()
    key, _ = service_keys.create_key("agent-engine", ["/internal/v1/sessions"])
    return TurnsHarness(api, aws, key)
