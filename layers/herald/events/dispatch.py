"""External events, delivery: strict per-service order, Feishu cards by revision (CONTRACTS §3).

Order lives in DynamoDB, not in the queue. A queue message only says "this service has work": the
dispatcher always takes the service's lowest unfinished job (the head), so a duplicated, late or redriven
message can neither run a later job early nor run a finished one again.

A side effect is marked on the job before the first external write. Before the mark a failure is retried
with backoff (bounded, then the job fails); after it, only an answer from the provider that it did not act
sends the job back; anything else (no answer, a crash) leaves the job `unknown` for an operator.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from herald import budgets
from herald.clock import Clock, now_ms
from herald.errors import DeliveryError
from herald.events.models import (
    JOB_TRANSITIONS,
    Card,
    CardDecision,
    CardMessage,
    CardWrite,
    ExternalEvent,
    Job,
    JobStatus,
    ServiceHead,
    StaleJob,
    Target,
    decide_card,
)

MAX_BACKOFF_MS = 300_000


class DispatchStore(Protocol):
    """What the dispatcher reads and writes: the head, one job at a time, and card mappings."""

    def head(self, service_id: str) -> ServiceHead: ...

    def job(self, service_id: str, seq: int) -> Job | None: ...

    def advance(self, service_id: str, from_seq: int, to_seq: int) -> None:
        """Move the service's cursor from `from_seq` to `to_seq` (no-op if someone already did)."""
        ...

    def claim(self, job: Job, attempt_id: str, lease_until_ms: int, now: int) -> Job: ...

    def mark(self, job: Job, now: int) -> Job: ...

    def retry(self, job: Job, error: str, next_attempt_at_ms: int, now: int) -> None: ...

    def block(self, job: Job, status: JobStatus, reason: str, now: int, expires_at_ms: int | None) -> None: ...

    def complete(
        self,
        job: Job,
        status: JobStatus,
        outcome: str,
        message_id: str,
        now: int,
        expires_at_ms: int,
        card: CardWrite | None,
    ) -> None: ...

    def card(self, service_id: str, card_id: str, target: Target) -> CardMessage | None: ...


class TargetPolicy(Protocol):
    def allowed_targets(self, service_id: str) -> frozenset[str]:
        """Where the service's events may go now (`receive_id_type:receive_id`)."""
        ...


class Messenger(Protocol):
    def tenant_access_token(self) -> str: ...

    def send_card(self, receive_id_type: str, receive_id: str, card: Card, uuid: str) -> str: ...

    def update_card(self, message_id: str, card: Card) -> None: ...


@dataclass(frozen=True)
class DispatchPolicy:
    lease_ms: int = budgets.EVENTS_LEASE_MS
    max_attempts: int = budgets.EVENTS_MAX_ATTEMPTS
    retry_base_ms: int = 2_000
    reserve_ms: int = budgets.EVENTS_RESERVE_MS
    retention_ms: int = 7 * 86_400_000
    unknown_ttl_ms: int = 0  # 0: blocked jobs stay until an operator handles them

    def backoff_ms(self, attempts: int) -> int:
        return int(min(self.retry_base_ms * 2 ** max(0, attempts - 1), MAX_BACKOFF_MS))

    def blocked_expiry(self, now: int) -> int | None:
        return now + self.unknown_ttl_ms if self.unknown_ttl_ms > 0 else None


class NotYet(Exception):
    """The service has work that cannot run now; ask again after `delay_ms`."""

    def __init__(self, reason: str, delay_ms: int) -> None:
        super().__init__(reason)
        self.delay_ms = max(0, delay_ms)


class DrainResult(StrEnum):
    CAUGHT_UP = "caught_up"
    BLOCKED = "blocked"
    PAUSED = "paused"  # out of time after some jobs ran: a continuation nudge carries on


def card_of(event: ExternalEvent) -> Card:
    return Card(
        title=event.title,
        status=event.status,
        summary=event.summary,
        event_type=event.event_type,
        markdown=event.markdown,
    )


