"""External events in process on moto (contract §3): intake, per-service order, cards by revision, UNKNOWN.

The HTTP app takes the events; the events table's stream and the dispatch queue are pumped to the real
function entry points; cards land in the fake Feishu on loopback.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from fastapi.testclient import TestClient
from herald_ops.template import StackTemplate

from herald.auth.dynamo import DynamoServiceKeyStore
from herald.auth.models import ServiceKeyRecord
from herald.auth.service_keys import ServiceKeys
from herald.clock import Clock, now_ms
from herald.container import current
from herald.errors import Conflict
from herald.events.dynamo import DynamoEventStore
from herald.events.jobs import Job, JobStatus
from herald.events.models import ExternalEvent, Lane, Target
from herald.events.wiring import event_store, operations
from herald.tables import Cancelled
from herald_dev.fakes.feishu import FakeFeishu
from herald_dev.sqs_source import sqs_record
from tests.support.container import reconfigure
from tests.support.events import EventsPipeline
from tests.support.lambda_context import FakeLambdaContext

TARGET = {"receive_id": "oc_ops", "receive_id_type": "chat_id"}


class Partner:
    """A partner service with a key for /events/external and the targets it may reach."""

    def __init__(
        self, api: TestClient, keys: ServiceKeys, service_id: str, targets: list[str], order: str = "service"
    ) -> None:
        key, record = keys.create_key(service_id, ["/events/external"], targets=targets, order=order)
        self.key_id = record.key_id
        self.service_id = service_id
        self.api = api
        self.headers = {"Authorization": f"Bearer {key}"}

    def post(self, event_id: str, /, **data: Any) -> Any:
        body = {"event_id": event_id, "event_type": data.pop("event_type", "job.failed"), "data": event_data(**data)}
        return self.api.post("/events/external", json=body, headers=self.headers)

    def accept(self, event_id: str, /, **data: Any) -> dict[str, Any]:
        response = self.post(event_id, **data)
        assert response.status_code == 202, response.text
        return response.json()["data"]  # type: ignore[no-any-return]


def event_data(**data: Any) -> dict[str, Any]:
    return {"title": "Job 42 failed", "status": "failed", "summary": "job 42 failed", "target": TARGET, **data}


@pytest.fixture
def partner(api: TestClient, service_keys: ServiceKeys) -> Partner:
    return Partner(api, service_keys, "scheduler", ["chat_id:oc_ops", "chat_id:oc_other"])


@pytest.fixture
def past_the_uuid_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """Feishu's uuid window is taken as already closed: an UNKNOWN job is left to an operator at once."""
    reconfigure(events_send_dedup_window_seconds=0)


def titles(feishu: FakeFeishu, receive_id: str = "oc_ops") -> list[str]:
    return [entry["title"] for entry in feishu.log if entry["receive_id"] == receive_id]


def job_statuses(lane: str) -> list[str]:
    """The statuses of a lane's jobs in receive order (a service in the default order is its one lane)."""
    head = event_store().head(lane)
    return [str(job.status) for seq in range(1, head.next_seq + 1) if (job := event_store().job(lane, seq))]


# ---------------------------------------------------------------------------------------------- intake
def test_accepted_event_is_stored_with_its_receive_sequence_and_a_retry_is_a_duplicate(partner: Partner) -> None:
    assert partner.accept("evt-1") == {"event_id": "evt-1", "status": "accepted", "duplicate": False}
    assert partner.accept("evt-1") == {"event_id": "evt-1", "status": "accepted", "duplicate": True}
    assert partner.accept("evt-2")["duplicate"] is False
    assert event_store().head("scheduler").next_seq == 2
    assert [event_store().job("scheduler", seq).event.event_id for seq in (1, 2)] == ["evt-1", "evt-2"]  # type: ignore[union-attr]


def test_reused_event_id_with_other_content_is_409_naming_the_stored_one(partner: Partner) -> None:
    partner.accept("evt-1", summary="first")
    stored = event_store().job("scheduler", 1)
    assert stored is not None
    response = partner.post("evt-1", summary="second")
    assert response.status_code == 409
    body = response.json()
    assert body["code"] == "CONFLICT" and body["data"]["reason"] == "event_id_reused"
    assert body["data"]["received_at_ms"] == stored.received_at_ms
    assert body["data"]["content_hash"] == stored.content_hash
    assert event_store().head("scheduler").next_seq == 1


