"""Every test starts from a clean process state: Herald's environment, no container (settings, parts) or clients."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from herald.observability import metrics
from herald_dev.local_identity import LOCAL_JWT_SECRET
from tests.support.botocore_data import share_one_loader, share_one_record_of_aliased_event_names
from tests.support.local_cloud import RATE_LIMITS_OFF
from tests.support.metrics import serialize

serialize(metrics)  # tests invoke handlers from several threads of one interpreter
share_one_loader()  # moto's fresh default session for each test reads botocore's models once a process, not each time
share_one_record_of_aliased_event_names()  # and each of its clients' emitters aliases event names afresh

TEST_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "HERALD_STAGE": "test",
    "HERALD_JWT_HS256_SECRET": LOCAL_JWT_SECRET,
    "HERALD_SERVICE_KEYS_TABLE": "test-ServiceKeysTable",
    "HERALD_CONNECTIONS_TABLE": "test-ConnectionsTable",
    "HERALD_WS_MANAGEMENT_ENDPOINT": "http://127.0.0.1:9/",
    "HERALD_INVITATIONS_TABLE": "test-InvitationsTable",
    "HERALD_CONFIRMS_TABLE": "test-ConfirmsTable",
    "HERALD_DELIVERIES_TABLE": "test-DeliveriesTable",
    "HERALD_INBOX_TABLE": "test-InboxTable",
    "HERALD_IM_PUSH_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/test-ImPushQueue.fifo",
    "HERALD_IM_PUSH_DLQ_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/test-ImPushDeadLetters.fifo",
    "HERALD_EVENTS_TABLE": "test-ExternalEventsTable",
    "HERALD_EVENTS_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/test-EventsQueue.fifo",
    "HERALD_EVENTS_DLQ_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/test-EventsDeadLetters.fifo",
    "HERALD_EVENTS_WAITING_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/test-EventsWaitingQueue.fifo",
    "HERALD_EVENTS_WAITING_DLQ_URL": (
        "https://sqs.us-east-1.amazonaws.com/123456789012/test-EventsWaitingDeadLetters.fifo"
    ),
    "HERALD_EVENT_WEBHOOKS_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/test-EventWebhooksQueue.fifo",
    "HERALD_EVENT_WEBHOOKS_DLQ_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/test-EventWebhooksDeadLetters.fifo",
    "HERALD_TURNS_TABLE": "test-TurnsTable",
    "HERALD_TURNS_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/test-TurnsQueue.fifo",
    "HERALD_RATE_LIMITS_TABLE": "test-RateLimitsTable",
    "HERALD_HOLDS_TABLE": "test-HoldsTable",
    "HERALD_AUDIT_TABLE": "test-AuditTable",
    "HERALD_OWNERS_TABLE": "test-OwnersTable",
    "HERALD_TENANTS_TABLE": "test-TenantsTable",
    # Tests' owner services listen on loopback over http; the SSRF tests put the deployed rules back.
    "HERALD_OWNER_CALLBACKS_HTTPS_ONLY": "false",
    "HERALD_OWNER_CALLBACKS_ALLOW_PRIVATE": "true",
    # A stalled or dripping test owner is given up on after this (5 s deployed): the same total deadline, sooner.
    "HERALD_OWNER_CALL_TOTAL_MS": "1000",
    # Functional tests drive one user or key far faster than a person would; the tests of the limits
    # themselves drop these and run with the shipped defaults.
    **RATE_LIMITS_OFF,
    "POWERTOOLS_TRACE_DISABLED": "true",
    "POWERTOOLS_METRICS_NAMESPACE": "HeraldTest",
}
_CLEARED_ENV = (
    "HERALD_JWT_ISSUER",
    "HERALD_JWT_AUDIENCE",
    "AWS_ENDPOINT_URL",
    "AWS_PROFILE",
)


# Where each run of `make test` looks for its tests: it collects only these folders (a collection of the whole
# tree costs seconds of CPU in each of its runs). A marked test elsewhere would be deselected from the in-process
# run and never collected by its own, so the in-process run, which collects everything, refuses it.
MARKER_HOMES = {
    "integration": ("integration",),
    "crash": ("integration",),
    "slow": ("functional", "integration"),
    "e2e": ("e2e",),
    "browser": ("browser",),
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    homeless = [
        f"{item.nodeid} is marked {marker} outside tests/{{{','.join(homes)}}}"
        for item in items
        for marker, homes in MARKER_HOMES.items()
        if item.get_closest_marker(marker) is not None and item.path.parent.name not in homes
    ]
    if homeless:
        raise pytest.UsageError("tests make test would never run:\n" + "\n".join(homeless))


def clear_herald_caches() -> None:
    """Forget the process's container (settings and every part built from them) and its AWS clients: the next
    use builds them again from the environment as it is now."""
    from herald import aws
    from herald.container import use

    aws.reset_clients()
    use(None)


@pytest.fixture(autouse=True)
def herald_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key in _CLEARED_ENV:
        monkeypatch.delenv(key, raising=False)
    for key, value in TEST_ENV.items():
        monkeypatch.setenv(key, value)
    clear_herald_caches()
    yield
    clear_herald_caches()
