"""The external-events table's items (`pk`, `sk`), as PynamoDB models, and a job's columns; the table's stream
is the dispatch outbox.

* `pk = SVC#<lane>, sk = HEAD` — `next_seq` (the last receive sequence given; `last_received_at_ms` its
  time) and `done_seq` (every job up to it is finished): the lane's counter and cursor. A lane is a service
  (`SVC#svc`), or one target of a service that orders by target (`SVC#svc/chat_id:oc_x`);
* `pk = SVC#<lane>, sk = JOB#<seq>` — a job; while `failed`/`unknown` it carries `attention` (its status)
  and `attention_sk` (when it blocked), the keys of the sparse GSI `by_attention` operators list blocked jobs
  from; while marked and running, `attention = running` and `attention_sk` its lease's end, so the events
  janitor finds a side effect whose worker died; every job is in the GSI `by_service` (`service_id`,
  `received_at_ms`), which lists a service's events newest first for its partner;
* `pk = EVT#<service>#<event_id>, sk = EVENT` — the dedup record of an event id (its lane, sequence and hash):
  how a partner's read of its event finds the job;
* `pk = CARD#<service>#<card_id>#<type>:<receive_id>, sk = CARD` — where a card was delivered, and its revision.
Finished jobs and their dedup records expire by TTL (`expires_at`, epoch seconds) after the retention.
"""

from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING, Any

from pynamodb.attributes import BooleanAttribute, ListAttribute, MapAttribute, TTLAttribute, UnicodeAttribute
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex
from pynamodb.models import Model

from herald.events.jobs import Job, JobStatus
from herald.events.models import ExternalEvent, Target
from herald.events.records import Outcome
from herald.tables import IntAttribute, epoch_seconds, ttl

if TYPE_CHECKING:
    from herald.dynamo import Image

HEAD = "HEAD"
EVENT = "EVENT"
CARD = "CARD"
JOB_ITEM = "job"
IN_FLIGHT = "running"  # the `by_attention` partition of marked, running jobs (keyed by their lease's end)
# A job's identity, written once by intake; every other field of `Job` is a column a commit may change.
IDENTITY = frozenset({"service_id", "seq", "event", "content_hash", "received_at_ms", "by_target", "tenant"})
CHANGEABLE = tuple(f.name for f in fields(Job) if f.name not in IDENTITY)


class ByAttention(GlobalSecondaryIndex["JobRow"]):
    class Meta:
        index_name = "by_attention"
        projection = AllProjection()

    attention = UnicodeAttribute(hash_key=True)
    attention_sk = UnicodeAttribute(range_key=True)


class ByService(GlobalSecondaryIndex["JobRow"]):
    """A service's jobs by when they were received: what its partner lists (GET /events/external)."""

    class Meta:
        index_name = "by_service"
        projection = AllProjection()

    service_id = UnicodeAttribute(hash_key=True)
    received_at_ms = IntAttribute(range_key=True)


class JobRow(Model):
    """ExternalEventsTable, a job: one event of one service, at its receive sequence; in `by_attention`
    while failed or unknown (or marked and running). A column per field of `Job`."""

    pk = UnicodeAttribute(hash_key=True)  # SVC#<lane>
    sk = UnicodeAttribute(range_key=True)  # JOB#<seq>
    item_type = UnicodeAttribute(default=JOB_ITEM)
    service_id = UnicodeAttribute()
    seq = IntAttribute()
    by_target = BooleanAttribute(null=True)  # absent: the service's own order
    tenant = UnicodeAttribute(null=True)  # the posting key's app_code ("": the stack's; absent: stored before it)
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
    continued_from = UnicodeAttribute(null=True)
    finished_at_ms = IntAttribute(null=True)
    blocked_at_ms = IntAttribute(null=True)
    generation = IntAttribute(null=True)
    resolutions: ListAttribute[Any] = ListAttribute(null=True)
    first_marked_at_ms = IntAttribute(null=True)
    # Stored under their first names, so jobs written before the rename read the same.
    settle_tries = IntAttribute(null=True, attr_name="heals")
    next_settle_at_ms = IntAttribute(null=True, attr_name="next_heal_at_ms")
    evidence: ListAttribute[str] = ListAttribute(null=True)
    calls: ListAttribute[Any] = ListAttribute(null=True)  # maps: ProviderCall
    attention = UnicodeAttribute(null=True)
    attention_sk = UnicodeAttribute(null=True)
    updated_at_ms = IntAttribute(null=True)
    expires_at = TTLAttribute(null=True)
    by_attention = ByAttention()
    by_service = ByService()

    def job(self) -> Job:
        stored = {name: getattr(self, name) for name in CHANGEABLE if name != "expires_at_s"}
        columns: dict[str, Any] = {name: value for name, value in stored.items() if value is not None}
        columns["status"] = JobStatus(self.status)
        columns["outcome"] = Outcome(self.outcome or "")
        columns["resolutions"] = tuple(_plain(r) for r in self.resolutions or ())
        columns["evidence"] = tuple(self.evidence or ())
        columns["calls"] = tuple(_plain(call) for call in self.calls or ())
        return Job(
            service_id=self.service_id,
            seq=self.seq,
            event=ExternalEvent.from_content(self.event_id, self.content.as_dict()),
            content_hash=self.content_hash,
            received_at_ms=self.received_at_ms,
            by_target=bool(self.by_target),
            tenant=self.tenant,
            expires_at_s=epoch_seconds(self.expires_at) if self.expires_at else 0,
            **columns,
        )


