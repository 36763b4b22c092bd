"""External events, operations: what an operator does with a blocked job; each resolution is recorded
with who and when, and moves the job only along JOB_TRANSITIONS."""

from __future__ import annotations

from typing import Any, Protocol

from herald.clock import Clock, now_ms
from herald.errors import Conflict, NotFound
from herald.events.cards import CardMessage, CardWrite, card_write
from herald.events.jobs import JOB_TRANSITIONS, Job, JobStatus, StaleJob
from herald.events.models import LaneHead, Target, parse_job_id
from herald.events.policy import DispatchPolicy
from herald.events.records import resolution


class OperationsStore(Protocol):
    """What an operator's resolutions read, and their one write: the job's step (with its card mapping)."""

    def head(self, lane: str) -> LaneHead: ...

    def job(self, lane: str, seq: int) -> Job | None: ...

    def card(self, service_id: str, card_id: str, target: Target) -> CardMessage | None: ...

    def blocked(self) -> list[Job]: ...

    def commit(
        self, before: Job, after: Job, at_ms: int, *, card: CardWrite | None = None, advance: bool = False
    ) -> Job: ...


class EventOperations:
    """What an operator does with a blocked job; each resolution is recorded with who and when."""

    def __init__(self, store: OperationsStore, policy: DispatchPolicy, clock: Clock = now_ms) -> None:
        self._store = store
        self._policy = policy
        self._clock = clock

    def blocked(self) -> list[tuple[Job, LaneHead]]:
        return [(job, self._store.head(job.lane.key)) for job in self._store.blocked()]

    def blocked_of(
        self, service_id: str, lane: str | None = None, status: JobStatus | None = None, since_ms: int = 0
    ) -> list[Job]:
        """A bulk resolution's plan: the service's blocked jobs (one a lane, its head), of `lane` and `status`
        only when given, blocked at `since_ms` or later; lane by lane, in lane order."""
        chosen = [
            job
            for job in self._store.blocked()
            if job.service_id == service_id
            and lane in (None, job.lane.key)
            and status in (None, job.status)
            and job.blocked_at_ms >= since_ms
        ]
        return sorted(chosen, key=lambda job: (job.lane.key, job.seq))

    def get(self, job_id: str) -> Job:
        try:
            lane, seq = parse_job_id(job_id)
        except ValueError as exc:
            raise NotFound(str(exc)) from exc
        job = self._store.job(lane, seq)
        if job is None:
            raise NotFound(f"no job {job_id}")
        return job

    def requeue(self, job_id: str, by: str, note: str = "") -> Job:
        """Run the job again (after checking Feishu that it did not arrive, or fixing the cause)."""
        job = self._blocked_job(job_id, JobStatus.QUEUED)
        return self._resolve(job, JobStatus.QUEUED, "requeue", by, note, None)

    def sent(self, job_id: str, message_id: str, by: str, note: str = "") -> Job:
        """The operator found the message in Feishu: record it as delivered, with its message id."""
        job = self._blocked_job(job_id, JobStatus.SUCCEEDED)
        if not message_id.strip():
            raise Conflict("a message id is needed to record a job as sent", reason="message_id_required")
        event = job.event
        card = None
        if event.card_id is not None:
            card = card_write(job, message_id, self._store.card(job.service_id, event.card_id, event.target))
        return self._resolve(job, JobStatus.SUCCEEDED, "sent", by, note, card, message_id)

    def skip(self, job_id: str, by: str, note: str = "") -> Job:
        """Give up on the job: it is not delivered and its lane goes on."""
        job = self._blocked_job(job_id, JobStatus.SKIPPED)
        return self._resolve(job, JobStatus.SKIPPED, "skip", by, note, None)

    def _blocked_job(self, job_id: str, to: JobStatus) -> Job:
        """The job, if it is blocked in a status an operator may move to `to` (JOB_TRANSITIONS)."""
        job = self.get(job_id)
        if not job.status.blocking or to not in JOB_TRANSITIONS[job.status]:
            sources = [str(status) for status in JobStatus if status.blocking and to in JOB_TRANSITIONS[status]]
            raise Conflict(f"job {job_id} is {job.status}, not {' or '.join(sources)}", reason="job_not_blocked")
        return job

    def _resolve(
        self,
        job: Job,
        status: JobStatus,
        action: str,
        by: str,
        note: str,
        card: CardWrite | None,
        message_id: str = "",
    ) -> Job:
        now = self._clock()
        record = resolution(action, by, now, was=job.status, note=note, message_id=message_id)
        expires = now + self._policy.retention_ms if status.completed else None
        try:
            return self._store.commit(job, job.resolved(status, record, now, expires), now, card=card)
        except StaleJob as exc:
            raise Conflict(f"job {job.job_id} changed meanwhile; look again", reason="job_changed") from exc


def describe(job: Job) -> dict[str, Any]:
    """An operator's view of a job."""
    return {
        "job_id": job.job_id,
        "service_id": job.service_id,
        "lane": job.lane.key,  # the service, or its target when the service orders by target
        "seq": job.seq,
        "event_id": job.event.event_id,
        "event_type": job.event.event_type,
        "target": job.event.target.key,
        "card_id": job.event.card_id,
        "revision": job.event.revision,
        "status": str(job.status),
        "attempts": job.attempts,
        "why": job.last_error,
        "outcome": job.outcome,
        "message_id": job.message_id,
        "continued_from": job.continued_from,  # the message whose card this one continues (Feishu stopped editing it)
        "received_at_ms": job.received_at_ms,
        "blocked_at_ms": job.blocked_at_ms,
        "marked_at_ms": job.marked_at_ms,
        "first_marked_at_ms": job.first_marked_at_ms,
        # Herald settles an UNKNOWN job itself while it can; `awaiting_operator` once it cannot, and why.
        "awaiting_operator": job.awaiting_operator,
        "settle_tries": job.settle_tries,
        "next_settle_at_ms": job.next_settle_at_ms,
        "evidence": list(job.evidence),
        "calls": [dict(call) for call in job.calls],  # each call to Feishu, oldest first: the job's timeline
        "resolutions": list(job.resolutions),
        "tenant": job.tenant,  # the tenant it is delivered for, recorded when it was accepted (null: before that)
    }
