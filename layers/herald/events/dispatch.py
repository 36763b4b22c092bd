"""External events, delivery: strict per-service order, Feishu cards by revision (CONTRACTS §3).

Order lives in DynamoDB, not in the queue. A queue message only says "this service has work": the
dispatcher always takes the service's lowest unfinished job (the head), so a duplicated, late or redriven
message can neither run a later job early nor run a finished one again.

A side effect is marked on the job before the first external write. Before the mark a failure is retried
with backoff (bounded, then the job fails); after it, only an answer from the provider that it did not act
sends the job back; anything else (no answer, a crash) leaves the job `unknown`, and the service waits.

An unknown job is settled by Herald wherever Feishu's own rules make a second try provably harmless (the
evidence of each try is kept on the job; docs/side-effects.md cites the rules):

* a card **send** carries the job's `uuid`, and Feishu sends at most one message per uuid within an hour: a
  resend inside that window (counted from the job's first mark, less a margin for clocks) cannot deliver a
  second card, and its answer names the message, so the card mapping gets Feishu's message id;
* a card **update** writes the whole card of the job's revision to the message; the service is blocked
  behind the job, so no later revision can have reached that message: writing it again is harmless.

A bounded number of tries with backoff; then, or past the window, or when Feishu refuses in a way that proves
nothing about the first try, the job waits for an operator (`awaiting_operator`).
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
# Feishu im/v1/messages create: "requests holding the same uuid succeed in sending at most one message
# within 1 hour" (持有相同uuid的请求1小时内至多成功发送一条消息).
FEISHU_UUID_WINDOW_MS = 3_600_000
UUID_WINDOW_MARGIN_MS = 300_000  # Herald's clock and Feishu's may disagree by this much


class DispatchStore(Protocol):
    """What the dispatcher reads and writes: the head, one job at a time, and card mappings."""

    def head(self, service_id: str) -> ServiceHead: ...

    def job(self, service_id: str, seq: int) -> Job | None: ...

    def advance(self, service_id: str, from_seq: int, to_seq: int) -> None:
        """Move the service's cursor from `from_seq` to `to_seq` (no-op if someone already did)."""
        ...

    def claim(self, job: Job, attempt_id: str, lease_until_ms: int, now: int) -> Job: ...

    def mark(self, job: Job, now: int) -> Job:
        """Record that the side effect may start now (and, the first time, when the first one may have)."""
        ...

    def retry(self, job: Job, error: str, next_attempt_at_ms: int, now: int) -> None: ...

    def block(
        self, job: Job, status: JobStatus, reason: str, now: int, expires_at_ms: int | None, heal_at_ms: int = 0
    ) -> None:
        """Block the running job; an unknown one keeps `reason` in its evidence, and `heal_at_ms` (0: none)."""
        ...

    def settle(self, job: Job, attempt_id: str, lease_until_ms: int, now: int) -> Job:
        """Take the unknown job back to running, marked, for one try at settling it (StaleJob if it moved)."""
        ...

    def complete(
        self,
        job: Job,
        status: JobStatus,
        outcome: str,
        message_id: str,
        now: int,
        expires_at_ms: int,
        card: CardWrite | None,
        resolution: dict[str, Any] | None = None,
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
    heal_attempts: int = 6  # tries at settling an unknown job, before an operator decides
    send_dedup_window_ms: int = FEISHU_UUID_WINDOW_MS - UUID_WINDOW_MARGIN_MS

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
    A retry needs none: the message that ran the attempt comes back for it; nor does a worker taking an
    unknown job back to running to settle it (that worker carries on, or the janitor finds its lease ended)."""
    if new is not None and old is None:
        return [Nudge(new.service_id, new.seq, "new")]
    unblocked = new is None or not (new.status.blocking or new.status is JobStatus.RUNNING)
    if old is not None and old.status.blocking and unblocked:
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
            if job.awaiting_operator:
                return DrainResult.BLOCKED
            now = self._clock()
            if job.status is JobStatus.UNKNOWN and job.next_heal_at_ms > now:
                raise NotYet(f"job {job.job_id} is being settled; next try later", job.next_heal_at_ms - now)
            if job.status is JobStatus.RUNNING:
                if job.lock_until_ms > now:
                    raise NotYet(f"job {job.job_id} is held by another worker", job.lock_until_ms - now)
                if job.marked_at_ms:
                    self._unknown(
                        job, "interrupted after its side effect was marked (its worker died or ran out of time)"
                    )
                    continue  # read it again: to be settled now, or left to an operator
                # Interrupted before the mark: nothing reached the provider, so it simply runs again.
            elif job.status is JobStatus.QUEUED and job.next_attempt_at_ms > now:
                raise NotYet(f"job {job.job_id} waits for its retry", job.next_attempt_at_ms - now)
            left = remaining_ms()
            if left < self._policy.reserve_ms:
                if done == started_at:
                    raise budgets.OutOfTime(f"{left} ms left, {self._policy.reserve_ms} ms needed to claim a job")
                self._nudge(Nudge(service_id, done, "continue"))
                return DrainResult.PAUSED
            _require_move(job, JobStatus.RUNNING)
            attempt, lease = secrets.token_hex(8), now + self._policy.lease_ms
            settling = job.status is JobStatus.UNKNOWN
            current, decision = self._decision(job) if settling else (None, CardDecision.SEND)
            try:  # the attempt's first write: lost to another worker (or an operator), the job is read again
                claimed = (
                    self._store.settle(job, attempt, lease, now)
                    if settling
                    else self._store.claim(job, attempt, lease, now)
                )
            except StaleJob:
                continue
            finished = self._settle(claimed, allowed, current, decision) if settling else self._run(claimed, allowed)
            if not finished:
                return DrainResult.BLOCKED
            done = seq

    # ------------------------------------------------------------------ one attempt
    def _run(self, job: Job, allowed: frozenset[str]) -> bool:
        """One attempt of the head job: True when it finished (the head moved past it), False when it blocks."""
        event = job.event
        if event.target.key not in allowed:
            return self._complete(job, JobStatus.REJECTED, "target_not_allowed", "", None)
        current, decision = self._decision(job)
        if decision in (CardDecision.STALE, CardDecision.SAME):
            message_id = current.message_id if current else ""
            return self._complete(job, JobStatus.SUCCEEDED, str(decision), message_id, None)
        if decision is CardDecision.CONFLICT:
            return self._block(job, JobStatus.FAILED, _conflict(job))
        try:
            self._messenger.tenant_access_token()  # before the mark: a token failure touches nothing
        except DeliveryError as exc:
            return self._not_done(job, exc)
        job = self._store.mark(job, self._clock())
        try:
            message_id, outcome = self._write_card(job, decision, current)
        except DeliveryError as exc:
            if exc.maybe_delivered:
                return self._still_unknown(job, f"{_verb(decision)} not answered as done: {exc}", decision=decision)
            return self._not_done(job, exc)
        except Exception as exc:
            self._unknown(job, f"interrupted after its side effect was marked: {exc!r}", decision=decision)
            raise
        return self._complete(job, JobStatus.SUCCEEDED, outcome, message_id, card_write(job, message_id, current))

    def _write_card(self, job: Job, decision: CardDecision, current: CardMessage | None) -> tuple[str, str]:
        """The side effect itself: the card's update (its message exists) or a send with the job's uuid.
        Returns the message id and the outcome."""
        event = job.event
        if decision is CardDecision.UPDATE and current is not None:
            self._messenger.update_card(current.message_id, card_of(event))
            return current.message_id, "updated"
        target = event.target
        return self._messenger.send_card(
            target.receive_id_type, target.receive_id, card_of(event), job.feishu_uuid
        ), "sent"

    def _decision(self, job: Job) -> tuple[CardMessage | None, CardDecision]:
        """What the job's card calls for, given where its card id was delivered (a one-off event: a send)."""
        event = job.event
        if event.card_id is None or event.revision is None:
            return None, CardDecision.SEND
        current = self._store.card(job.service_id, event.card_id, event.target)
        return current, decide_card(current, event.revision, job.content_hash)

    # ------------------------------------------------------------------ settling an unknown job
    def _settle(self, job: Job, allowed: frozenset[str], current: CardMessage | None, decision: CardDecision) -> bool:
        """One try at settling an unknown job, taken back to running (the service is blocked behind it, so
        its card's mapping is as its first attempt left it): True when it is settled, else it stays unknown
        (see `_still_unknown`)."""
        event = job.event
        now = self._clock()
        if event.target.key not in allowed:
            return self._still_unknown(
                job, "its target is no longer allowed for the service: not tried again", final=True
            )
        if decision in (CardDecision.STALE, CardDecision.SAME):
            message_id = current.message_id if current else ""
            return self._settled(job, str(decision), message_id, None, "the card already shows this revision")
        if decision is CardDecision.CONFLICT:
            return self._still_unknown(job, _conflict(job), final=True)
        if decision is CardDecision.SEND and (closed := self._window_closed(job, now)):
            return self._still_unknown(job, f"not sent again: {closed}", final=True)
        try:
            self._messenger.tenant_access_token()
        except DeliveryError as exc:
            return self._still_unknown(job, f"token request failed, nothing tried: {exc}")
        try:
            message_id, outcome = self._write_card(job, decision, current)
        except DeliveryError as exc:
            refused = not exc.retryable and not exc.maybe_delivered  # a clear "no" that says nothing of the first
            return self._still_unknown(job, f"{_verb(decision)} tried again: {exc}", final=refused, decision=decision)
        except Exception as exc:
            self._unknown(job, f"interrupted while being settled: {exc!r}", decision=decision)
            raise
        if outcome == "updated":
            how = f"revision {event.revision} written to message {message_id} again; Feishu answered done"
        else:
            how = f"sent again with uuid {job.feishu_uuid} inside Feishu's window; Feishu answered {message_id}"
        return self._settled(job, outcome, message_id, card_write(job, message_id, current), how)

    def _window_closed(self, job: Job, now: int) -> str:
        """Why a resend could no longer be deduplicated by Feishu before it ends ("" while it can)."""
        if not job.first_marked_at_ms:
            return "no record of when it was first sent: a resend could deliver a second card"
        closes = job.first_marked_at_ms + self._policy.send_dedup_window_ms
        if now + self._policy.reserve_ms <= closes:
            return ""
        return (
            f"first sent at {job.first_marked_at_ms} ms; Feishu's one-hour uuid window (less "
            f"{UUID_WINDOW_MARGIN_MS // 60_000} min for clocks) closes at {closes} ms: a resend could deliver a "
            "second card"
        )

    def _unknown(
        self,
        job: Job,
        reason: str,
        final: bool = False,
        at_once: bool = True,
        decision: CardDecision | None = None,
    ) -> int:
        """Block the running job as unknown, with `reason` in its evidence. Returns when Herald will try to
        settle it (0: an operator decides): at once after a crash or a timeout, after a backoff (grown by
        its tries) after an answer that settled nothing; never when a resend would fall outside Feishu's
        uuid window (`decision`, the side effect it was, is read from the card mapping when not given)."""
        now = self._clock()
        heal_at, why_not = 0, "an operator decides"
        if not final and job.heals >= self._policy.heal_attempts:
            why_not = f"not settled after {job.heals} tries: an operator decides"
        elif not final:
            heal_at = max(1, now if at_once else now + self._policy.backoff_ms(job.heals + 1))
            if (decision or self._decision(job)[1]) is CardDecision.SEND and (
                closed := self._window_closed(job, heal_at)
            ):
                heal_at, why_not = 0, f"{closed}; an operator decides"
        evidence = reason if heal_at else f"{reason}; {why_not}"
        _require_move(job, JobStatus.UNKNOWN)
        self._store.block(job, JobStatus.UNKNOWN, evidence, now, self._policy.blocked_expiry(now), heal_at)
        self._on_outcome(job, str(JobStatus.UNKNOWN))
        return heal_at

    def _still_unknown(self, job: Job, reason: str, final: bool = False, decision: CardDecision | None = None) -> bool:
        """`_unknown`, from inside a drain: a later try comes back with this message (NotYet), else it blocks."""
        heal_at = self._unknown(job, reason, final, at_once=False, decision=decision)
        if heal_at:
            raise NotYet(f"job {job.job_id} is unknown; Herald tries to settle it again", heal_at - self._clock())
        return False

    def _settled(self, job: Job, outcome: str, message_id: str, card: CardWrite | None, evidence: str) -> bool:
        """Settled by Herald: recorded on the job like an operator's resolution, by `herald`, with the evidence."""
        resolution = {
            "action": "settled",
            "by": "herald",
            "at_ms": self._clock(),
            "from": str(JobStatus.UNKNOWN),
            "note": evidence,
            "message_id": message_id,
        }
        settled = self._complete(job, JobStatus.SUCCEEDED, outcome, message_id, card, resolution)
        if settled:
            self._on_outcome(job, "healed")
        return settled

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

    def _complete(
        self,
        job: Job,
        status: JobStatus,
        outcome: str,
        message_id: str,
        card: CardWrite | None,
        resolution: dict[str, Any] | None = None,
    ) -> bool:
        _require_move(job, status)
        now = self._clock()
        expires = now + self._policy.retention_ms
        try:
            self._store.complete(job, status, outcome, message_id, now, expires, card, resolution)
        except StaleJob:
            if card is None:
                raise
            # The card mapping moved under us (only a writer outside this queue can do that): the message
            # went out, but what the card now shows is not known here.
            self._unknown(job, f"delivered as {message_id}; the card mapping changed meanwhile", final=True)
            return False
        self._on_outcome(job, outcome)
        return True


def _require_move(job: Job, to: JobStatus) -> None:
    """The dispatcher only makes moves of JOB_TRANSITIONS: anything else is a bug, stopped before the write."""
    if to not in JOB_TRANSITIONS[job.status]:
        raise RuntimeError(f"job {job.job_id} cannot go from {job.status} to {to}")


def _conflict(job: Job) -> str:
    event = job.event
    return f"revision {event.revision} of card {event.card_id} was already delivered with other content"


def _verb(decision: CardDecision) -> str:
    return "the card's update" if decision is CardDecision.UPDATE else "the send"


class OverdueJobs(Protocol):
    """Where the events janitor looks: marked jobs whose lease ended, and blocked jobs."""

    def in_flight_until(self, before_ms: int) -> list[Job]: ...

    def blocked(self) -> list[Job]: ...


class EventsJanitor:
    """Every minute: a nudge for each service whose side effect was left behind, so a worker settles it
    even when no dispatch message is coming back for it (its worker died and the message was spent, or
    dead-lettered). `grace_ms` leaves the queue's own redelivery time to do it first."""

    def __init__(
        self, store: OverdueJobs, nudge: Callable[[Nudge], None], grace_ms: int, clock: Clock = now_ms
    ) -> None:
        self._store = store
        self._nudge = nudge
        self._grace_ms = grace_ms
        self._clock = clock

    def nudge_overdue(self) -> list[Nudge]:
        before = self._clock() - self._grace_ms
        left = [(job, job.lock_until_ms) for job in self._store.in_flight_until(before)]
        left += [
            (job, job.next_heal_at_ms)
            for job in self._store.blocked()
            if job.status is JobStatus.UNKNOWN and 0 < job.next_heal_at_ms < before
        ]
        nudges = [Nudge(job.service_id, job.seq, f"overdue-{job.heals}-{due}") for job, due in left]
        for nudge in nudges:
            self._nudge(nudge)
        return nudges
