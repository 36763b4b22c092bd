"""The external-events store on DynamoDB (the items are herald.events.rows): the reads every port shares, the
intake's append (the counter, the dedup record and the job in one transaction) and the one commit of a
job's step, derived from the difference of `before` and `after` under their `Guard`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pynamodb.attributes import Attribute
from pynamodb.exceptions import UpdateError
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action

from herald.clock import Clock
from herald.errors import Unavailable
from herald.events.cards import CardMessage, CardWrite
from herald.events.jobs import Guard, Job, JobStatus, StaleJob
from herald.events.models import DuplicateEvent, ExternalEvent, Lane, LaneHead, StoredEvent, Target
from herald.events.rows import (
    CARD,
    EVENT,
    HEAD,
    IDENTITY,
    IN_FLIGHT,
    JOB_ITEM,
    LAST_SEQ,
    CardRow,
    EventRecordRow,
    HeadRow,
    JobRow,
    card_pk,
    columns_of,
    event_pk,
    job_sk,
    lane_pk,
)
from herald.retry import with_backoff
from herald.tables import Cancelled, Database, Transaction, condition_failed, key_names, page, ttl

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

_APPEND_ATTEMPTS = 50


class DynamoEventStore:
    """The events ports (intake, dispatch, operations, the janitor's reads) on the table, bound once."""

    def __init__(
        self, table_name: str, client: DynamoDBClient | None = None, append_attempts: int = _APPEND_ATTEMPTS
    ) -> None:
        self._append_attempts = append_attempts
        self._database = database = Database(client)
        self._jobs = database.bind(JobRow, table_name)
        self._heads = database.bind(HeadRow, table_name)
        self._records = database.bind(EventRecordRow, table_name)
        self._cards = database.bind(CardRow, table_name)

    # ------------------------------------------------------------------ reads
    def head(self, lane: str) -> LaneHead:
        try:
            row = self._heads.get(lane_pk(lane), HEAD, consistent_read=True)
        except self._heads.DoesNotExist:
            return LaneHead(lane)
        return LaneHead(
            lane,
            next_seq=row.next_seq or 0,
            done_seq=row.done_seq or 0,
            last_received_at_ms=row.last_received_at_ms or 0,
        )

    def job(self, lane: str, seq: int) -> Job | None:
        try:
            return self._jobs.get(lane_pk(lane), job_sk(seq), consistent_read=True).job()
        except self._jobs.DoesNotExist:
            return None

    def card(self, service_id: str, card_id: str, target: Target) -> CardMessage | None:
        try:
            row = self._cards.get(card_pk(service_id, card_id, target), CARD, consistent_read=True)
        except self._cards.DoesNotExist:
            return None
        return CardMessage(
            row.message_id,
            row.revision,
            row.content_hash,
            app_id=row.app_id or "",
            sent_at_ms=row.sent_at_ms or 0,
            tenant=row.tenant or "",
        )

    def waiting(self, lane: str, after_seq: int, limit: int) -> list[Job]:
        jobs = self._jobs  # eventually consistent: a revision appended a moment ago is coalesced next time
        later = jobs.sk.between(job_sk(after_seq + 1), job_sk(LAST_SEQ))
        rows = jobs.query(lane_pk(lane), later, limit=limit, page_size=limit)
        return [row.job() for row in rows if row.item_type == JOB_ITEM]

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

    def event_job(self, service_id: str, event_id: str) -> Job | None:
        """The job of the service's event, by its dedup record (a record from before lanes were kept on it: its
        job found among the service's by when it was received)."""
        try:
            record = self._records.get(event_pk(service_id, event_id), EVENT, consistent_read=True)
        except self._records.DoesNotExist:
            return None
        if record.lane:
            job = self.job(record.lane, record.seq)
        else:
            jobs = self._jobs
            rows = jobs.by_service.query(service_id, jobs.received_at_ms == record.received_at_ms)
            job = next((row.job() for row in rows if row.event_id == event_id and row.seq == record.seq), None)
        return job if job is not None and job.event.event_id == event_id else None

    def service_jobs(
        self, service_id: str, tenant: str, status: JobStatus | None, limit: int, page_token: str
    ) -> tuple[list[Job], str]:
        jobs = self._jobs
        only = (jobs.tenant == tenant) | jobs.tenant.does_not_exist()
        if status is not None:
            only &= jobs.status == str(status)
        rows, token = page(
            lambda start: jobs.by_service.query(
                service_id,
                scan_index_forward=False,
                filter_condition=only,
                limit=limit,
                page_size=limit,
                last_evaluated_key=start,
            ),
            page_token,
            {"service": service_id, "tenant": tenant, "status": str(status or "")},
            key_names(jobs, jobs.by_service),
        )
        return [row.job() for row in rows], token

    # ------------------------------------------------------------------ writes
    def append(self, lane: Lane, event: ExternalEvent, clock: Clock, tenant: str = "") -> Job:
        """The event becomes job `next_seq + 1` of its lane in one transaction with the lane's counter and its
        dedup record (the service's: an event id is the service's, whichever lane it runs in);
        a lost race for the counter reads it again, so sequence order is the order of commits, and
        `received_at_ms` (taken after the head is read, never before the previous job's) follows it."""
        try:
            return with_backoff(
                lambda: self._append_once(lane, event, clock, tenant),
                retry_on=lambda error: isinstance(error, Cancelled),
                attempts=self._append_attempts,
                base_s=0.02,
                cap_s=0.25,  # many posters to one lane spread out over a few seconds
            )
        except Cancelled as error:  # still losing every race: the poster is told to come back (never a 500)
            raise Unavailable(f"too many events for {lane.key} at once; try again shortly") from error

    def _append_once(self, lane: Lane, event: ExternalEvent, clock: Clock, tenant: str) -> Job:
        head = self.head(lane.key)
        now = max(clock(), head.last_received_at_ms)  # never before the job ahead of it
        service_id = lane.service_id
        job = Job(
            service_id, head.next_seq + 1, event, event.content_hash, now, by_target=bool(lane.target), tenant=tenant
        )
        heads, records = self._heads, self._records
        record = records(
            pk=event_pk(service_id, event.event_id),
            lane=lane.key,
            seq=job.seq,
            content_hash=job.content_hash,
            received_at_ms=now,
        )

        def write(transaction: Transaction) -> None:
            transaction.update(
                heads(pk=lane_pk(lane.key)),
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
            transaction.put(self._new_row(job), self._jobs.pk.does_not_exist())

        try:
            self._database.transact(write)
        except Cancelled as cancelled:
            stored = self._stored_event(service_id, event.event_id) if "dedup" in cancelled.failed else None
            if stored is not None:
                raise DuplicateEvent(stored) from cancelled
            raise
        return job

    def _new_row(self, job: Job) -> JobRow:
        columns = {name: value for name, value in columns_of(job).items() if value is not None}
        columns["generation"] = job.generation  # stored, even as 0: a claim's condition compares it
        return self._jobs(
            pk=lane_pk(job.lane.key),
            sk=job_sk(job.seq),
            service_id=job.service_id,
            seq=job.seq,
            by_target=job.by_target or None,
            tenant=job.tenant,
            event_id=job.event.event_id,
            content=job.event.content(),
            content_hash=job.content_hash,
            received_at_ms=job.received_at_ms,
            **columns,
        )

    def _stored_event(self, service_id: str, event_id: str) -> StoredEvent | None:
        try:
            row = self._records.get(event_pk(service_id, event_id), EVENT, consistent_read=True)
        except self._records.DoesNotExist:
            return None
        return StoredEvent(event_id, row.seq, row.content_hash, row.received_at_ms)

    def advance(self, lane: str, from_seq: int, to_seq: int) -> None:
        """Move the lane's cursor past jobs already finished (a no-op if another worker did)."""
        heads = self._heads
        try:
            heads(pk=lane_pk(lane)).update(actions=[heads.done_seq.set(to_seq)], condition=heads.done_seq == from_seq)
        except UpdateError as error:
            if not condition_failed(error):
                raise

    def commit(
        self, before: Job, after: Job, at_ms: int, *, card: CardWrite | None = None, advance: bool = False
    ) -> Job:
        """`after` over `before`, written as the difference of their columns, if the stored job still holds
        `Guard.of(before, after)`; with the card mapping it leaves, the cursor moved past it (`advance`), and,
        when it finishes, its event id kept for the retention from now on (the dedup window). StaleJob if
        the job moved on; a condition that failed because an earlier try of this write landed is done."""
        changes = self._changes(before, after, at_ms)
        condition = self._guard(Guard.of(before, after, at_ms))
        finishing = after.status.completed and not before.status.completed
        try:
            if card is None and not advance and not finishing:
                self._jobs(pk=lane_pk(after.lane.key), sk=job_sk(after.seq)).update(changes, condition)
            else:
                self._database.transact(lambda t: self._write_all(t, after, changes, condition, card, advance, at_ms))
        except (UpdateError, Cancelled) as error:
            if isinstance(error, UpdateError) and not condition_failed(error):
                raise
            current = self.job(after.lane.key, after.seq)
            if current is None or not current.same_step(after):
                raise StaleJob(str(error)) from error
        return after

    def supersede(self, run: Sequence[tuple[Job, Job]], at_ms: int) -> None:
        """The run's jobs and the cursor past the last in one transaction (two items a job, and the cursor)."""

        def write(transaction: Transaction) -> None:
            for before, after in run:
                condition = self._guard(Guard.of(before, after, at_ms))
                self._write_job(transaction, after, self._changes(before, after, at_ms), condition)
            self._move_cursor(transaction, run[0][1].lane.key, run[0][1].seq - 1, run[-1][1].seq)

        try:
            self._database.transact(write)
        except Cancelled as error:
            raise StaleJob(str(error)) from error

    def _write_all(
        self,
        transaction: Transaction,
        job: Job,
        changes: list[Action],
        condition: Condition,
        card: CardWrite | None,
        advance: bool,
        at_ms: int,
    ) -> None:
        self._write_job(transaction, job, changes, condition)
        if advance:
            self._move_cursor(transaction, job.lane.key, job.seq - 1, job.seq)
        if card is not None:
            cards = self._cards
            shown = card.card
            row = cards(
                pk=card_pk(card.service_id, card.card_id, card.target),
                message_id=shown.message_id,
                revision=shown.revision,
                content_hash=shown.content_hash,
                app_id=shown.app_id or None,
                tenant=shown.tenant or None,
                sent_at_ms=shown.sent_at_ms or None,
                updated_at_ms=at_ms,
            )
            absent = card.expected_revision is None
            transaction.put(row, cards.pk.does_not_exist() if absent else cards.revision == card.expected_revision)

    def _write_job(self, transaction: Transaction, job: Job, changes: list[Action], condition: Condition) -> None:
        """The job's step and, when it finishes, its event id kept for the retention from now on."""
        transaction.update(self._jobs(pk=lane_pk(job.lane.key), sk=job_sk(job.seq)), changes, condition)
        if job.status.completed:
            records = self._records
            record = records(pk=event_pk(job.service_id, job.event.event_id))
            transaction.update(record, [records.expires_at.set(ttl(job.expires_at_s))], records.seq == job.seq)

    def _move_cursor(self, transaction: Transaction, lane: str, from_seq: int, to_seq: int) -> None:
        heads = self._heads
        transaction.update(heads(pk=lane_pk(lane)), [heads.done_seq.set(to_seq)], heads.done_seq == from_seq)

    def _changes(self, before: Job, after: Job, at_ms: int) -> list[Action]:
        """The columns `after` changes, set (or removed, when emptied) through the model's typed attributes."""
        changed = [name for name in IDENTITY if getattr(before, name) != getattr(after, name)]
        if changed:
            raise ValueError(f"a commit cannot change a job's identity ({', '.join(changed)})")
        attributes: dict[str, Attribute[Any]] = self._jobs.get_attributes()
        old, new = columns_of(before), columns_of(after)
        actions: list[Action] = [self._jobs.updated_at_ms.set(at_ms)]
        for name, value in new.items():
            if value != old[name]:
                actions.append(attributes[name].remove() if value is None else attributes[name].set(value))
        return actions

    def _guard(self, guard: Guard) -> Condition:
        """`guard` as a condition on the stored job (an absent attribute stands for 0 or "")."""
        jobs = self._jobs
        condition: Condition = jobs.status == str(guard.status)
        expected: dict[str, Any] = {
            "attempt_id": guard.attempt_id,
            "generation": guard.generation,
            "next_settle_at_ms": guard.next_settle_at_ms,
        }
        attributes: dict[str, Attribute[Any]] = jobs.get_attributes()
        for name, value in expected.items():
            if value is not None:
                attribute = attributes[name]
                condition &= (attribute == value) | attribute.does_not_exist() if not value else attribute == value
        if guard.lease_ended_by_ms is not None:
            condition &= (jobs.lock_until_ms < guard.lease_ended_by_ms) & jobs.marked_at_ms.does_not_exist()
        return condition