def test_target_outside_the_services_allowed_targets_is_403_and_stores_nothing(partner: Partner) -> None:
    response = partner.post("evt-1", target={"receive_id": "oc_elsewhere", "receive_id_type": "chat_id"})
    assert response.status_code == 403 and response.json()["data"]["reason"] == "target_not_allowed"
    assert event_store().head("scheduler").next_seq == 0


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ({"event_id": "e", "event_type": "t", "data": event_data(event_id="card-1")}, "card id without revision"),
        ({"event_id": "e", "event_type": "t", "data": event_data(revision=1)}, "revision without card id"),
        ({"event_id": "e", "event_type": "t", "data": event_data(event_id="c", revision=-1)}, "negative revision"),
        ({"event_id": "e", "event_type": "t", "data": event_data(event_id="c", revision="2x")}, "revision not int"),
        ({"event_id": "a#b", "event_type": "t", "data": event_data()}, "event id with '#'"),
        ({"event_type": "t", "data": event_data()}, "no event id"),
        ({"event_id": "e", "event_type": "t", "data": event_data(title="")}, "empty title"),
        ({"event_id": "e", "event_type": "t", "data": {**event_data(), "target": {"receive_id": "x"}}}, "no id type"),
        ({"event_id": "e", "event_type": "t", "data": event_data(), "extra": 1}, "unknown field"),
        ({"event_id": "e", "event_type": "job\x1b[2K\rstatus succeeded", "data": event_data()}, "an escape sequence"),
        ({"event_id": "e", "event_type": "job\x1b]0;owned\x07", "data": event_data()}, "a window title"),
        ({"event_id": "e", "event_type": "job\nstatus  succeeded", "data": event_data()}, "a new line"),
        ({"event_id": "e", "event_type": "job\u202e.progress", "data": event_data()}, "a direction override"),
        ({"event_id": "e", "event_type": "job\u009b2K", "data": event_data()}, "a C1 control"),
        ({"event_id": "e", "event_type": " job", "data": event_data()}, "leading space"),
    ],
)
def test_malformed_event_is_400_and_stores_nothing(partner: Partner, body: dict[str, Any], why: str) -> None:
    response = partner.api.post("/events/external", json=body, headers=partner.headers)
    assert response.status_code == 400, why
    assert response.json()["code"] == "INVALID_ARGUMENT"
    assert event_store().head("scheduler").next_seq == 0


def test_an_event_type_with_a_control_character_is_refused_naming_the_field(partner: Partner) -> None:
    body = {"event_id": "e", "event_type": "job\x1b[2K", "data": event_data()}
    response = partner.api.post("/events/external", json=body, headers=partner.headers)
    assert response.status_code == 400 and "body.event_type" in response.json()["message"], response.text
    accepted = partner.api.post(
        "/events/external", json={**body, "event_type": "任务 进度.v2"}, headers=partner.headers
    )
    assert accepted.status_code == 202, accepted.text


def test_intake_needs_a_key_with_the_events_capability(api: TestClient, service_keys: ServiceKeys) -> None:
    body = {"event_id": "e", "event_type": "t", "data": event_data()}
    assert api.post("/events/external", json=body).status_code == 401
    assert api.post("/events/external", json=body, headers={"Authorization": "Bearer hk_nope"}).status_code == 401
    key, _ = service_keys.create_key("inbox-writer", ["/internal/v1/inbox"])
    refused = api.post("/events/external", json=body, headers={"Authorization": f"Bearer {key}"})
    assert refused.status_code == 403


def test_concurrent_intake_gives_each_event_its_own_sequence_in_commit_order(partner: Partner) -> None:
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda n: partner.accept(f"evt-{n}"), range(40)))
    head = event_store().head("scheduler")
    assert head.next_seq == 40
    jobs = [event_store().job("scheduler", seq) for seq in range(1, 41)]
    assert sorted(job.event.event_id for job in jobs if job) == sorted(f"evt-{n}" for n in range(40))
    received = [job.received_at_ms for job in jobs if job]
    assert received == sorted(received)


