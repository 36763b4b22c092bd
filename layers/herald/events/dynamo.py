"""DynamoDB adapters for external events: one table (`pk`, `sk`), one store per port (intake, dispatch, operations)
over the shared `EventsTable`; the table's stream is the dispatch outbox.

* `pk = SVC#<service>, sk = HEAD` — `next_seq` (the last receive sequence given; `last_received_at_ms` its
  time) and `done_seq` (every job up to it is finished): the service's counter and cursor;
* `pk = SVC#<service>, sk = JOB#<seq>` — a job; while `failed`/`unknown` it carries `attention` (its status)
  and `attention_sk` (when it blocked), the keys of the sparse GSI `by_attention` operators list blocked jobs
  from; while marked and running, `attention = running` and `attention_sk` its lease's end, so the events
  janitor finds a side effect whose worker died;
* `pk = EVT#<service>#<event_id>, sk = EVENT` — the dedup record of an event id (its sequence and hash);
* `pk = CARD#<service>#<card_id>#<type>:<receive_id>, sk = CARD` — where a card was delivered, and its revision.
Finished jobs and their dedup records expire by TTL (`expires_at`, epoch seconds) after the retention.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pynamodb.attributes import ListAttribute, MapAttribute, TTLAttribute, UnicodeAttribute
from pynamodb.exceptions import UpdateError
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex
from pynamodb.models import Model

from herald.clock import Clock
from herald.events.models import (
    CardMessage,
    CardWrite,
    DuplicateEvent,
    ExternalEvent,
    Job,
    JobStatus,
    ServiceHead,
    StaleJob,
    StoredEvent,
    Target,
)
from herald.retry import with_backoff
from herald.tables import Cancelled, Database, IntAttribute, Transaction, condition_failed, ttl

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from herald.dynamo import Image

HEAD = "HEAD"
EVENT = "EVENT"
CARD = "CARD"
JOB_ITEM = "job"
_APPEND_ATTEMPTS = 50


class ByAttention(GlobalSecondaryIndex["JobRow"]):
    class Meta:
        index_name = "by_attention"
        projection = AllProjection()

    attention = UnicodeAttribute(hash_key=True)
    attention_sk = UnicodeAttribute(range_key=True)


class JobRow(Model):
    """ExternalEventsTable, a job: one event of one service, at its receive sequence; in `by_attention`
    while failed or unknown."""

    pk = UnicodeAttribute(hash_key=True)  # SVC#<service>
    sk = UnicodeAttribute(range_key=True)  # JOB#<seq>
    item_type = UnicodeAttribute(default=JOB_ITEM)
    service_id = UnicodeAttribute()
    seq = IntAttribute()
    event_id = UnicodeAttribute()
    content: MapAttribute[str, Any] = MapAttribute()
    content_hash = UnicodeAttribute()
    received_at_ms = IntAttribute()
    status = UnicodeAttribute()
    attempts = IntAttribute(null=True)
    attempt_id = UnicodeAttribute(null=True)
    lock_until_ms = IntAttribute(null=True)
    marked_at_ms = IntAttribute(null=True)
    next_attempt_at_ms = IntAttribute(null=True)
    last_error = UnicodeAttribute(null=True)
    outcome = UnicodeAttribute(null=True)
    message_id = UnicodeAttribute(null=True)
    finished_at_ms = IntAttribute(null=True)
    blocked_at_ms = IntAttribute(null=True)
    generation = IntAttribute(null=True)
    resolutions: ListAttribute[Any] = ListAttribute(null=True)
    first_marked_at_ms = IntAttribute(null=True)
    heals = IntAttribute(null=True)
    next_heal_at_ms = IntAttribute(null=True)
    evidence: ListAttribute[str] = ListAttribute(null=True)
    attention = UnicodeAttribute(null=True)
    attention_sk = UnicodeAttribute(null=True)
    updated_at_ms = IntAttribute(null=True)
    expires_at = TTLAttribute(null=True)
    by_attention = ByAttention()

    def job(self) -> Job:
        return Job(
            service_id=self.service_id,
            seq=self.seq,
            event=ExternalEvent.from_content(self.event_id, self.content.as_dict()),
            content_hash=self.content_hash,
            received_at_ms=self.received_at_ms,
            status=JobStatus(self.status),
            attempts=self.attempts or 0,
            attempt_id=self.attempt_id or "",
            lock_until_ms=self.lock_until_ms or 0,
            marked_at_ms=self.marked_at_ms or 0,
            next_attempt_at_ms=self.next_attempt_at_ms or 0,
            last_error=self.last_error or "",
            outcome=self.outcome or "",
            message_id=self.message_id or "",
            finished_at_ms=self.finished_at_ms or 0,
            blocked_at_ms=self.blocked_at_ms or 0,
            generation=self.generation or 0,
            resolutions=tuple(r.as_dict() if isinstance(r, MapAttribute) else r for r in self.resolutions or ()),
            first_marked_at_ms=self.first_marked_at_ms or 0,
            heals=self.heals or 0,
            next_heal_at_ms=self.next_heal_at_ms or 0,
            evidence=tuple(self.evidence or ()),
        )


class HeadRow(Model):
    """ExternalEventsTable, a service's counter (`next_seq`) and cursor (`done_seq`)."""

    pk = UnicodeAttribute(hash_key=True)  # SVC#<service>
    sk = UnicodeAttribute(range_key=True, default=HEAD)
    next_seq = IntAttribute(null=True)
    done_seq = IntAttribute(null=True)
    last_received_at_ms = IntAttribute(null=True)