def _plain(stored: Any) -> Any:
    """A map stored in a list, as the dict it was written from."""
    return stored.as_dict() if isinstance(stored, MapAttribute) else stored


class HeadRow(Model):
    """ExternalEventsTable, a lane's counter (`next_seq`) and cursor (`done_seq`)."""

    pk = UnicodeAttribute(hash_key=True)  # SVC#<lane>
    sk = UnicodeAttribute(range_key=True, default=HEAD)
    next_seq = IntAttribute(null=True)
    done_seq = IntAttribute(null=True)
    last_received_at_ms = IntAttribute(null=True)


class EventRecordRow(Model):
    """ExternalEventsTable, an event id already received: its sequence and hash (the dedup record)."""

    pk = UnicodeAttribute(hash_key=True)  # EVT#<service>#<event_id>
    sk = UnicodeAttribute(range_key=True, default=EVENT)
    item_type = UnicodeAttribute(default="event")
    lane = UnicodeAttribute(null=True)  # the lane its job is in (absent: recorded before lanes were kept here)
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
    app_id = UnicodeAttribute(null=True)  # the Feishu app that sent the message (absent: recorded before it was kept)
    tenant = UnicodeAttribute(null=True)  # the tenant it sent the message for
    sent_at_ms = IntAttribute(null=True)  # when the message was sent
    updated_at_ms = IntAttribute(null=True)


def lane_pk(lane: str) -> str:
    return f"SVC#{lane}"


LAST_SEQ = 10**12 - 1  # the largest sequence number job_sk writes in its twelve digits


def job_sk(seq: int) -> str:
    return f"JOB#{seq:012d}"


def event_pk(service_id: str, event_id: str) -> str:
    return f"EVT#{service_id}#{event_id}"


def card_pk(service_id: str, card_id: str, target: Target) -> str:
    return f"CARD#{service_id}#{card_id}#{target.key}"


def job_from_image(image: Image) -> Job | None:
    """The job a stream image shows (None for any other item)."""
    if image.get("item_type", {}).get("S") != JOB_ITEM:
        return None
    return JobRow.from_raw_data(image).job()


def columns_of(job: Job) -> dict[str, Any]:
    """The job's changeable columns, as stored: a falsy value is an absent attribute. `attention` and
    `attention_sk` place it in `by_attention`: blocked jobs under their status and when they blocked, marked
    running ones under their lease's end, for the janitor."""
    columns = {name: getattr(job, name) for name in CHANGEABLE}
    columns["status"] = str(job.status)
    columns["outcome"] = str(job.outcome)
    columns["resolutions"] = [dict(r) for r in job.resolutions]
    columns["evidence"] = list(job.evidence)
    columns["calls"] = [dict(call) for call in job.calls]
    columns["expires_at"] = ttl(columns.pop("expires_at_s")) if job.expires_at_s else None
    attention = None
    if job.status.blocking:
        attention = (str(job.status), job.blocked_at_ms)
    elif job.status is JobStatus.RUNNING and job.marked_at_ms:
        attention = (IN_FLIGHT, job.lock_until_ms)
    columns["attention"] = attention[0] if attention else None
    columns["attention_sk"] = f"{attention[1]:013d}#{job.lane.key}#{job.seq:012d}" if attention else None
    return {name: value or None for name, value in columns.items()}
