from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from herald_ops.template import StackTemplate
from moto import mock_aws

from herald.api.app import create_app
from herald.auth.dynamo import DynamoServiceKeyStore
from herald.auth.models import Principal
from herald.auth.service_keys import ServiceKeys
from herald.container import current
from herald.realtime.service import Realtime
from herald.realtime.wiring import realtime as realtime_part
from herald.settings import Secret
from herald_dev import moto_patches
from herald_dev.fakes.feishu import FakeFeishu
from herald_dev.fakes.tencent_im import FakeTencentIm
from tests.support.aws import create_stack, load_function
from tests.support.container import reconfigure
from tests.support.events import EventsPipeline
from tests.support.fakes import InMemoryConnectionRegistry, InMemoryPusher, InMemoryUserAdmission
from tests.support.lambda_context import FakeLambdaContext
from tests.support.pipeline import ConfirmPipeline, StreamTap
from tests.support.turns import TurnsHarness


@pytest.fixture
def aws() -> Iterator[StackTemplate]:
    moto_patches.install()
    with mock_aws():
        yield create_stack()


@pytest.fixture
def fake_im() -> Iterator[FakeTencentIm]:
    fake = FakeTencentIm().start()
    reconfigure(
        tencent_im_base_url=fake.url,
        tencent_im_sdk_app_id=fake.sdk_app_id,
        tencent_im_admin_identifier=fake.admin,
        tencent_im_secret_key=Secret(fake.secret_key),
    )
    yield fake
    fake.stop()


@pytest.fixture
def confirm_stack(aws: StackTemplate, fake_im: FakeTencentIm) -> StackTemplate:
    """The test env names queue URLs of real AWS; point them at the queues mock_aws created."""
    reconfigure(
        im_push_queue_url=aws.resolve({"Ref": "ImPushQueue"}), im_push_dlq_url=aws.resolve({"Ref": "ImPushDeadLetters"})
    )
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
def feishu() -> Iterator[FakeFeishu]:
    fake = FakeFeishu().start()
    reconfigure(
        feishu_base_url=fake.url,
        feishu_app_id=fake.app_id,
        feishu_app_secret=Secret(fake.app_secret),
        events_retry_base_ms=1,
    )
    yield fake
    fake.stop()


@pytest.fixture
def events(aws: StackTemplate, feishu: FakeFeishu) -> EventsPipeline:
    reconfigure(
        events_queue_url=aws.resolve({"Ref": "EventsQueue"}),
        events_dlq_url=aws.resolve({"Ref": "EventsDeadLetters"}),
        events_waiting_queue_url=aws.resolve({"Ref": "EventsWaitingQueue"}),
        events_waiting_dlq_url=aws.resolve({"Ref": "EventsWaitingDeadLetters"}),
        event_webhooks_queue_url=aws.resolve({"Ref": "EventWebhooksQueue"}),
        event_webhooks_dlq_url=aws.resolve({"Ref": "EventWebhooksDeadLetters"}),
    )
    return EventsPipeline(aws)


@pytest.fixture
def turns(api: TestClient, aws: StackTemplate, service_keys: ServiceKeys) -> TurnsHarness:
    """The agent engine's key (capability /internal/v1/sessions) and the turn queue of mock_aws."""
    reconfigure(turns_queue_url=aws.resolve({"Ref": "TurnsQueue"}))
    key, _ = service_keys.create_key("agent-engine", ["/internal/v1/sessions"])
    return TurnsHarness(api, aws, key)


@pytest.fixture
def pushes(aws: StackTemplate) -> InMemoryPusher:
    """WebSocket pushes, recorded: user 10002 is connected twice (`mine-1`, `mine-2`), 10003 once (`theirs`)."""
    registry, pusher = InMemoryConnectionRegistry(), InMemoryPusher()
    realtime = Realtime(registry, pusher, ttl_seconds=60, admission=InMemoryUserAdmission(), admit=lambda _: None)
    realtime.connect("mine-1", Principal("10002", "lalu"))
    realtime.connect("mine-2", Principal("10002", "lalu"))
    realtime.connect("theirs", Principal("10003", "lalu"))
    current().override(realtime_part, realtime)
    return pusher


@pytest.fixture
def inbox_outbox(aws: StackTemplate) -> Any:
    """The inbox table's stream to its outbox function, pumped by the test: the records it gave."""
    tap = StreamTap(aws.get_att("InboxTable", "StreamArn"))
    handler = load_function("inbox_outbox").handler

    def pump() -> list[dict[str, Any]]:
        records = tap.read()
        if records:
            handler({"Records": records}, FakeLambdaContext())
        return records

    return pump