class EventRecordRow(Model):
    """ExternalEventsTable, an event id already received: its sequence and hash (the dedup record)."""

    pk = UnicodeAttribute(hash_key=True)  # EVT#<service>#<event_id>
    sk = UnicodeAttribute(range_key=True, default=EVENT)
    item_type = UnicodeAttribute(default="event")
    seq = IntAttribute()
    content_hash = UnicodeAttribute()
    received_at_ms = IntAttribute()
    expires_at = TTLAttribute(null=True)


class CardRow(Model):
    """ExternalEventsTable, where a card was delivered, and its revision."""

    pk = UnicodeAttribute(hash_key=True)  # CARD#<service>#<card_id>#<type>:<receive_id>
    sk = UnicodeAttribute(range_key=True, default=CARD)
    item_type = UnicodeAttribute(default="card")
    message_id = UnicodeAttribute()
    revision = IntAttribute()
    content_hash = UnicodeAttribute()
    updated_at_ms = IntAttribute(null=True)


def service_pk(service_id: str) -> str:
    return f"SVC#{service_id}"


def job_sk(seq: int) -> str:
    return f"JOB#{seq:012d}"


def event_pk(service_id: str, event_id: str) -> str:
    return f"EVT#{service_id}#{event_id}"


def card_pk(service_id: str, card_id: str, target: Target) -> str:
    return f"CARD#{service_id}#{card_id}#{target.key}"