@dataclass(frozen=True)
class Nudge:
    """A dispatch message: `service_id` has work (a new job, or a blocked one resolved or removed)."""

    service_id: str
    seq: int
    why: str

    @property
    def dedup_id(self) -> str:
        return f"{self.service_id}:{self.seq}:{self.why}"

    def to_message(self) -> dict[str, Any]:
        return {"service_id": self.service_id, "seq": self.seq, "why": self.why}


def nudges_for(old: Job | None, new: Job | None) -> list[Nudge]:
    """The dispatch messages one stored change of a job calls for (the table's stream is the outbox).
    A retry needs none: the message that ran the attempt comes back for it."""
    if new is not None and old is None:
        return [Nudge(new.service_id, new.seq, "new")]
    if old is not None and old.status.blocking and (new is None or not new.status.blocking):
        why = "removed" if new is None else f"resolved-{new.generation}"
        return [Nudge(old.service_id, old.seq, why)]
    return []


def card_write(job: Job, message_id: str, current: CardMessage | None) -> CardWrite | None:
    """The card mapping a delivered job leaves: none for a one-off event, or when `current` already shows a
    newer revision (the mapping stays)."""
    event = job.event
    if event.card_id is None or event.revision is None:
        return None
    if current is not None and current.revision > event.revision:
        return None
    return CardWrite(
        service_id=job.service_id,
        card_id=event.card_id,
        target=event.target,
        card=CardMessage(message_id=message_id, revision=event.revision, content_hash=job.content_hash),
        expected_revision=current.revision if current else None,
    )