def test_a_lane_too_contended_to_take_a_sequence_is_503_with_retry_after_and_stores_nothing(partner: Partner) -> None:
    """Posters racing for one lane's counter each retry; one that loses every race is told to come back
    (found by delivery_at_limits: twenty posters at once to one service got a 500)."""

    class ContendedStore(DynamoEventStore):
        def _append_once(self, lane: Lane, event: ExternalEvent, clock: Clock, tenant: str) -> Job:
            raise Cancelled(frozenset())  # another poster's commit took the counter first, every time

    settings = current().settings
    contended: DynamoEventStore = ContendedStore(settings.events_table, append_attempts=3)
    current().override(event_store, contended)
    answer = partner.post("evt-contended")
    assert answer.status_code == 503, answer.text
    assert answer.json()["code"] == "UNAVAILABLE" and answer.headers["Retry-After"] == "1"
    assert DynamoEventStore(settings.events_table).head("scheduler").next_seq == 0


# ---------------------------------------------------------------------------------------------- delivery
def test_events_are_delivered_in_receive_order_with_one_token_for_many_sends(
    partner: Partner, events: EventsPipeline, feishu: FakeFeishu
) -> None:
    for n in range(8):
        partner.accept(f"evt-{n}", title=f"event {n}")
    events.drain()
    assert titles(feishu) == [f"event {n}" for n in range(8)]
    assert feishu.stats["token_requests"] == 1 and feishu.stats["sends"] == 8
    assert job_statuses("scheduler") == ["succeeded"] * 8
    head = event_store().head("scheduler")
    assert (head.done_seq, head.next_seq) == (8, 8)


def test_a_dispatch_message_reads_its_services_keys_once_for_its_tenant_and_its_targets(
    partner: Partner, events: EventsPipeline, feishu: FakeFeishu, monkeypatch: pytest.MonkeyPatch
) -> None:
    partner.accept("evt-1", title="event 1")
    events.pump_stream()
    reads: list[str] = []
    keys_of = DynamoServiceKeyStore.keys_of

    def counted(store: DynamoServiceKeyStore, service_id: str) -> list[ServiceKeyRecord]:
        reads.append(service_id)
        return keys_of(store, service_id)

    monkeypatch.setattr(DynamoServiceKeyStore, "keys_of", counted)
    assert events.pump_queue() == 1
    assert titles(feishu) == ["event 1"] and reads == ["scheduler"]


def test_card_revisions_update_forward_and_never_back(
    partner: Partner, events: EventsPipeline, feishu: FakeFeishu
) -> None:
    partner.accept("e1", event_id="job-42", revision=1, title="r1")
    events.drain()
    partner.accept("e2", event_id="job-42", revision=3, title="r3")
    events.drain()
    partner.accept("e3", event_id="job-42", revision=2, title="r2 (older)")
    partner.accept("e4", event_id="job-42", revision=3, title="r3")
    partner.accept("e5", event_id="job-42", revision=1, title="r1", target={**TARGET, "receive_id": "oc_other"})
    events.drain()
    assert [(e["op"], e["title"]) for e in feishu.log if e["receive_id"] == "oc_ops"] == [
        ("send", "r1"),
        ("update", "r3"),
    ]
    assert [e["op"] for e in feishu.log if e["receive_id"] == "oc_other"] == ["send"]  # revisions per receiver
    outcomes = [job.outcome for seq in range(1, 6) if (job := event_store().job("scheduler", seq))]
    assert outcomes == ["sent", "updated", "superseded", "same_revision", "sent"]
    assert len({e["message_id"] for e in feishu.log if e["receive_id"] == "oc_ops"}) == 1


def test_revisions_waiting_together_send_only_the_newest_and_record_the_others_superseded(
    partner: Partner, events: EventsPipeline, feishu: FakeFeishu
) -> None:
    partner.accept("e1", event_id="job-42", revision=1, title="r1")
    partner.accept("e2", event_id="job-42", revision=3, title="r3")
    partner.accept("e3", event_id="job-42", revision=2, title="r2 (older)")
    partner.accept("e4", title="a message between them")
    partner.accept("e5", event_id="job-42", revision=4, title="r4")
    events.drain()
    assert [(e["op"], e["title"]) for e in feishu.log] == [("send", "a message between them"), ("send", "r4")]
    jobs = [event_store().job("scheduler", seq) for seq in range(1, 6)]
    assert [job.status if job else None for job in jobs] == [
        JobStatus.SUPERSEDED,
        JobStatus.SUPERSEDED,
        JobStatus.SUPERSEDED,
        JobStatus.SUCCEEDED,
        JobStatus.SUCCEEDED,
    ]
    by = [job.resolutions[-1] for job in jobs[:3] if job]
    assert [(r["by"], r["revision"], r["job_id"]) for r in by] == [("herald", 4, "scheduler:5")] * 3
    assert operations().get("scheduler:1").status is JobStatus.SUPERSEDED  # what an operator sees


