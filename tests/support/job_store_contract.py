"""The external-event job store's contract: one set of scenarios, run on every store behind the ports (the
in-memory fake, DynamoDB on moto, and the local cloud's engine: moto's server or DynamoDB Local). Each step
is read back and must equal the state it committed, so a store that keeps, drops or rewrites a field the
domain did not decide fails here; each race names the interleaving a race test relies on.

A subclass gives the `store` fixture; every scenario uses its own service, so a shared table serves them all."""

from __future__ import annotations

import dataclasses
import secrets
from typing import Protocol

import pytest

from herald.events.cards import CardMessage, CardWrite
from herald.events.jobs import EVIDENCE_LINES, Job, JobStatus, StaleJob
from herald.events.models import DuplicateEvent, ExternalEvent, Lane, Target
from herald.events.nudges import OverdueJobs
from herald.events.operations import OperationsStore
from herald.events.policy import SUPERSEDED_AT_ONCE, superseded_run
from herald.events.ports import DispatchStore
from herald.events.records import Outcome, resolution
from herald.events.service import IntakeStore

NOW = 1_800_000_000_000
LEASE_MS = 60_000
RETENTION_MS = 7 * 86_400_000
TARGET = Target("chat_id", "oc_contract")


class JobStore(IntakeStore, DispatchStore, OperationsStore, OverdueJobs, Protocol):
    """Every port the events table serves."""


def event(event_id: str, card_id: str | None = None, revision: int | None = None) -> ExternalEvent:
    return ExternalEvent(event_id, "job.progress", event_id, "running", "", TARGET, card_id, revision)