class EventDispatcher:
    """Runs one service's jobs, head first, until it is caught up, blocked, or must wait.

    A drain that runs out of time after finishing jobs publishes a continuation nudge (`nudge`) and ends
    well, rather than sending its message back: a long backlog would otherwise spend the message's receive
    count (and dead-letter it) while the service was making progress."""

    def __init__(
        self,
        store: DispatchStore,
        targets: TargetPolicy,
        messenger: Messenger,
        policy: DispatchPolicy,
        nudge: Callable[[Nudge], None],
        clock: Clock = now_ms,
        on_outcome: Callable[[Job, str], None] | None = None,
    ) -> None:
        self._store = store
        self._targets = targets
        self._messenger = messenger
        self._policy = policy
        self._nudge = nudge
        self._clock = clock
        self._on_outcome = on_outcome or (lambda job, outcome: None)

    def drain(self, service_id: str, remaining_ms: Callable[[], int]) -> DrainResult:
        allowed = self._targets.allowed_targets(service_id)  # read once a drain: a narrowing applies from the next
        done = started_at = self._store.head(service_id).done_seq
        while True:
            seq = done + 1
            job = self._store.job(service_id, seq)
            if job is None:
                head = self._store.head(service_id)
                if head.next_seq < seq:
                    return DrainResult.CAUGHT_UP
                # A job commits with the counter, so it may have arrived between the two reads: read it again.
                job = self._store.job(service_id, seq)
            if job is None:
                if head.done_seq < seq:  # a blocked job removed by its configured TTL: the service goes on
                    self._store.advance(service_id, done, seq)
                done = max(seq, head.done_seq)
                continue
            if job.status.completed:  # finished by an operator's resolution: move the cursor past it
                self._store.advance(service_id, done, seq)
                done = seq
                continue
            if job.status.blocking:
                return DrainResult.BLOCKED
            now = self._clock()
            if job.status is JobStatus.RUNNING:
                if job.lock_until_ms > now:
                    raise NotYet(f"job {job.job_id} is held by another worker", job.lock_until_ms - now)
                if job.marked_at_ms:
                    self._block(job, JobStatus.UNKNOWN, "interrupted after its side effect was marked")
                    return DrainResult.BLOCKED
                # Interrupted before the mark: nothing reached the provider, so it simply runs again.
            elif job.next_attempt_at_ms > now:
                raise NotYet(f"job {job.job_id} waits for its retry", job.next_attempt_at_ms - now)
            left = remaining_ms()
            if left < self._policy.reserve_ms:
                if done == started_at:
                    raise budgets.OutOfTime(f"{left} ms left, {self._policy.reserve_ms} ms needed to claim a job")
                self._nudge(Nudge(service_id, done, "continue"))
                return DrainResult.PAUSED
            _require_move(job, JobStatus.RUNNING)
            try:
                claimed = self._store.claim(job, secrets.token_hex(8), now + self._policy.lease_ms, now)
            except StaleJob:
                continue
            if not self._run(claimed, allowed):
                return DrainResult.BLOCKED
            done = seq

    # ------------------------------------------------------------------ one attempt
    def _run(self, job: Job, allowed: frozenset[str]) -> bool:
        """One attempt of the head job: True when it finished (the head moved past it), False when it blocks."""
        event = job.event
        if event.target.key not in allowed:
            return self._complete(job, JobStatus.REJECTED, "target_not_allowed", "", None)
        current: CardMessage | None = None
        decision = CardDecision.SEND
        if event.card_id is not None and event.revision is not None:
            current = self._store.card(job.service_id, event.card_id, event.target)
            decision = decide_card(current, event.revision, job.content_hash)
            if decision in (CardDecision.STALE, CardDecision.SAME):
                message_id = current.message_id if current else ""
                return self._complete(job, JobStatus.SUCCEEDED, str(decision), message_id, None)
            if decision is CardDecision.CONFLICT:
                return self._block(
                    job,
                    JobStatus.FAILED,
                    f"revision {event.revision} of card {event.card_id} was already delivered with other content",
                )
        try:
            self._messenger.tenant_access_token()  # before the mark: a token failure touches nothing
        except DeliveryError as exc:
            return self._not_done(job, exc)
        job = self._store.mark(job, self._clock())
        try:
            if decision is CardDecision.UPDATE and current is not None:
                self._messenger.update_card(current.message_id, card_of(event))
                message_id, outcome = current.message_id, "updated"
            else:
                message_id = self._messenger.send_card(
                    event.target.receive_id_type, event.target.receive_id, card_of(event), job.feishu_uuid
                )
                outcome = "sent"
        except DeliveryError as exc:
            if exc.maybe_delivered:
                return self._block(job, JobStatus.UNKNOWN, str(exc))
            return self._not_done(job, exc)
        except Exception as exc:
            self._block(job, JobStatus.UNKNOWN, f"interrupted after its side effect was marked: {exc!r}")
            raise
        return self._complete(job, JobStatus.SUCCEEDED, outcome, message_id, card_write(job, message_id, current))

    def _not_done(self, job: Job, exc: DeliveryError) -> bool:
        """The provider did not act: retry with backoff while it may succeed and attempts remain."""
        if not exc.retryable:
            return self._block(job, JobStatus.FAILED, str(exc))
        if job.attempts >= self._policy.max_attempts:
            return self._block(job, JobStatus.FAILED, f"gave up after {job.attempts} attempts: {exc}")
        now, backoff = self._clock(), self._policy.backoff_ms(job.attempts)
        _require_move(job, JobStatus.QUEUED)
        self._store.retry(job, str(exc), now + backoff, now)
        self._on_outcome(job, "retry")
        raise NotYet(f"job {job.job_id} failed before delivery: {exc}", backoff)

    def _block(self, job: Job, status: JobStatus, reason: str) -> bool:
        _require_move(job, status)
        now = self._clock()
        self._store.block(job, status, reason, now, self._policy.blocked_expiry(now))
        self._on_outcome(job, str(status))
        return False

    def _complete(self, job: Job, status: JobStatus, outcome: str, message_id: str, card: CardWrite | None) -> bool:
        _require_move(job, status)
        now = self._clock()
        try:
            self._store.complete(job, status, outcome, message_id, now, now + self._policy.retention_ms, card)
        except StaleJob:
            if card is None:
                raise
            # The card mapping moved under us (only a writer outside this queue can do that): the message
            # went out, but what the card now shows is not known here.
            return self._block(job, JobStatus.UNKNOWN, f"delivered as {message_id}; the card mapping changed meanwhile")
        self._on_outcome(job, outcome)
        return True


def _require_move(job: Job, to: JobStatus) -> None:
    """The dispatcher only makes moves of JOB_TRANSITIONS: anything else is a bug, stopped before the write."""
    if to not in JOB_TRANSITIONS[job.status]:
        raise RuntimeError(f"job {job.job_id} cannot go from {job.status} to {to}")
