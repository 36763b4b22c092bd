"""The job that delivers an external event (contract §3): its state machine, its guards, its retry policy.

A job's life, every step a conditional write:

    queued ──claim──► running ──mark──► running (marked) ──► succeeded
      ▲                 │  │                  │
      └──retry(backoff)─┘  └► failed          ├─ provider said "not done" ─► queued / failed
                                              └─ outcome unknown (or the worker died) ─► unknown
                                                                                          │  ▲
                                           Herald settles it where Feishu makes it provable │  │ not yet
                                           (a resend with the same uuid inside its window,  ▼  │
                                           or the revision's update again) ──────────► running (marked)

`failed` and `unknown` block the service's later jobs. An `unknown` job Herald can settle carries the time of
its next try (`next_settle_at_ms`); one it cannot (past Feishu's uuid window, out of tries, or a refusal that
proves nothing) waits for an operator (`requeue`, `sent`, `skip`), with the evidence of what was tried.
`rejected` (the target left the service's allowed targets) does not block.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from herald.events.models import ExternalEvent, Lane, format_job_id
from herald.events.records import Outcome, ProviderCall, Resolution, resolution


class JobStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    REJECTED = "rejected"  # not delivered: the target is no longer allowed for the service
    SKIPPED = "skipped"  # not delivered: an operator skipped it
    SUPERSEDED = "superseded"  # not sent: a newer revision of its card was already waiting behind it
    FAILED = "failed"  # blocks the service
    UNKNOWN = "unknown"  # blocks the service: the side effect may or may not have happened

    @property
    def completed(self) -> bool:
        return self in (JobStatus.SUCCEEDED, JobStatus.REJECTED, JobStatus.SKIPPED, JobStatus.SUPERSEDED)

    @property
    def blocking(self) -> bool:
        return self in (JobStatus.FAILED, JobStatus.UNKNOWN)


# A job's state machine: where each status may go. A worker claims a queued job, and may take over a
# running one whose lease ran out; the attempt ends delivered (or rejected), back in the queue for a retry,
# or blocked (failed: not delivered; unknown: maybe delivered). A worker may take an unknown job back to
# running to settle it (where Feishu makes a second try provably harmless); otherwise an operator moves a
# blocked job on, and only an unknown one can be recorded as sent (a failed one was certainly not).
JOB_TRANSITIONS: dict[JobStatus, frozenset[JobStatus]] = {
    JobStatus.QUEUED: frozenset({JobStatus.RUNNING, JobStatus.SUPERSEDED}),
    JobStatus.RUNNING: frozenset(
        {
            JobStatus.RUNNING,
            JobStatus.QUEUED,
            JobStatus.SUCCEEDED,
            JobStatus.REJECTED,
            JobStatus.FAILED,
            JobStatus.UNKNOWN,
        }
    ),
    JobStatus.FAILED: frozenset({JobStatus.QUEUED, JobStatus.SKIPPED}),
    JobStatus.UNKNOWN: frozenset({JobStatus.RUNNING, JobStatus.QUEUED, JobStatus.SUCCEEDED, JobStatus.SKIPPED}),
    JobStatus.SUCCEEDED: frozenset(),
    JobStatus.REJECTED: frozenset(),
    JobStatus.SKIPPED: frozenset(),
    JobStatus.SUPERSEDED: frozenset(),
}
EVIDENCE_LINES = 20  # an unknown job keeps its first and latest lines of evidence, this many in all
CALLS_KEPT = 20  # a job keeps its first and latest provider calls, this many in all
ERROR_CHARS = 1000  # the stored cause of a retry or a block
EVIDENCE_CHARS = 500  # one line of evidence


class StaleJob(Exception):
    """The job changed since it was read (another worker, an operator): read it again."""


class IllegalMove(RuntimeError):
    """A step JOB_TRANSITIONS does not allow: a bug, stopped before anything is written."""


@dataclass(frozen=True)
class Job:
    """One event of one service. Its steps return the next state; each is checked against JOB_TRANSITIONS,
    and a store commits `before → after` only onto the state it was decided from (`Guard`)."""

    service_id: str
    seq: int  # the receive sequence of its lane: the one order the lane's jobs run in
    event: ExternalEvent
    content_hash: str
    received_at_ms: int
    by_target: bool = False  # its service orders by target: its lane is its target's
    tenant: str | None = None  # the posting key's app_code ("": the stack's apps; None: stored before it was kept)
    status: JobStatus = JobStatus.QUEUED
    attempts: int = 0
    attempt_id: str = ""
    lock_until_ms: int = 0
    marked_at_ms: int = 0  # set before the first external write of the current attempt
    next_attempt_at_ms: int = 0
    last_error: str = ""
    outcome: Outcome = Outcome.NONE
    message_id: str = ""
    continued_from: str = ""  # the message its card continued (Outcome.CONTINUED)
    finished_at_ms: int = 0
    blocked_at_ms: int = 0
    generation: int = 0  # bumped by each operator resolution
    resolutions: tuple[Resolution, ...] = field(default_factory=tuple)
    first_marked_at_ms: int = 0  # the first mark of all its attempts: Feishu's uuid window runs from it
    settle_tries: int = 0  # Herald's tries at settling it while unknown
    next_settle_at_ms: int = 0  # unknown: when Herald tries to settle it next (0: an operator decides)
    evidence: tuple[str, ...] = ()  # what happened to it while unknown, one line each
    calls: tuple[ProviderCall, ...] = ()  # each call to Feishu its attempts made, oldest first (CALLS_KEPT of them)
    expires_at_s: int = 0  # when the table forgets it (epoch seconds, the table's TTL); 0: kept

    # ------------------------------------------------------------------ steps
    def with_calls(self, calls: Sequence[ProviderCall]) -> Job:
        """The provider calls of its attempt added to its record (not a step: they go with its next one)."""
        if not calls:
            return self
        kept = (*self.calls, *calls)
        if len(kept) > CALLS_KEPT:
            kept = (*kept[: CALLS_KEPT // 4], *kept[-(CALLS_KEPT - CALLS_KEPT // 4) :])
        return replace(self, calls=kept)

    def claimed(self, attempt_id: str, lease_until_ms: int) -> Job:
        """A worker's attempt: a queued job, or a running one whose worker died before its mark."""
        return self._to(
            JobStatus.RUNNING, attempt_id=attempt_id, lock_until_ms=lease_until_ms, attempts=self.attempts + 1
        )

    def marked(self, now: int) -> Job:
        """The side effect may start now (and, the first time, Feishu's uuid window starts)."""
        return self._to(JobStatus.RUNNING, marked_at_ms=now, first_marked_at_ms=self.first_marked_at_ms or now)

    def settling(self, attempt_id: str, lease_until_ms: int, now: int) -> Job:
        """This unknown job taken back to running, marked, for one more try at settling it."""
        return self._to(
            JobStatus.RUNNING,
            attempt_id=attempt_id,
            lock_until_ms=lease_until_ms,
            marked_at_ms=now,
            settle_tries=self.settle_tries + 1,
            next_settle_at_ms=0,
        )

    def retried(self, error: str, next_attempt_at_ms: int) -> Job:
        """Back in the queue after a failure before its side effect. The attempt id stays (a claim replaces
        it), so a retried write can recognise its own landing."""
        return self._to(
            JobStatus.QUEUED,
            next_attempt_at_ms=next_attempt_at_ms,
            last_error=error[:ERROR_CHARS],
            lock_until_ms=0,
            marked_at_ms=0,
        )

    def throttled(self, error: str) -> Job:
        """Back in the queue, refused by the provider's rate limit: not a failure, so the attempt is given back
        (it never counts toward giving up); the worker waits for its pace before the next."""
        return self._to(
            JobStatus.QUEUED,
            attempts=max(0, self.attempts - 1),
            last_error=error[:ERROR_CHARS],
            lock_until_ms=0,
            marked_at_ms=0,
        )

    def failed(self, reason: str, now: int, expires_at_ms: int | None) -> Job:
        """Blocked, certainly not delivered: an operator decides."""
        return self._blocked(JobStatus.FAILED, reason, now, expires_at_ms, next_settle_at_ms=0)

    def unknown(self, reason: str, now: int, expires_at_ms: int | None, settle_at_ms: int) -> Job:
        """Blocked, maybe delivered; Herald tries to settle it at `settle_at_ms` (0: an operator decides).
        `reason` joins its evidence: the first lines (how it began) and the latest are kept."""
        line = f"{now}: {reason[:EVIDENCE_CHARS]}"
        evidence = self.evidence
        if len(evidence) >= EVIDENCE_LINES:
            evidence = (*evidence[: EVIDENCE_LINES // 2], *evidence[-(EVIDENCE_LINES // 2 - 1) :])
        return self._blocked(
            JobStatus.UNKNOWN, reason, now, expires_at_ms, next_settle_at_ms=settle_at_ms, evidence=(*evidence, line)
        )

    def completed(
        self,
        status: JobStatus,
        outcome: Outcome,
        message_id: str,
        now: int,
        expires_at_ms: int,
        resolution: Resolution | None = None,
        continued_from: str = "",
    ) -> Job:
        """Finished by its attempt (delivered, or rejected); settled by Herald when `resolution` says so."""
        return self._to(
            status,
            outcome=outcome,
            message_id=message_id,
            continued_from=continued_from,
            finished_at_ms=now,
            expires_at_s=expires_at_ms // 1000,
            lock_until_ms=0,
            next_settle_at_ms=0,
            resolutions=self.resolutions if resolution is None else (*self.resolutions, resolution),
        )

    def superseded(self, newer: Job, now: int, expires_at_ms: int) -> Job:
        """Not sent: `newer`, a later revision of the same card, is waiting behind it and is sent instead
        (contract §3: an older revision never overwrites a newer one, so nothing is lost by skipping it)."""
        return self._to(
            JobStatus.SUPERSEDED,
            outcome=Outcome.SUPERSEDED,
            finished_at_ms=now,
            expires_at_s=expires_at_ms // 1000,
            resolutions=(
                *self.resolutions,
                resolution(
                    "superseded",
                    "herald",
                    now,
                    replaced_by=(newer.event.revision or 0, newer.job_id, newer.event.event_id),
                ),
            ),
        )

    @property
    def may_be_superseded(self) -> bool:
        """A queued card revision never marked. One once marked (it may have gone out, e.g. requeued by an
        operator) is never passed over: its own send, deduplicated by its uuid, keeps the card one message."""
        event = self.event
        unsent = self.status is JobStatus.QUEUED and not self.first_marked_at_ms
        return unsent and event.card_id is not None and event.revision is not None

    def newest_revision_in(self, waiting: Sequence[Job]) -> Job | None:
        """The newest revision of this job's card (same service, card id and receiver) among `waiting`, if
        it is newer than this one and this one may be superseded."""
        if not self.may_be_superseded:
            return None
        event = self.event
        same_card = [
            job
            for job in waiting
            if job.service_id == self.service_id
            and (job.event.card_id, job.event.target) == (event.card_id, event.target)
            and not job.status.completed
        ]
        newest = max(same_card, key=lambda job: job.event.revision or 0, default=None)
        return newest if newest is not None and (newest.event.revision or 0) > (event.revision or 0) else None

    def resolved(self, status: JobStatus, resolution: Resolution, now: int, expires_at_ms: int | None) -> Job:
        """An operator's resolution of a blocked job: recorded, a new generation, no attempt in flight.
        Requeued, it starts its attempts afresh; finished, it expires after the retention."""
        message_id = str(resolution.get("message_id") or self.message_id)
        return self._to(
            status,
            attempts=0 if status is JobStatus.QUEUED else self.attempts,
            generation=self.generation + 1,
            resolutions=(*self.resolutions, resolution),
            outcome=Outcome.resolved(resolution["action"]),
            message_id=message_id,
            attempt_id="",
            marked_at_ms=0,
            lock_until_ms=0,
            next_attempt_at_ms=0,
            settle_tries=0,
            next_settle_at_ms=0,
            finished_at_ms=now if expires_at_ms is not None else self.finished_at_ms,
            expires_at_s=0 if expires_at_ms is None else expires_at_ms // 1000,
        )

    def _blocked(self, status: JobStatus, reason: str, now: int, expires_at_ms: int | None, **changes: Any) -> Job:
        return self._to(
            status,
            last_error=reason[:ERROR_CHARS],
            blocked_at_ms=self.blocked_since(now),
            lock_until_ms=0,
            expires_at_s=self.expires_at_s if expires_at_ms is None else expires_at_ms // 1000,
            **changes,
        )

    def _to(self, status: JobStatus, **changes: Any) -> Job:
        if status not in JOB_TRANSITIONS[self.status]:
            raise IllegalMove(f"job {self.job_id} cannot go from {self.status} to {status}")
        return replace(self, status=status, **changes)

    # ------------------------------------------------------------------ reads
    def blocked_since(self, now: int) -> int:
        """When the job blocked: `now`, unless it is blocking again after Herald's tries at settling it."""
        return self.blocked_at_ms if self.settle_tries else now

    def same_step(self, other: Job) -> bool:
        """`other` is this state as far as any commit can tell: a write whose condition failed because its
        earlier try landed (a timeout the SDK retried) reads back as its own `after`."""
        keys = ("status", "attempt_id", "generation", "marked_at_ms")
        return all(getattr(self, key) == getattr(other, key) for key in keys)

    @property
    def awaiting_operator(self) -> bool:
        """Blocked, and Herald will not move it on by itself."""
        return self.status is JobStatus.FAILED or (self.status is JobStatus.UNKNOWN and not self.next_settle_at_ms)

    @property
    def lane(self) -> Lane:
        return Lane.of(self.service_id, self.event.target, self.by_target)

    @property
    def job_id(self) -> str:
        return format_job_id(self.lane.key, self.seq)

    @property
    def conflict(self) -> str:
        """Why a revision delivered before with other content blocks this job."""
        return f"revision {self.event.revision} of card {self.event.card_id} was already delivered with other content"

    @property
    def feishu_uuid(self) -> str:
        """Feishu sends at most one message per uuid an hour: every attempt of this job uses the same one."""
        return hashlib.sha256(f"herald:{self.job_id}".encode()).hexdigest()[:40]


@dataclass(frozen=True)
class Guard:
    """What the stored job must still be for a commit to land: the state its step was decided from. A running
    job is held by its attempt; any other by its status and generation (an operator's resolution bumps it);
    a settling try also by its time; a takeover only of an unmarked attempt whose lease ended."""

    status: JobStatus
    attempt_id: str | None = None
    generation: int | None = None
    next_settle_at_ms: int | None = None
    lease_ended_by_ms: int | None = None  # a takeover: the lease ended before this, and nothing was marked

    @classmethod
    def of(cls, before: Job, after: Job, at_ms: int) -> Guard:
        if before.status is JobStatus.RUNNING:
            taken_over = after.attempt_id != before.attempt_id
            return cls(before.status, attempt_id=before.attempt_id, lease_ended_by_ms=at_ms if taken_over else None)
        settling = after.settle_tries > before.settle_tries
        return cls(
            before.status,
            generation=before.generation,
            next_settle_at_ms=before.next_settle_at_ms if settling else None,
        )

    def holds(self, job: Job) -> bool:
        expected = {
            "status": self.status,
            "attempt_id": self.attempt_id,
            "generation": self.generation,
            "next_settle_at_ms": self.next_settle_at_ms,
        }
        if any(value is not None and getattr(job, key) != value for key, value in expected.items()):
            return False
        return self.lease_ended_by_ms is None or (job.lock_until_ms < self.lease_ended_by_ms and not job.marked_at_ms)