def test_same_revision_with_other_content_fails_and_blocks_only_its_service(
    partner: Partner, events: EventsPipeline, feishu: FakeFeishu, api: TestClient, service_keys: ServiceKeys
) -> None:
    other = Partner(api, service_keys, "billing", ["chat_id:oc_billing"])
    partner.accept("e1", event_id="job-42", revision=2, title="r2")
    partner.accept("e2", event_id="job-42", revision=2, title="r2, but different")
    partner.accept("e3", title="after the conflict")
    other.accept("b1", title="billing", target={"receive_id": "oc_billing", "receive_id_type": "chat_id"})
    events.drain()
    assert titles(feishu) == ["r2"]
    assert titles(feishu, "oc_billing") == ["billing"]
    assert job_statuses("scheduler") == ["succeeded", "failed", "queued"]
    blocked = operations().get("scheduler:2")
    assert "already delivered with other content" in blocked.last_error
    operations().skip("scheduler:2", by="alice", note="conflicting revision")
    events.drain()
    assert titles(feishu) == ["r2", "after the conflict"]


def test_transient_failures_before_delivery_are_retried_and_bounded_and_a_rate_limit_answer_never_fails_a_job(
    partner: Partner, events: EventsPipeline, feishu: FakeFeishu
) -> None:
    feishu.queue_faults({"op": "token", "status": 503}, {"op": "send", "code": 99991400, "status": 429})
    partner.accept("e1", title="one")
    partner.accept("e2", title="two")
    events.drain()
    assert titles(feishu) == [] and job_statuses("scheduler") == ["queued", "queued"]
    events.release_deferred()
    events.drain()  # the send refused by the rate limit goes back and again, in the same drain
    assert titles(feishu) == ["one", "two"]
    first = event_store().job("scheduler", 1)
    assert first is not None and first.attempts == 2 and first.status is JobStatus.SUCCEEDED
    # Feishu's rate limit, however often it answers, slows Herald down and never counts as a failed attempt.
    feishu.queue_faults(*[{"op": "send", "code": 99991400, "status": 429}] * 6)
    partner.accept("e3", title="three")
    events.drain()
    third = event_store().job("scheduler", 3)
    assert third is not None and third.status is JobStatus.SUCCEEDED and third.attempts == 1
    # Retries are bounded: a job that keeps failing before its side effect fails, and blocks.
    feishu.queue_faults(*[{"op": "send", "code": 1000004}] * 5)
    partner.accept("e4", title="four")
    for _ in range(6):
        events.release_deferred()
        events.drain()
    fourth = event_store().job("scheduler", 4)
    assert fourth is not None and fourth.status is JobStatus.FAILED and "gave up after 5 attempts" in fourth.last_error


def first_of_three_unknown_beside_another_service(
    partner: Partner, other: Partner, feishu: FakeFeishu, events: EventsPipeline
) -> None:
    """Three events of `partner`, the first sent but answered with a 500; one event of `other`; one drain."""
    feishu.queue_faults({"op": "send", "after_send": True})
    for n in range(3):
        partner.accept(f"e{n}", title=f"event {n}")
    other.accept("b1", title="billing", target={"receive_id": "oc_billing", "receive_id_type": "chat_id"})
    events.drain()


def test_send_answered_500_after_it_arrived_is_unknown_then_settled_by_a_resend_with_its_uuid(
    partner: Partner, events: EventsPipeline, feishu: FakeFeishu, api: TestClient, service_keys: ServiceKeys
) -> None:
    first_of_three_unknown_beside_another_service(
        partner, Partner(api, service_keys, "billing", ["chat_id:oc_billing"]), feishu, events
    )
    assert job_statuses("scheduler") == ["unknown", "queued", "queued"]  # its message comes back after a backoff
    assert titles(feishu, "oc_billing") == ["billing"]  # only its own service waits
    events.release_deferred()
    events.drain()
    assert titles(feishu) == ["event 0", "event 1", "event 2"]  # the resend was the same message
    assert job_statuses("scheduler") == ["succeeded"] * 3
    first = event_store().job("scheduler", 1)
    assert first is not None and first.message_id == feishu.log[0]["message_id"]
    assert first.resolutions[-1]["by"] == "herald" and first.evidence