def _expiry(ms: int) -> Any:
    return ttl(ms // 1000)


def _attention_sk(job: Job, at_ms: int) -> str:
    return f"{at_ms:013d}#{job.service_id}#{job.seq:012d}"


IN_FLIGHT = "running"  # the `by_attention` partition of marked, running jobs (keyed by their lease's end)
EVIDENCE_LINES = 20  # an unknown job keeps its first and last lines of evidence, this many in all


def _lost_race(error: Exception) -> bool:
    """Another append took the sequence this one read (not a duplicate event)."""
    return isinstance(error, Cancelled)


def job_from_image(image: Image) -> Job | None:
    """The job a stream image shows (None for any other item)."""
    if image.get("item_type", {}).get("S") != JOB_ITEM:
        return None
    return JobRow.from_raw_data(image).job()


class EventsTable:
    """The external-events table, bound once: the reads every port shares, and the guarded writes."""

    def __init__(self, table_name: str, client: DynamoDBClient | None = None) -> None:
        self._database = database = Database(client)
        self._jobs = database.bind(JobRow, table_name)
        self._heads = database.bind(HeadRow, table_name)
        self._records = database.bind(EventRecordRow, table_name)
        self._cards = database.bind(CardRow, table_name)

    def head(self, service_id: str) -> ServiceHead:
        try:
            row = self._heads.get(service_pk(service_id), HEAD, consistent_read=True)
        except self._heads.DoesNotExist:
            return ServiceHead(service_id)
        return ServiceHead(
            service_id,
            next_seq=row.next_seq or 0,
            done_seq=row.done_seq or 0,
            last_received_at_ms=row.last_received_at_ms or 0,
        )

    def job(self, service_id: str, seq: int) -> Job | None:
        try:
            return self._jobs.get(service_pk(service_id), job_sk(seq), consistent_read=True).job()
        except self._jobs.DoesNotExist:
            return None

    def card(self, service_id: str, card_id: str, target: Target) -> CardMessage | None:
        try:
            row = self._cards.get(card_pk(service_id, card_id, target), CARD, consistent_read=True)
        except self._cards.DoesNotExist:
            return None
        return CardMessage(row.message_id, row.revision, row.content_hash)

    def _changes(self, sets: Mapping[str, Any], removes: tuple[str, ...] = ()) -> list[Action]:
        attributes = self._jobs.get_attributes()
        changes: list[Action] = [attributes[name].set(value) for name, value in sets.items()]
        return changes + [attributes[name].remove() for name in removes]

    def _by_attempt(self, job: Job) -> Condition:
        """Still in the status it was read in, and still this attempt's."""
        same: Condition = (self._jobs.status == str(job.status)) & (self._jobs.attempt_id == job.attempt_id)
        return same

    def _row_of(self, job: Job) -> JobRow:
        return self._jobs(pk=service_pk(job.service_id), sk=job_sk(job.seq))

    def _guarded(self, write: Callable[[], object], job: Job, landed: Callable[[Job], bool]) -> None:
        """Run one conditional write of `job`. When its condition fails, the job is read again: a write whose
        earlier try landed (a timeout the SDK retried) is done; anything else means the job moved on."""
        try:
            write()
        except (UpdateError, Cancelled) as error:
            if isinstance(error, UpdateError) and not condition_failed(error):
                raise
            current = self.job(job.service_id, job.seq)
            if current is not None and landed(current):
                return
            raise StaleJob(str(error)) from error

    @staticmethod
    def _now_by(job: Job, status: JobStatus) -> Callable[[Job], bool]:
        """The job is in `status` by the same attempt: this write (or its earlier try) took it there."""
        return lambda current: current.status is status and current.attempt_id == job.attempt_id

    def _update(self, job: Job, sets: Mapping[str, Any], removes: tuple[str, ...], condition: Condition) -> None:
        self._row_of(job).update(actions=self._changes(sets, removes), condition=condition)

    def _dedup_expiry(self, transaction: Transaction, job: Job, expires_at_ms: int) -> None:
        """From a job's end, its event id stays known for the retention (the dedup window)."""
        records = self._records
        transaction.update(
            records(pk=event_pk(job.service_id, job.event.event_id)),
            [records.expires_at.set(_expiry(expires_at_ms))],
            records.seq == job.seq,
        )

    def _card_put(self, transaction: Transaction, card: CardWrite, now: int) -> None:
        cards = self._cards
        row = cards(
            pk=card_pk(card.service_id, card.card_id, card.target),
            message_id=card.card.message_id,
            revision=card.card.revision,
            content_hash=card.card.content_hash,
            updated_at_ms=now,
        )
        expected = (
            cards.pk.does_not_exist() if card.expected_revision is None else cards.revision == card.expected_revision
        )
        transaction.put(row, expected)


class DynamoIntakeStore(EventsTable):
    """IntakeStore: an event becomes the next job of its service."""

    def append(self, service_id: str, event: ExternalEvent, clock: Clock) -> Job:
        """The event becomes job `next_seq + 1` in one transaction with the counter and its dedup record;
        a lost race for the counter reads it again, so sequence order is the order of commits, and
        `received_at_ms` (taken after the head is read, never before the previous job's) follows it."""

        def attempt() -> Job:
            head = self.head(service_id)
            now = max(clock(), head.last_received_at_ms)  # never before the job ahead of it
            job = Job(service_id, head.next_seq + 1, event, event.content_hash, now)
            heads, records = self._heads, self._records
            record = records(
                pk=event_pk(service_id, event.event_id), seq=job.seq, content_hash=job.content_hash, received_at_ms=now
            )

            def write(transaction: Transaction) -> None:
                transaction.update(
                    heads(pk=service_pk(service_id)),
                    [
                        heads.next_seq.set(job.seq),
                        heads.last_received_at_ms.set(now),
                        heads.done_seq.set(heads.done_seq | 0),
                    ],
                    heads.next_seq.does_not_exist() | (heads.next_seq == head.next_seq),
                )
                # An expired record (past the dedup window, not yet swept) no longer counts.
                transaction.put(
                    record, records.pk.does_not_exist() | (records.expires_at < ttl(now // 1000)), label="dedup"
                )
                transaction.put(self._job_row(job), self._jobs.pk.does_not_exist())

            try:
                self._database.transact(write)
            except Cancelled as cancelled:
                stored = self._stored_event(service_id, event.event_id) if "dedup" in cancelled.failed else None
                if stored is not None:
                    raise DuplicateEvent(stored) from cancelled
                raise
            return job

        try:
            return with_backoff(
                attempt,
                retry_on=lambda error: isinstance(error, Cancelled),
                attempts=_APPEND_ATTEMPTS,
                base_s=0.02,
                cap_s=0.02,
            )
        except Cancelled as error:
            raise RuntimeError(f"could not take a receive sequence for {service_id} (too much contention)") from error

    def _job_row(self, job: Job) -> JobRow:
        blocking = job.status.blocking
        return self._jobs(
            pk=service_pk(job.service_id),
            sk=job_sk(job.seq),
            service_id=job.service_id,
            seq=job.seq,
            event_id=job.event.event_id,
            content=job.event.content(),
            content_hash=job.content_hash,
            received_at_ms=job.received_at_ms,
            status=str(job.status),
            attempts=job.attempts,
            generation=job.generation,
            attention=str(job.status) if blocking else None,
            attention_sk=_attention_sk(job, job.blocked_at_ms) if blocking else None,
        )

    def _stored_event(self, service_id: str, event_id: str) -> StoredEvent | None:
        try:
            row = self._records.get(event_pk(service_id, event_id), EVENT, consistent_read=True)
        except self._records.DoesNotExist:
            return None
        return StoredEvent(event_id, row.seq, row.content_hash, row.received_at_ms)


class DynamoDispatchStore(EventsTable):
    """DispatchStore: a job's attempts, one conditional write each; the head moves with its job."""

    def advance(self, service_id: str, from_seq: int, to_seq: int) -> None:
        heads = self._heads
        try:
            heads(pk=service_pk(service_id)).update(
                actions=[heads.done_seq.set(to_seq)], condition=heads.done_seq == from_seq
            )
        except UpdateError as error:
            if not condition_failed(error):
                raise

    def _advance(self, transaction: Transaction, job: Job) -> None:
        """The head moves with its job."""
        heads = self._heads
        transaction.update(
            heads(pk=service_pk(job.service_id)), [heads.done_seq.set(job.seq)], heads.done_seq == job.seq - 1
        )

    def claim(self, job: Job, attempt_id: str, lease_until_ms: int, now: int) -> Job:
        jobs = self._jobs
        if job.status is JobStatus.RUNNING:  # its worker died before the mark and its lease ran out
            condition = self._by_attempt(job) & (jobs.lock_until_ms < now) & jobs.marked_at_ms.does_not_exist()
        else:
            condition = (jobs.status == str(job.status)) & (jobs.generation == job.generation)
        sets = {
            "status": str(JobStatus.RUNNING),
            "attempt_id": attempt_id,
            "lock_until_ms": lease_until_ms,
            "attempts": job.attempts + 1,
            "updated_at_ms": now,
        }
        claimed = replace(job, attempt_id=attempt_id)
        self._guarded(lambda: self._update(job, sets, (), condition), job, self._now_by(claimed, JobStatus.RUNNING))
        return replace(
            job,
            status=JobStatus.RUNNING,
            attempt_id=attempt_id,
            lock_until_ms=lease_until_ms,
            attempts=job.attempts + 1,
        )

    def mark(self, job: Job, now: int) -> Job:
        jobs = self._jobs
        first_mark = jobs.first_marked_at_ms.set(jobs.first_marked_at_ms | now)
        changes = [*self._changes(self._in_flight(job, now)), first_mark]
        self._guarded(
            lambda: self._row_of(job).update(actions=changes, condition=self._by_attempt(job)),
            job,
            lambda current: self._now_by(job, JobStatus.RUNNING)(current) and current.marked_at_ms == now,
        )
        return replace(job, marked_at_ms=now, first_marked_at_ms=job.first_marked_at_ms or now)

    @staticmethod
    def _in_flight(job: Job, now: int) -> dict[str, Any]:
        """A marked job's attributes: in `by_attention` under its lease's end, for the janitor."""
        return {
            "marked_at_ms": now,
            "attention": IN_FLIGHT,
            "attention_sk": _attention_sk(job, job.lock_until_ms),
            "updated_at_ms": now,
        }

    def settle(self, job: Job, attempt_id: str, lease_until_ms: int, now: int) -> Job:
        jobs = self._jobs
        condition = (
            (jobs.status == str(JobStatus.UNKNOWN))
            & (jobs.generation == job.generation)
            & (jobs.next_heal_at_ms == job.next_heal_at_ms)
        )
        settling = job.settling(attempt_id, lease_until_ms, now)
        sets = {
            "status": str(JobStatus.RUNNING),
            "attempt_id": attempt_id,
            "lock_until_ms": lease_until_ms,
            "heals": settling.heals,
            **self._in_flight(settling, now),
        }
        self._guarded(
            lambda: self._update(job, sets, ("next_heal_at_ms",), condition),
            job,
            self._now_by(settling, JobStatus.RUNNING),
        )
        return settling

    def retry(self, job: Job, error: str, next_attempt_at_ms: int, now: int) -> None:
        sets = {
            "status": str(JobStatus.QUEUED),
            "next_attempt_at_ms": next_attempt_at_ms,
            "last_error": error[:1000],
            "updated_at_ms": now,
        }
        # The attempt id stays (a claim replaces it), so a retried write can recognise its own landing.
        self._guarded(
            lambda: self._update(
                job, sets, ("lock_until_ms", "marked_at_ms", "attention", "attention_sk"), self._by_attempt(job)
            ),
            job,
            self._now_by(job, JobStatus.QUEUED),
        )

    def block(
        self, job: Job, status: JobStatus, reason: str, now: int, expires_at_ms: int | None, heal_at_ms: int = 0
    ) -> None:
        jobs, blocked_at = self._jobs, job.blocked_since(now)
        sets: dict[str, Any] = {
            "status": str(status),
            "last_error": reason[:1000],
            "blocked_at_ms": blocked_at,
            "attention": str(status),
            "attention_sk": _attention_sk(job, blocked_at),
            "updated_at_ms": now,
        }
        if expires_at_ms is not None:
            sets["expires_at"] = _expiry(expires_at_ms)
        if heal_at_ms:
            sets["next_heal_at_ms"] = heal_at_ms
        changes = self._changes(sets, ("lock_until_ms",) + (() if heal_at_ms else ("next_heal_at_ms",)))
        if status is JobStatus.UNKNOWN:
            evidence = [f"{now}: {reason[:500]}"]
            if len(job.evidence) < EVIDENCE_LINES:
                changes.append(jobs.evidence.set((jobs.evidence | []).append(evidence)))
            else:  # the first lines (how it began) and the latest stay
                first, latest = job.evidence[: EVIDENCE_LINES // 2], job.evidence[-(EVIDENCE_LINES // 2 - 1) :]
                changes.append(jobs.evidence.set([*first, *latest, *evidence]))
        self._guarded(
            lambda: self._row_of(job).update(actions=changes, condition=self._by_attempt(job)),
            job,
            self._now_by(job, status),
        )

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
    ) -> None:
        sets: dict[str, Any] = {
            "status": str(status),
            "outcome": outcome,
            "message_id": message_id,
            "finished_at_ms": now,
            "expires_at": _expiry(expires_at_ms),
            "updated_at_ms": now,
        }
        if resolution is not None:
            sets["resolutions"] = [*job.resolutions, resolution]

        def write(transaction: Transaction) -> None:
            removes = ("lock_until_ms", "attention", "attention_sk", "next_heal_at_ms")
            transaction.update(self._row_of(job), self._changes(sets, removes), self._by_attempt(job))
            self._dedup_expiry(transaction, job, expires_at_ms)
            self._advance(transaction, job)
            if card is not None:
                self._card_put(transaction, card, now)

        self._guarded(lambda: self._database.transact(write), job, self._now_by(job, status))


class DynamoOperationsStore(EventsTable):
    """OperationsStore and the janitor's OverdueJobs: blocked and left-behind jobs, an operator's resolution."""

    def blocked(self) -> list[Job]:
        jobs = [
            row.job()
            for status in (JobStatus.FAILED, JobStatus.UNKNOWN)
            for row in self._jobs.by_attention.query(str(status))
            if row.item_type == JOB_ITEM
        ]
        return sorted(jobs, key=lambda job: job.blocked_at_ms)

    def in_flight_until(self, before_ms: int) -> list[Job]:
        """Marked jobs whose lease ended before `before_ms`: their worker died (or its message was lost)."""
        jobs = self._jobs
        rows = jobs.by_attention.query(IN_FLIGHT, jobs.attention_sk < f"{before_ms:013d}")
        return [row.job() for row in rows if row.item_type == JOB_ITEM]

    def resolve(
        self,
        job: Job,
        status: JobStatus,
        resolution: dict[str, Any],
        now: int,
        expires_at_ms: int | None,
        message_id: str = "",
        card: CardWrite | None = None,
    ) -> Job:
        resolved = replace(
            job,
            status=status,
            attempts=0 if status is JobStatus.QUEUED else job.attempts,
            generation=job.generation + 1,
            resolutions=(*job.resolutions, resolution),
            message_id=message_id or job.message_id,
            outcome="resolved_" + str(resolution["action"]),
            heals=0,
            next_heal_at_ms=0,
        )
        sets: dict[str, Any] = {
            "status": str(status),
            "attempts": resolved.attempts,
            "generation": resolved.generation,
            "resolutions": list(resolved.resolutions),
            "outcome": resolved.outcome,
            "message_id": resolved.message_id,
            "updated_at_ms": now,
            "next_attempt_at_ms": 0,
            "heals": 0,
        }
        removes: tuple[str, ...] = (
            "attention",
            "attention_sk",
            "attempt_id",
            "marked_at_ms",
            "lock_until_ms",
            "next_heal_at_ms",
        )
        if expires_at_ms is not None:
            sets["expires_at"] = _expiry(expires_at_ms)
            sets["finished_at_ms"] = now
        else:
            removes += ("expires_at",)
        jobs = self._jobs
        as_read = (jobs.status == str(job.status)) & (jobs.generation == job.generation)

        def write(transaction: Transaction) -> None:
            transaction.update(self._row_of(job), self._changes(sets, removes), as_read)
            if expires_at_ms is not None:
                self._dedup_expiry(transaction, job, expires_at_ms)
            if card is not None:
                self._card_put(transaction, card, now)

        self._guarded(
            lambda: self._database.transact(write),
            job,
            lambda current: current.generation == resolved.generation and current.status is status,
        )
        return resolved
