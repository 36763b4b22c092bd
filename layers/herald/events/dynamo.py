"""DynamoDB adapter for external events. One table (`pk`, `sk`); its stream is the dispatch outbox.

* `pk = SVC#<service>, sk = HEAD` — `next_seq` (the last receive sequence given; `last_received_at_ms` its
  time) and `done_seq` (every job up to it is finished): the service's counter and cursor;
* `pk = SVC#<service>, sk = JOB#<seq>` — a job; while `failed`/`unknown` it carries `attention` and
  `attention_sk`, the keys of the sparse GSI `by_attention` operators list blocked jobs from;
* `pk = EVT#<service>#<event_id>, sk = EVENT` — the dedup record of an event id (its sequence and hash);
* `pk = CARD#<service>#<card_id>#<type>:<receive_id>, sk = CARD` — where a card was delivered, and its revision.
Finished jobs and their dedup records expire by TTL (`expires_at`, epoch seconds) after the retention.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from herald.clock import Clock
from herald.dynamo import cancelled_on, is_conditional_check_failed, is_transaction_cancelled, to_attr, to_item
from herald.dynamo_table import DynamoTable
from herald.events.models import CardMessage, ExternalEvent, Job, JobStatus, ServiceHead, Target
from herald.events.service import CardWrite, DuplicateEvent, StaleJob, StoredEvent

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef

HEAD = "HEAD"
JOB_ITEM = "job"
BY_ATTENTION_INDEX = "by_attention"
_APPEND_RETRIES = 50


def service_pk(service_id: str) -> str:
    return f"SVC#{service_id}"


def job_sk(seq: int) -> str:
    return f"JOB#{seq:012d}"


def event_pk(service_id: str, event_id: str) -> str:
    return f"EVT#{service_id}#{event_id}"


def card_pk(service_id: str, card_id: str, target: Target) -> str:
    return f"CARD#{service_id}#{card_id}#{target.key}"


def _key(pk: str, sk: str) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": sk}}


def _seconds(ms: int | None) -> int | None:
    return None if ms is None else ms // 1000


def new_job_item(job: Job) -> dict[str, Any]:
    blocking = job.status.blocking
    return to_item(
        {
            "pk": service_pk(job.service_id),
            "sk": job_sk(job.seq),
            "item_type": JOB_ITEM,
            "service_id": job.service_id,
            "seq": job.seq,
            "event_id": job.event.event_id,
            "content": job.event.content(),
            "content_hash": job.content_hash,
            "received_at_ms": job.received_at_ms,
            "status": str(job.status),
            "attempts": job.attempts,
            "generation": job.generation,
            "attention": str(job.status) if blocking else None,
            "attention_sk": f"{job.blocked_at_ms:013d}#{job.service_id}#{job.seq:012d}" if blocking else None,
        }
    )


def job_from_item(item: dict[str, Any]) -> Job:
    return Job(
        service_id=item["service_id"],
        seq=item["seq"],
        event=ExternalEvent.from_content(item["event_id"], item["content"]),
        content_hash=item["content_hash"],
        received_at_ms=item["received_at_ms"],
        status=JobStatus(item["status"]),
        attempts=item.get("attempts", 0),
        attempt_id=item.get("attempt_id", ""),
        lock_until_ms=item.get("lock_until_ms", 0),
        marked_at_ms=item.get("marked_at_ms", 0),
        next_attempt_at_ms=item.get("next_attempt_at_ms", 0),
        last_error=item.get("last_error", ""),
        outcome=item.get("outcome", ""),
        message_id=item.get("message_id", ""),
        finished_at_ms=item.get("finished_at_ms", 0),
        blocked_at_ms=item.get("blocked_at_ms", 0),
        generation=item.get("generation", 0),
        resolutions=tuple(item.get("resolutions", ())),
    )


def is_job(item: dict[str, Any]) -> bool:
    return item.get("item_type") == JOB_ITEM


class DynamoJobStore(DynamoTable):
    # ------------------------------------------------------------------ intake
    def append(self, service_id: str, event: ExternalEvent, clock: Clock) -> Job:
        """The event becomes job `next_seq + 1` in one transaction with the counter and its dedup record;
        a lost race for the counter reads it again, so sequence order is the order of commits, and
        `received_at_ms` (taken after the head is read, never before the previous job's) follows it."""
        for _ in range(_APPEND_RETRIES):
            head = self.head(service_id)
            now = max(clock(), head.last_received_at_ms)  # never before the job ahead of it
            job = Job(service_id, head.next_seq + 1, event, event.content_hash, now)
            try:
                self._transact(
                    [
                        {
                            "Update": {
                                "TableName": self._table,
                                "Key": _key(service_pk(service_id), HEAD),
                                "UpdateExpression": (
                                    "SET next_seq = :seq, last_received_at_ms = :now,"
                                    " done_seq = if_not_exists(done_seq, :zero)"
                                ),
                                "ConditionExpression": "attribute_not_exists(next_seq) OR next_seq = :prev",
                                "ExpressionAttributeValues": {
                                    ":seq": to_attr(job.seq),
                                    ":now": to_attr(now),
                                    ":prev": to_attr(head.next_seq),
                                    ":zero": to_attr(0),
                                },
                            }
                        },
                        {
                            "Put": {
                                "TableName": self._table,
                                "Item": to_item(
                                    {
                                        "pk": event_pk(service_id, event.event_id),
                                        "sk": "EVENT",
                                        "item_type": "event",
                                        "seq": job.seq,
                                        "content_hash": job.content_hash,
                                        "received_at_ms": now,
                                    }
                                ),
                                # An expired record (past the dedup window, not yet swept) no longer counts.
                                "ConditionExpression": "attribute_not_exists(pk) OR expires_at < :now_s",
                                "ExpressionAttributeValues": {":now_s": to_attr(now // 1000)},
                            }
                        },
                        {
                            "Put": {
                                "TableName": self._table,
                                "Item": new_job_item(job),
                                "ConditionExpression": "attribute_not_exists(pk)",
                            }
                        },
                    ]
                )
                return job
            except ClientError as exc:
                if not is_transaction_cancelled(exc):
                    raise
                if cancelled_on(exc, 1):
                    stored = self._stored_event(service_id, event.event_id)
                    if stored is not None:
                        raise DuplicateEvent(stored) from exc
                time.sleep(random.uniform(0, 0.02))  # noqa: S311 - jitter, not secrecy
        raise RuntimeError(f"could not take a receive sequence for {service_id} (too much contention)")

    def _stored_event(self, service_id: str, event_id: str) -> StoredEvent | None:
        item = self._get_item(_key(event_pk(service_id, event_id), "EVENT"))
        if item is None:
            return None
        return StoredEvent(event_id, item["seq"], item["content_hash"], item["received_at_ms"])

    # ------------------------------------------------------------------ reads
    def head(self, service_id: str) -> ServiceHead:
        item = self._get_item(_key(service_pk(service_id), HEAD))
        if item is None:
            return ServiceHead(service_id)
        return ServiceHead(
            service_id,
            next_seq=item.get("next_seq", 0),
            done_seq=item.get("done_seq", 0),
            last_received_at_ms=item.get("last_received_at_ms", 0),
        )

    def job(self, service_id: str, seq: int) -> Job | None:
        item = self._get_item(_key(service_pk(service_id), job_sk(seq)))
        return job_from_item(item) if item is not None and is_job(item) else None

    def card(self, service_id: str, card_id: str, target: Target) -> CardMessage | None:
        item = self._get_item(_key(card_pk(service_id, card_id, target), "CARD"))
        if item is None:
            return None
        return CardMessage(item["message_id"], item["revision"], item["content_hash"])

    def blocked(self) -> list[Job]:
        jobs: list[Job] = []
        for status in (JobStatus.FAILED, JobStatus.UNKNOWN):
            items = self._query_all(
                {
                    "TableName": self._table,
                    "IndexName": BY_ATTENTION_INDEX,
                    "KeyConditionExpression": "attention = :a",
                    "ExpressionAttributeValues": {":a": {"S": str(status)}},
                }
            )
            jobs.extend(job_from_item(item) for item in items if is_job(item))
        return sorted(jobs, key=lambda job: job.blocked_at_ms)

    # ------------------------------------------------------------------ the job's transitions
    def advance(self, service_id: str, from_seq: int, to_seq: int) -> None:
        try:
            self._ddb.update_item(**self._advance(service_id, from_seq, to_seq))
        except ClientError as exc:
            if not is_conditional_check_failed(exc):
                raise

    def _advance(self, service_id: str, from_seq: int, to_seq: int) -> Any:
        return {
            "TableName": self._table,
            "Key": _key(service_pk(service_id), HEAD),
            "UpdateExpression": "SET done_seq = :to",
            "ConditionExpression": "done_seq = :from",
            "ExpressionAttributeValues": {":to": to_attr(to_seq), ":from": to_attr(from_seq)},
        }

    def _job_update(
        self,
        job: Job,
        sets: dict[str, Any],
        removes: tuple[str, ...] = (),
        condition: str = "#status = :was AND attempt_id = :attempt",
        condition_values: dict[str, Any] | None = None,
    ) -> Any:
        names = {"#status": "status"}
        values: dict[str, Any] = {":was": to_attr(str(job.status))}
        if ":attempt" in condition:
            values[":attempt"] = to_attr(job.attempt_id)
        for name, value in (condition_values or {}).items():
            values[name] = to_attr(value)
        assignments = []
        for index, (field, value) in enumerate(sets.items()):
            names[f"#f{index}"] = field
            values[f":v{index}"] = to_attr(value)
            assignments.append(f"#f{index} = :v{index}")
        expression = "SET " + ", ".join(assignments)
        if removes:
            expression += " REMOVE " + ", ".join(removes)
        return {
            "TableName": self._table,
            "Key": _key(service_pk(job.service_id), job_sk(job.seq)),
            "UpdateExpression": expression,
            "ConditionExpression": condition,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
        }

    def _guarded(self, write: Callable[[], Any], job: Job, landed: Callable[[Job], bool]) -> None:
        """Run one conditional write of `job`. When its condition fails, the job is read again: a write whose
        earlier try landed (a timeout the SDK retried) is done; anything else means the job moved on."""
        try:
            write()
        except ClientError as exc:
            if not (is_conditional_check_failed(exc) or is_transaction_cancelled(exc)):
                raise
            current = self.job(job.service_id, job.seq)
            if current is not None and landed(current):
                return
            raise StaleJob(str(exc)) from exc

    @staticmethod
    def _now_by(job: Job, status: JobStatus) -> Callable[[Job], bool]:
        """The job is in `status` by the same attempt: this write (or its earlier try) took it there."""
        return lambda current: current.status is status and current.attempt_id == job.attempt_id

    def claim(self, job: Job, attempt_id: str, lease_until_ms: int, now: int) -> Job:
        if job.status is JobStatus.RUNNING:  # its worker died before the mark and its lease ran out
            condition = "#status = :was AND attempt_id = :attempt AND lock_until_ms < :now"
            condition += " AND attribute_not_exists(marked_at_ms)"
            guard = {":now": now}
        else:
            condition, guard = "#status = :was AND generation = :generation", {":generation": job.generation}
        sets = {
            "status": str(JobStatus.RUNNING),
            "attempt_id": attempt_id,
            "lock_until_ms": lease_until_ms,
            "attempts": job.attempts + 1,
            "updated_at_ms": now,
        }
        claimed = replace(job, attempt_id=attempt_id)
        self._guarded(
            lambda: self._ddb.update_item(**self._job_update(job, sets, condition=condition, condition_values=guard)),
            job,
            self._now_by(claimed, JobStatus.RUNNING),
        )
        return replace(
            job,
            status=JobStatus.RUNNING,
            attempt_id=attempt_id,
            lock_until_ms=lease_until_ms,
            attempts=job.attempts + 1,
        )

    def mark(self, job: Job, now: int) -> Job:
        self._guarded(
            lambda: self._ddb.update_item(**self._job_update(job, {"marked_at_ms": now, "updated_at_ms": now})),
            job,
            lambda current: self._now_by(job, JobStatus.RUNNING)(current) and current.marked_at_ms == now,
        )
        return replace(job, marked_at_ms=now)

    def retry(self, job: Job, error: str, next_attempt_at_ms: int, now: int) -> None:
        sets = {
            "status": str(JobStatus.QUEUED),
            "next_attempt_at_ms": next_attempt_at_ms,
            "last_error": error[:1000],
            "updated_at_ms": now,
        }
        # The attempt id stays (a claim replaces it), so a retried write can recognise its own landing.
        self._guarded(
            lambda: self._ddb.update_item(**self._job_update(job, sets, ("lock_until_ms", "marked_at_ms"))),
            job,
            self._now_by(job, JobStatus.QUEUED),
        )

    def block(self, job: Job, status: JobStatus, reason: str, now: int, expires_at_ms: int | None) -> None:
        sets: dict[str, Any] = {
            "status": str(status),
            "last_error": reason[:1000],
            "blocked_at_ms": now,
            "attention": str(status),
            "attention_sk": f"{now:013d}#{job.service_id}#{job.seq:012d}",
            "updated_at_ms": now,
        }
        if expires_at_ms is not None:
            sets["expires_at"] = _seconds(expires_at_ms)
        self._guarded(
            lambda: self._ddb.update_item(**self._job_update(job, sets, ("lock_until_ms",))),
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
    ) -> None:
        sets = {
            "status": str(status),
            "outcome": outcome,
            "message_id": message_id,
            "finished_at_ms": now,
            "expires_at": _seconds(expires_at_ms),
            "updated_at_ms": now,
        }
        items: list[TransactWriteItemTypeDef] = [
            {"Update": self._job_update(job, sets, ("lock_until_ms", "attention", "attention_sk"))},
            self._dedup_expiry(job, expires_at_ms),
            {"Update": self._advance(job.service_id, job.seq - 1, job.seq)},  # the head moves with its job
        ]
        if card is not None:
            items.append(self._card_put(card, now))
        self._guarded(lambda: self._transact(items), job, self._now_by(job, status))

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
        }
        removes: tuple[str, ...] = ("attention", "attention_sk", "attempt_id", "marked_at_ms", "lock_until_ms")
        if expires_at_ms is not None:
            sets["expires_at"] = _seconds(expires_at_ms)
            sets["finished_at_ms"] = now
        else:
            removes += ("expires_at",)
        update = self._job_update(
            job, sets, removes, condition="#status = :was AND generation = :generation",
            condition_values={":generation": job.generation},
        )  # fmt: skip
        items: list[TransactWriteItemTypeDef] = [{"Update": update}]
        if expires_at_ms is not None:
            items.append(self._dedup_expiry(job, expires_at_ms))
        if card is not None:
            items.append(self._card_put(card, now))
        self._guarded(
            lambda: self._transact(items),
            job,
            lambda current: current.generation == resolved.generation and current.status is status,
        )
        return resolved

    def _dedup_expiry(self, job: Job, expires_at_ms: int) -> TransactWriteItemTypeDef:
        """From a job's end, its event id stays known for the retention (the dedup window)."""
        return {
            "Update": {
                "TableName": self._table,
                "Key": _key(event_pk(job.service_id, job.event.event_id), "EVENT"),
                "UpdateExpression": "SET expires_at = :e",
                "ConditionExpression": "seq = :seq",
                "ExpressionAttributeValues": {":e": to_attr(_seconds(expires_at_ms)), ":seq": to_attr(job.seq)},
            }
        }

    def _card_put(self, card: CardWrite, now: int) -> TransactWriteItemTypeDef:
        if card.expected_revision is None:
            condition, values = "attribute_not_exists(pk)", {}
        else:
            condition, values = "revision = :expected", {":expected": to_attr(card.expected_revision)}
        put: Any = {
            "TableName": self._table,
            "Item": to_item(
                {
                    "pk": card_pk(card.service_id, card.card_id, card.target),
                    "sk": "CARD",
                    "item_type": "card",
                    "message_id": card.card.message_id,
                    "revision": card.card.revision,
                    "content_hash": card.card.content_hash,
                    "updated_at_ms": now,
                }
            ),
            "ConditionExpression": condition,
        }
        if values:
            put["ExpressionAttributeValues"] = values
        return {"Put": put}