def test_send_interrupted_after_the_mark_past_the_uuid_window_blocks_until_an_operator_resolves_it(
    partner: Partner,
    events: EventsPipeline,
    feishu: FakeFeishu,
    api: TestClient,
    service_keys: ServiceKeys,
    past_the_uuid_window: None,
) -> None:
    first_of_three_unknown_beside_another_service(
        partner, Partner(api, service_keys, "billing", ["chat_id:oc_billing"]), feishu, events
    )
    assert job_statuses("scheduler") == ["unknown", "queued", "queued"]
    assert titles(feishu) == ["event 0"]  # it did arrive, but Herald cannot know that
    assert titles(feishu, "oc_billing") == ["billing"]
    ((job, head),) = operations().blocked()
    assert job.job_id == "scheduler:1" and (head.done_seq, head.next_seq) == (0, 3) and job.marked_at_ms > 0
    resolved = operations().requeue("scheduler:1", by="alice", note="checked Feishu")
    assert resolved.resolutions[-1]["by"] == "alice" and resolved.resolutions[-1]["from"] == "unknown"
    events.drain()
    # Feishu's uuid drops the resend of the same job: the card arrived once, then the rest in order.
    assert titles(feishu) == ["event 0", "event 1", "event 2"]
    assert job_statuses("scheduler") == ["succeeded"] * 3


def test_unknown_resolved_as_sent_records_the_message_and_later_revisions_update_it(
    partner: Partner, events: EventsPipeline, feishu: FakeFeishu, past_the_uuid_window: None
) -> None:
    feishu.queue_faults({"op": "send", "after_send": True})
    partner.accept("e1", event_id="job-7", revision=1, title="r1")
    events.drain()
    (sent,) = feishu.log
    job = operations().sent("scheduler:1", sent["message_id"], by="bob")
    assert job.status is JobStatus.SUCCEEDED and job.message_id == sent["message_id"]
    partner.accept("e2", event_id="job-7", revision=2, title="r2")
    events.drain()
    assert [(e["op"], e["message_id"]) for e in feishu.log] == [
        ("send", sent["message_id"]),
        ("update", sent["message_id"]),
    ]


def test_worker_dying_before_the_mark_runs_again_and_after_it_is_settled_by_the_next_drain(
    partner: Partner, events: EventsPipeline, feishu: FakeFeishu
) -> None:
    partner.accept("e1", title="one")
    partner.accept("e2", title="two")
    store = event_store()
    past = now_ms() - 1
    # A worker claimed job 1 and died before any external write; its lease ran out.
    first = store.job("scheduler", 1)
    assert first is not None
    store.commit(first, first.claimed("dead-worker", past), past)
    events.drain()
    assert titles(feishu) == ["one", "two"]
    # A worker claimed job 3, marked its side effect, and died; its lease ran out.
    partner.accept("e3", title="three")
    events.pump_stream()
    third = store.job("scheduler", 3)
    assert third is not None
    claimed = store.commit(third, third.claimed("dead-worker", past), past)
    marked = store.commit(claimed, claimed.marked(past), past)
    assert marked.marked_at_ms
    events.drain()
    third = store.job("scheduler", 3)
    assert third is not None and third.status is JobStatus.SUCCEEDED and "interrupted" in third.evidence[0]
    assert titles(feishu) == ["one", "two", "three"]
    assert third.resolutions[-1]["by"] == "herald"


def test_job_whose_target_was_removed_before_delivery_is_not_delivered_and_does_not_block(
    partner: Partner, events: EventsPipeline, feishu: FakeFeishu, service_keys: ServiceKeys
) -> None:
    partner.accept("e1", title="to a chat no longer allowed")
    partner.accept("e2", title="still allowed", target={**TARGET, "receive_id": "oc_other"})
    # The operator narrows the service: a key without oc_ops replaces the old one, which is revoked.
    service_keys.create_key("scheduler", ["/events/external"], targets=["chat_id:oc_other"])
    service_keys.revoke(partner.key_id)
    events.drain()
    assert titles(feishu) == [] and titles(feishu, "oc_other") == ["still allowed"]
    first = event_store().job("scheduler", 1)
    assert first is not None and first.status is JobStatus.REJECTED and first.outcome == "target_not_allowed"