class JobStoreContract:
    @pytest.fixture
    def service(self) -> str:
        return f"svc-{secrets.token_hex(4)}"

    def append(self, store: JobStore, service: str, *events: ExternalEvent) -> list[Job]:
        return [store.append(Lane(service), e, lambda: NOW) for e in events]

    def commit(self, store: JobStore, before: Job, after: Job, at_ms: int = NOW, **extra: object) -> Job:
        """Commit, and check the store reads back exactly what was committed."""
        committed = store.commit(before, after, at_ms, **extra)  # type: ignore[arg-type]
        assert committed == after
        assert store.job(after.lane.key, after.seq) == after
        return after

    def claimed_and_marked(self, store: JobStore, job: Job) -> Job:
        claimed = self.commit(store, job, job.claimed("a1", NOW + LEASE_MS))
        return self.commit(store, claimed, claimed.marked(NOW + 1), NOW + 1)

    # ------------------------------------------------------------------ intake
    def test_appended_events_take_the_next_sequences_and_an_event_id_is_held_once(
        self, store: JobStore, service: str
    ) -> None:
        first, second = self.append(store, service, event("e1"), event("e2"))
        assert (first.seq, second.seq) == (1, 2)
        assert store.head(service).next_seq == 2 and store.head(service).done_seq == 0
        assert store.job(service, 1) == first and store.job(service, 2) == second
        with pytest.raises(DuplicateEvent) as duplicate:
            store.append(Lane(service), event("e1"), lambda: NOW + 5)
        assert (duplicate.value.stored.seq, duplicate.value.stored.content_hash) == (1, first.content_hash)
        assert store.head(service).next_seq == 2

    def test_each_lane_of_a_service_has_its_own_sequence_and_cursor_but_an_event_id_is_the_services(
        self, store: JobStore, service: str
    ) -> None:
        other = Target("chat_id", "oc_other")
        ops, elsewhere = Lane(service, TARGET.key), Lane(service, other.key)
        first = store.append(ops, event("e1"), lambda: NOW)
        there = store.append(elsewhere, dataclasses.replace(event("e2"), target=other), lambda: NOW)
        assert (first.seq, there.seq) == (1, 1) and first.lane == ops and there.lane == elsewhere
        assert store.job(ops.key, 1) == first and store.job(elsewhere.key, 1) == there
        assert store.head(service).next_seq == 0  # the service's own lane holds nothing
        with pytest.raises(DuplicateEvent):  # the same event id, in another lane of the same service
            store.append(elsewhere, dataclasses.replace(event("e1"), target=other), lambda: NOW)
        running = self.claimed_and_marked(store, first)
        done = self.commit(
            store, running, running.completed(JobStatus.SUCCEEDED, Outcome.SENT, "om_1", NOW, NOW), advance=True
        )
        assert (store.head(ops.key).done_seq, store.head(elsewhere.key).done_seq) == (1, 0)
        assert store.waiting(elsewhere.key, 0, 10) == [there] and done.job_id == f"{service}/{TARGET.key}:1"

    # ------------------------------------------------------------------ a worker's steps
    def test_a_claim_then_a_mark_are_read_back_and_the_marked_job_is_in_flight_until_its_lease_ends(
        self, store: JobStore, service: str
    ) -> None:
        (job,) = self.append(store, service, event("e1"))
        marked = self.claimed_and_marked(store, job)
        assert marked.attempts == 1 and marked.first_marked_at_ms == NOW + 1
        in_flight = [j.job_id for j in store.in_flight_until(NOW + LEASE_MS + 1) if j.service_id == service]
        assert in_flight == [marked.job_id]
        assert not [j for j in store.in_flight_until(NOW + LEASE_MS) if j.service_id == service]

    def test_of_two_workers_claiming_the_same_queued_job_only_the_first_lands(
        self, store: JobStore, service: str
    ) -> None:
        (job,) = self.append(store, service, event("e1"))
        self.commit(store, job, job.claimed("a1", NOW + LEASE_MS))
        with pytest.raises(StaleJob):
            store.commit(job, job.claimed("a2", NOW + LEASE_MS), NOW)
        current = store.job(service, 1)
        assert current is not None and current.attempt_id == "a1"

    def test_an_unmarked_attempt_whose_lease_ended_is_taken_over_and_its_stalled_worker_cannot_mark(
        self, store: JobStore, service: str
    ) -> None:
        (job,) = self.append(store, service, event("e1"))
        stalled = self.commit(store, job, job.claimed("a1", NOW + LEASE_MS))
        with pytest.raises(StaleJob):  # its lease still runs
            store.commit(stalled, stalled.claimed("a2", NOW + 2 * LEASE_MS), NOW + LEASE_MS - 1)
        taken = self.commit(store, stalled, stalled.claimed("a2", NOW + 2 * LEASE_MS), NOW + LEASE_MS + 1)
        assert taken.attempts == 2
        with pytest.raises(StaleJob):
            store.commit(stalled, stalled.marked(NOW + LEASE_MS + 2), NOW + LEASE_MS + 2)

    def test_a_marked_attempt_is_never_taken_over(self, store: JobStore, service: str) -> None:
        (job,) = self.append(store, service, event("e1"))
        marked = self.claimed_and_marked(store, job)
        with pytest.raises(StaleJob):
            store.commit(marked, marked.claimed("a2", NOW + 3 * LEASE_MS), NOW + 2 * LEASE_MS)

    def test_a_retry_keeps_the_attempt_id_clears_the_lease_and_the_mark_and_bounds_the_error(
        self, store: JobStore, service: str
    ) -> None:
        (job,) = self.append(store, service, event("e1"))
        marked = self.claimed_and_marked(store, job)
        retried = self.commit(store, marked, marked.retried("x" * 5000, NOW + 2_000), NOW + 2)
        assert retried.status is JobStatus.QUEUED and retried.attempt_id == "a1"
        assert (retried.lock_until_ms, retried.marked_at_ms, len(retried.last_error)) == (0, 0, 1000)
        assert not [j for j in store.in_flight_until(NOW + 10 * LEASE_MS) if j.service_id == service]

    def test_a_write_whose_earlier_try_landed_is_done(self, store: JobStore, service: str) -> None:
        (job,) = self.append(store, service, event("e1"))
        claimed = self.commit(store, job, job.claimed("a1", NOW + LEASE_MS))
        assert store.commit(job, claimed, NOW) == claimed  # the SDK retried a write that had landed

    # ------------------------------------------------------------------ blocked
    def test_a_failed_job_is_listed_blocked_and_no_longer_in_flight(self, store: JobStore, service: str) -> None:
        (job,) = self.append(store, service, event("e1"))
        marked = self.claimed_and_marked(store, job)
        failed = self.commit(store, marked, marked.failed("refused", NOW + 5, None), NOW + 5)
        assert (failed.blocked_at_ms, failed.lock_until_ms, failed.evidence) == (NOW + 5, 0, ())
        assert [j for j in store.blocked() if j.service_id == service] == [failed]
        assert not [j for j in store.in_flight_until(NOW + 10 * LEASE_MS) if j.service_id == service]

    def test_an_unknown_job_keeps_its_first_and_latest_evidence_through_every_try_at_settling_it(
        self, store: JobStore, service: str
    ) -> None:
        (job,) = self.append(store, service, event("e1"))
        job = self.claimed_and_marked(store, job)
        blocked_at = NOW + 10
        for n in range(EVIDENCE_LINES + 5):
            at = NOW + 10 + n * 100
            job = self.commit(store, job, job.unknown(f"try {n}", at, None, at + 50), at)
            assert job.blocked_at_ms == blocked_at  # blocked since the first time, through its tries
            job = self.commit(store, job, job.settling(f"s{n}", at + LEASE_MS, at + 50), at + 50)
        assert len(job.evidence) == EVIDENCE_LINES
        tries = [line.split(": ", 1)[1] for line in job.evidence]
        first, latest = EVIDENCE_LINES // 2, EVIDENCE_LINES // 2
        assert tries == [f"try {n}" for n in range(first)] + [f"try {n}" for n in range(25 - latest, 25)]
        assert job.settle_tries == EVIDENCE_LINES + 5

    def test_a_settling_try_decided_from_an_older_schedule_does_not_land(self, store: JobStore, service: str) -> None:
        (job,) = self.append(store, service, event("e1"))
        marked = self.claimed_and_marked(store, job)
        unknown = self.commit(store, marked, marked.unknown("no answer", NOW + 5, None, NOW + 100), NOW + 5)
        settling = self.commit(store, unknown, unknown.settling("s1", NOW + LEASE_MS, NOW + 100), NOW + 100)
        again = self.commit(store, settling, settling.unknown("no answer", NOW + 200, None, NOW + 900), NOW + 200)
        with pytest.raises(StaleJob):  # a second worker read it before the first settling try
            store.commit(unknown, unknown.settling("s2", NOW + LEASE_MS, NOW + 300), NOW + 300)
        assert store.job(service, 1) == again

    # ------------------------------------------------------------------ finished
    def test_a_completed_job_moves_the_cursor_and_leaves_its_card_in_one_write(
        self, store: JobStore, service: str
    ) -> None:
        (job,) = self.append(store, service, event("e1", "card-1", 1))
        marked = self.claimed_and_marked(store, job)
        done = marked.completed(JobStatus.SUCCEEDED, Outcome.SENT, "om_1", NOW + 9, NOW + 9 + RETENTION_MS)
        card = CardWrite(service, "card-1", TARGET, CardMessage("om_1", 1, job.content_hash), None)
        self.commit(store, marked, done, NOW + 9, card=card, advance=True)
        assert done.expires_at_s == (NOW + 9 + RETENTION_MS) // 1000 and done.finished_at_ms == NOW + 9
        assert store.head(service).done_seq == 1
        assert store.card(service, "card-1", TARGET) == CardMessage("om_1", 1, job.content_hash)

    def test_a_continuing_card_records_its_app_send_time_and_the_message_it_continues(
        self, store: JobStore, service: str
    ) -> None:
        (job,) = self.append(store, service, event("e1", "card-1", 2))
        marked = self.claimed_and_marked(store, job)
        done = marked.completed(
            JobStatus.SUCCEEDED, Outcome.CONTINUED, "om_2", NOW + 9, NOW + RETENTION_MS, continued_from="om_1"
        )
        shown = CardMessage("om_2", 2, job.content_hash, app_id="cli_tenant", sent_at_ms=NOW + 9)
        self.commit(store, marked, done, NOW + 9, card=CardWrite(service, "card-1", TARGET, shown, None), advance=True)
        assert store.card(service, "card-1", TARGET) == shown
        stored = store.job(service, 1)
        assert stored is not None and (stored.outcome, stored.continued_from) == (Outcome.CONTINUED, "om_1")

    def test_a_completion_lands_only_on_the_card_mapping_and_the_cursor_it_was_decided_from(
        self, store: JobStore, service: str
    ) -> None:
        first, second = self.append(store, service, event("e1", "card-1", 2), event("e2"))
        marked = self.claimed_and_marked(store, second)
        early = marked.completed(JobStatus.SUCCEEDED, Outcome.SENT, "om_2", NOW + 9, NOW + RETENTION_MS)
        with pytest.raises(StaleJob):  # job 1 is not finished: the cursor is not at 1
            store.commit(marked, early, NOW + 9, advance=True)
        assert store.job(service, 2) == marked and store.head(service).done_seq == 0
        marked = self.claimed_and_marked(store, first)
        done = marked.completed(JobStatus.SUCCEEDED, Outcome.SENT, "om_1", NOW + 9, NOW + RETENTION_MS)
        moved = CardWrite(service, "card-1", TARGET, CardMessage("om_1", 2, first.content_hash), expected_revision=1)
        with pytest.raises(StaleJob):  # the mapping shows no revision 1
            store.commit(marked, done, NOW + 9, card=moved, advance=True)
        assert store.job(service, 1) == marked and store.card(service, "card-1", TARGET) is None
        assert store.head(service).done_seq == 0

    # ------------------------------------------------------------------ an operator's resolution
    def test_a_requeue_starts_a_new_generation_with_no_attempt_in_flight(self, store: JobStore, service: str) -> None:
        (job,) = self.append(store, service, event("e1"))
        marked = self.claimed_and_marked(store, job)
        unknown = self.commit(store, marked, marked.unknown("no answer", NOW + 5, None, 0), NOW + 5)
        requeue = resolution("requeue", "alice", NOW + 7, was=JobStatus.UNKNOWN, note="")
        requeued = self.commit(store, unknown, unknown.resolved(JobStatus.QUEUED, requeue, NOW + 7, None), NOW + 7)
        assert (requeued.generation, requeued.attempts, requeued.attempt_id, requeued.outcome) == (
            1,
            0,
            "",
            "resolved_requeue",
        )
        assert (requeued.marked_at_ms, requeued.next_settle_at_ms, requeued.expires_at_s) == (0, 0, 0)
        assert not [j for j in store.blocked() if j.service_id == service]
        again = self.commit(store, requeued, requeued.claimed("a2", NOW + LEASE_MS), NOW + 8)
        assert again.attempts == 1

    def test_a_job_resolved_as_sent_keeps_its_message_id_and_card_and_expires_after_the_retention(
        self, store: JobStore, service: str
    ) -> None:
        (job,) = self.append(store, service, event("e1", "card-1", 3))
        marked = self.claimed_and_marked(store, job)
        unknown = self.commit(store, marked, marked.unknown("no answer", NOW + 5, None, 0), NOW + 5)
        found = resolution("sent", "bob", NOW + 7, was=JobStatus.UNKNOWN, message_id="om_9")
        sent = unknown.resolved(JobStatus.SUCCEEDED, found, NOW + 7, NOW + 7 + RETENTION_MS)
        card = CardWrite(service, "card-1", TARGET, CardMessage("om_9", 3, job.content_hash), None)
        self.commit(store, unknown, sent, NOW + 7, card=card)
        assert (sent.message_id, sent.outcome, sent.finished_at_ms) == ("om_9", "resolved_sent", NOW + 7)
        assert sent.expires_at_s == (NOW + 7 + RETENTION_MS) // 1000
        assert store.card(service, "card-1", TARGET) == CardMessage("om_9", 3, job.content_hash)
        assert store.head(service).done_seq == 0  # the drain moves the cursor past it

    def test_of_two_operators_resolving_one_blocked_job_only_the_first_lands(
        self, store: JobStore, service: str
    ) -> None:
        (job,) = self.append(store, service, event("e1"))
        marked = self.claimed_and_marked(store, job)
        failed = self.commit(store, marked, marked.failed("refused", NOW + 5, None), NOW + 5)
        skip = resolution("skip", "alice", NOW + 7, was=JobStatus.FAILED, note="gone")
        skipped = self.commit(store, failed, failed.resolved(JobStatus.SKIPPED, skip, NOW + 7, NOW + RETENTION_MS))
        requeue = resolution("requeue", "bob", NOW + 8, was=JobStatus.FAILED, note="")
        with pytest.raises(StaleJob):
            store.commit(failed, failed.resolved(JobStatus.QUEUED, requeue, NOW + 8, None), NOW + 8)
        assert store.job(service, 1) == skipped

    # ------------------------------------------------------------------ coalescing a card's revisions
    def test_the_jobs_waiting_behind_one_are_read_in_order_up_to_a_limit(self, store: JobStore, service: str) -> None:
        jobs = self.append(store, service, *(event(f"e{n}") for n in range(1, 5)))
        assert store.waiting(service, 1, 10) == jobs[1:]
        assert store.waiting(service, 1, 2) == jobs[1:3]
        assert store.waiting(service, 4, 10) == []

    def test_a_superseded_revision_finishes_without_a_call_and_moves_the_cursor(
        self, store: JobStore, service: str
    ) -> None:
        old, other, new = self.append(
            store, service, event("e1", "card-1", 1), event("e2", "card-2", 5), event("e3", "card-1", 2)
        )
        assert old.newest_revision_in(store.waiting(service, 1, 10)) == new
        assert other.newest_revision_in(store.waiting(service, 2, 10)) is None
        done = old.superseded(new, NOW + 3, NOW + 3 + RETENTION_MS)
        self.commit(store, old, done, NOW + 3, advance=True)
        assert store.head(service).done_seq == 1
        assert (done.outcome, done.resolutions[-1]["revision"], done.resolutions[-1]["job_id"]) == (
            "superseded",
            2,
            new.job_id,
        )

    def test_a_run_of_superseded_revisions_is_written_at_once_with_the_cursor_past_the_last(
        self, store: JobStore, service: str
    ) -> None:
        jobs = self.append(store, service, *(event(f"e{n}", f"card-{n % 2}", n) for n in range(1, 26)))
        passed = superseded_run(jobs[0], store.waiting(service, 1, 50), NOW + 3, NOW + 3 + RETENTION_MS)
        assert [old.seq for old, _ in passed] == list(range(1, 24))  # 24 and 25 are each card's newest
        assert len(passed) < SUPERSEDED_AT_ONCE
        store.supersede(passed, NOW + 3)
        assert [store.job(service, after.seq) for _, after in passed] == [after for _, after in passed]
        assert store.head(service).done_seq == 23
        assert [after.resolutions[-1]["job_id"] for _, after in passed[:2]] == [jobs[-1].job_id, jobs[-2].job_id]

    def test_a_run_of_superseded_revisions_with_one_moved_writes_nothing(self, store: JobStore, service: str) -> None:
        jobs = self.append(store, service, *(event(f"e{n}", "card-1", n) for n in range(1, 5)))
        run = superseded_run(jobs[0], jobs[1:], NOW, NOW + RETENTION_MS)
        self.commit(store, jobs[1], jobs[1].claimed("a1", NOW + LEASE_MS))  # another worker's claim, meanwhile
        with pytest.raises(StaleJob):
            store.supersede(run, NOW)
        assert store.job(service, 1) == jobs[0] and store.job(service, 3) == jobs[2]
        assert store.head(service).done_seq == 0