def test_redriven_old_dispatch_message_neither_resends_nor_reorders(
    partner: Partner, events: EventsPipeline, feishu: FakeFeishu, past_the_uuid_window: None
) -> None:
    for n in range(3):
        partner.accept(f"e{n}", title=f"event {n}")
    events.drain()
    old = events.received[0]
    feishu.queue_faults({"op": "send", "after_send": True})
    partner.accept("e3", title="event 3")
    partner.accept("e4", title="event 4")
    events.drain()
    assert job_statuses("scheduler")[3:] == ["unknown", "queued"]
    sqs = boto3.client("sqs")
    for generation in range(3):  # an operator redrives the first message again, past FIFO deduplication
        sqs.send_message(
            QueueUrl=events.queue_url, MessageBody=old["Body"], MessageGroupId="scheduler",
            MessageDeduplicationId=f"redrive-{generation}",
        )  # fmt: skip
        events.drain()
    assert titles(feishu) == ["event 0", "event 1", "event 2", "event 3"]
    assert job_statuses("scheduler")[3:] == ["unknown", "queued"]
    assert json.loads(old["Body"])["lane"] == "scheduler"


def test_operator_resolution_of_a_job_that_is_not_blocked_is_refused(partner: Partner, events: EventsPipeline) -> None:
    partner.accept("e1")
    events.drain()
    with pytest.raises(Exception, match="not failed or unknown"):
        operations().requeue("scheduler:1", by="alice")
    with pytest.raises(Exception, match="no job"):
        operations().skip("scheduler:99", by="alice")


def test_a_failed_job_is_requeued_or_skipped_but_never_recorded_as_sent(
    partner: Partner, events: EventsPipeline, feishu: FakeFeishu
) -> None:
    """JOB_TRANSITIONS: Feishu refused a failed job's send, so "sent" (unknown -> succeeded) is not a move
    from failed; a skipped job is finished and moves nowhere."""
    feishu.queue_faults({"op": "send", "code": 230001, "status": 400})  # a refusal: not retryable
    partner.accept("e1")
    events.drain()
    assert job_statuses("scheduler") == ["failed"]
    with pytest.raises(Conflict, match="is failed, not unknown"):
        operations().sent("scheduler:1", "om_1", by="bob")
    assert operations().skip("scheduler:1", by="bob").status is JobStatus.SKIPPED
    with pytest.raises(Conflict, match="is skipped, not failed or unknown"):
        operations().requeue("scheduler:1", by="bob")
    assert job_statuses("scheduler") == ["skipped"]


def test_job_committed_between_the_dispatchers_reads_is_delivered_not_skipped(
    partner: Partner, events: EventsPipeline, feishu: FakeFeishu, monkeypatch: pytest.MonkeyPatch
) -> None:
    partner.accept("e0", title="zero")
    events.drain()
    store = event_store()
    read_job = store.job

    def job_then_intake(service_id: str, seq: int) -> Any:
        found = read_job(service_id, seq)
        if found is None and seq == 2 and event_store().head(service_id).next_seq < 2:
            partner.accept("e1", title="one")  # commits job 2 (and the counter) right after this read
        return found

    monkeypatch.setattr(store, "job", job_then_intake)
    boto3.client("sqs").send_message(
        QueueUrl=events.queue_url, MessageBody=json.dumps({"service_id": "scheduler"}),
        MessageGroupId="scheduler", MessageDeduplicationId="poke",
    )  # fmt: skip
    events.drain()
    assert titles(feishu) == ["zero", "one"]
    assert job_statuses("scheduler") == ["succeeded", "succeeded"]


def test_finished_jobs_and_their_dedup_records_expire_after_7_days_and_unknown_ones_are_kept(
    partner: Partner, events: EventsPipeline, feishu: FakeFeishu, aws: StackTemplate, past_the_uuid_window: None
) -> None:
    feishu.queue_faults({"op": "send", "after_send": True})
    partner.accept("e1", title="unknown")
    events.drain()
    operations().skip("scheduler:1", by="alice")
    partner.accept("e2", title="delivered")
    events.drain()
    feishu.queue_faults({"op": "send", "after_send": True})
    partner.accept("e3", title="unknown again")
    events.drain()
    table = aws.physical_name("ExternalEventsTable")

    def expires_at(pk: str, sk: str) -> int | None:
        item = boto3.client("dynamodb").get_item(TableName=table, Key={"pk": {"S": pk}, "sk": {"S": sk}})["Item"]
        return int(item["expires_at"]["N"]) if "expires_at" in item else None

    week = 7 * 86_400
    for pk, sk in (("SVC#scheduler", "JOB#000000000002"), ("EVT#scheduler#e2", "EVENT")):
        assert abs(expires_at(pk, sk) - (now_ms() // 1000 + week)) < 60  # type: ignore[operator]
    assert abs(expires_at("SVC#scheduler", "JOB#000000000001") - (now_ms() // 1000 + week)) < 60  # type: ignore[operator]
    assert expires_at("SVC#scheduler", "JOB#000000000003") is None
    assert expires_at("EVT#scheduler#e3", "EVENT") is None


def test_worker_takes_no_new_side_effect_with_too_little_lambda_time_left(
    partner: Partner, events: EventsPipeline, feishu: FakeFeishu
) -> None:
    partner.accept("e1", title="one")
    events.pump_stream()
    (message,) = events.sqs.receive_message(QueueUrl=events.queue_url, AttributeNames=["All"])["Messages"]
    record = sqs_record(message, events.queue_arn, "us-east-1")
    result = events.worker({"Records": [record]}, FakeLambdaContext(remaining_ms=5_000))
    assert result["batchItemFailures"] == [{"itemIdentifier": message["MessageId"]}]
    assert titles(feishu) == [] and job_statuses("scheduler") == ["queued"]
    events.sqs.change_message_visibility(
        QueueUrl=events.queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
    )
    events.drain()
    assert titles(feishu) == ["one"]


@dataclass
class EndingInvocation(FakeLambdaContext):
    """Plenty of time at the first look, then less than a job's reserve (still enough for one call)."""

    looks: int = 0

    def get_remaining_time_in_millis(self) -> int:
        self.looks += 1
        return 30_000 if self.looks == 1 else 15_000


def test_a_drain_out_of_time_after_progress_hands_over_to_a_new_nudge_in_the_waiting_queue_not_spending_receives(
    partner: Partner, events: EventsPipeline, feishu: FakeFeishu
) -> None:
    """A lane carrying on is not new work: its continuation waits in the waiting queue. In the events queue, a
    backlog's continuations came before another partner's first card (delivery_at_limits (d): B's paced lane came
    back 15 s after it paused, behind A's)."""
    for n, title in enumerate(("one", "two", "three")):
        partner.accept(f"e{n}", title=title)
    events.pump_stream()
    message = events.sqs.receive_message(QueueUrl=events.queue_url, AttributeNames=["All"])["Messages"][0]
    result = events.worker({"Records": [sqs_record(message, events.queue_arn, "us-east-1")]}, EndingInvocation())
    assert result["batchItemFailures"] == []  # finished well: its receive count is not spent on a backlog
    assert titles(feishu) == ["one"]
    events.sqs.delete_message(QueueUrl=events.queue_url, ReceiptHandle=message["ReceiptHandle"])
    waiting = events.sqs.receive_message(QueueUrl=events.waiting_url, MaxNumberOfMessages=10).get("Messages", [])
    assert [json.loads(m["Body"]) for m in waiting] == [{"v": 1, "lane": "scheduler", "seq": 1, "why": "continue"}]
    new_work = events.sqs.receive_message(QueueUrl=events.queue_url, MaxNumberOfMessages=10).get("Messages", [])
    assert all(json.loads(m["Body"])["why"] == "new" for m in new_work)  # the other two jobs' own nudges
    for url, messages in ((events.waiting_url, waiting), (events.queue_url, new_work)):
        for left in messages:
            events.sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=left["ReceiptHandle"], VisibilityTimeout=0)
    events.drain()
    assert titles(feishu) == ["one", "two", "three"]


def test_received_at_never_runs_backwards_along_the_sequence_even_when_a_clock_does(partner: Partner) -> None:
    target = Target("chat_id", "oc_ops")
    first = event_store().append(Lane("scheduler"), ExternalEvent("a", "t", "A", "ok", "", target), lambda: 2_000)
    second = event_store().append(Lane("scheduler"), ExternalEvent("b", "t", "B", "ok", "", target), lambda: 1_000)
    assert (first.seq, first.received_at_ms) == (1, 2_000)
    assert (second.seq, second.received_at_ms) == (2, 2_000)
