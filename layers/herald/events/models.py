"""External events (CONTRACTS §3): what a partner service posts, the job that delivers it, and its card.

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
its next try (`next_heal_at_ms`); one it cannot (past Feishu's uuid window, out of tries, or a refusal that
proves nothing) waits for an operator (`requeue`, `sent`, `skip`), with the evidence of what was tried.
`rejected` (the target left the service's allowed targets) does not block.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

# The kinds of Feishu receiver an event may target (the `receive_id_type` of im/v1/messages).
RECEIVE_ID_TYPES = frozenset({"open_id", "user_id", "union_id", "email", "chat_id"})


class JobStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    REJECTED = "rejected"  # not delivered: the target is no longer allowed for the service
    SKIPPED = "skipped"  # not delivered: an operator skipped it
    FAILED = "failed"  # blocks the service
    UNKNOWN = "unknown"  # blocks the service: the side effect may or may not have happened

    @property
    def completed(self) -> bool:
        return self in (JobStatus.SUCCEEDED, JobStatus.REJECTED, JobStatus.SKIPPED)

    @property
    def blocking(self) -> bool:
        return self in (JobStatus.FAILED, JobStatus.UNKNOWN)


# A job's state machine: where each status may go. A worker claims a queued job, and may take over a
# running one whose lease ran out; the attempt ends delivered (or rejected), back in the queue for a retry,
# or blocked (failed: not delivered; unknown: maybe delivered). A worker may take an unknown job back to
# running to settle it (where Feishu makes a second try provably harmless); otherwise an operator moves a
# blocked job on, and only an unknown one can be recorded as sent (a failed one was certainly not).
JOB_TRANSITIONS: dict[JobStatus, frozenset[JobStatus]] = {
    JobStatus.QUEUED: frozenset({JobStatus.RUNNING}),
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
}


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def content_hash(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


@dataclass(frozen=True)
class Target:
    receive_id_type: str
    receive_id: str

    @property
    def key(self) -> str:
        """How a target is named in a service's allowed targets: `chat_id:oc_xxx`."""
        return f"{self.receive_id_type}:{self.receive_id}"

    @classmethod
    def parse(cls, key: str) -> Target:
        kind, sep, receive_id = key.partition(":")
        if not sep or not kind or not receive_id:
            raise ValueError(f"a target reads receive_id_type:receive_id, not {key!r}")
        return cls(kind, receive_id)


@dataclass(frozen=True)
class ExternalEvent:
    """One posted event, as validated. `card_id` (the body's `data.event_id`) and `revision` go together."""

    event_id: str
    event_type: str
    title: str
    status: str
    summary: str
    target: Target
    card_id: str | None = None
    revision: int | None = None
    markdown: bool = False  # the summary is Feishu markdown (a key allowed to opt in); otherwise plain text

    def content(self) -> dict[str, Any]:
        """The event's content as posted (less the top-level event id): what duplicates are compared on."""
        data: dict[str, Any] = {
            "title": self.title,
            "status": self.status,
            "summary": self.summary,
            "target": {"receive_id": self.target.receive_id, "receive_id_type": self.target.receive_id_type},
        }
        if self.card_id is not None:
            data["event_id"] = self.card_id
            data["revision"] = self.revision
        if self.markdown:
            data["format"] = "markdown"
        return {"event_type": self.event_type, "data": data}

    @property
    def content_hash(self) -> str:
        return content_hash(self.content())

    @classmethod
    def from_content(cls, event_id: str, content: dict[str, Any]) -> ExternalEvent:
        data = content["data"]
        return cls(
            event_id=event_id,
            event_type=content["event_type"],
            title=data["title"],
            status=data["status"],
            summary=data.get("summary", ""),
            target=Target(data["target"]["receive_id_type"], data["target"]["receive_id"]),
            card_id=data.get("event_id"),
            revision=data.get("revision"),
            markdown=data.get("format") == "markdown",
        )


@dataclass(frozen=True)
class Card:
    """What one external event shows: a shared card (so later revisions can update it for everyone)."""

    title: str
    status: str
    summary: str
    event_type: str
    markdown: bool = False  # the summary as lark_md (links, mentions); otherwise shown as plain text


@dataclass(frozen=True)
class Job:
    service_id: str
    seq: int  # the service's receive sequence: the one order its jobs run in
    event: ExternalEvent
    content_hash: str
    received_at_ms: int
    status: JobStatus = JobStatus.QUEUED
    attempts: int = 0
    attempt_id: str = ""
    lock_until_ms: int = 0
    marked_at_ms: int = 0  # set before the first external write of the current attempt
    next_attempt_at_ms: int = 0
    last_error: str = ""
    outcome: str = ""  # sent | updated | stale_revision | same_revision | target_not_allowed | resolved_sent | ...
    message_id: str = ""
    finished_at_ms: int = 0
    blocked_at_ms: int = 0
    generation: int = 0  # bumped by each operator resolution
    resolutions: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    first_marked_at_ms: int = 0  # the first mark of all its attempts: Feishu's uuid window runs from it
    heals: int = 0  # Herald's tries at settling it while unknown
    next_heal_at_ms: int = 0  # unknown: when Herald tries to settle it next (0: an operator decides)
    evidence: tuple[str, ...] = ()  # what happened to it while unknown, one line each

    def settling(self, attempt_id: str, lease_until_ms: int, now: int) -> Job:
        """This unknown job taken back to running, marked, for one more try at settling it."""
        return replace(
            self,
            status=JobStatus.RUNNING,
            attempt_id=attempt_id,
            lock_until_ms=lease_until_ms,
            marked_at_ms=now,
            heals=self.heals + 1,
            next_heal_at_ms=0,
        )

    def blocked_since(self, now: int) -> int:
        """When the job blocked: `now`, unless it is blocking again after Herald's tries at settling it."""
        return self.blocked_at_ms if self.heals else now

    @property
    def awaiting_operator(self) -> bool:
        """Blocked, and Herald will not move it on by itself."""
        return self.status is JobStatus.FAILED or (self.status is JobStatus.UNKNOWN and not self.next_heal_at_ms)

    @property
    def job_id(self) -> str:
        return format_job_id(self.service_id, self.seq)

    @property
    def feishu_uuid(self) -> str:
        """Feishu sends at most one message per uuid an hour: every attempt of this job uses the same one."""
        return hashlib.sha256(f"herald:{self.job_id}".encode()).hexdigest()[:40]


def format_job_id(service_id: str, seq: int) -> str:
    return f"{service_id}:{seq}"


def parse_job_id(job_id: str) -> tuple[str, int]:
    service_id, sep, seq = job_id.rpartition(":")
    if not sep or not service_id or not seq.isascii() or not seq.isdigit():
        raise ValueError(f"a job id reads SERVICE:SEQ, not {job_id!r}")
    return service_id, int(seq)


@dataclass(frozen=True)
class ServiceHead:
    """A service's receive counter (`next_seq`: the last assigned, received at `last_received_at_ms`) and
    cursor (`done_seq`: every job up to it is finished)."""

    service_id: str
    next_seq: int = 0
    done_seq: int = 0
    last_received_at_ms: int = 0


@dataclass(frozen=True)
class CardMessage:
    """Where a card (service, card id, receiver) was delivered, and which revision it shows."""

    message_id: str
    revision: int
    content_hash: str


class CardDecision(StrEnum):
    SEND = "send"
    UPDATE = "update"
    STALE = "stale_revision"
    SAME = "same_revision"
    CONFLICT = "revision_conflict"


def decide_card(current: CardMessage | None, revision: int, new_hash: str) -> CardDecision:
    """Revisions only move forward: older or identical never overwrite; same revision, other content conflicts."""
    if current is None:
        return CardDecision.SEND
    if revision > current.revision:
        return CardDecision.UPDATE
    if revision < current.revision:
        return CardDecision.STALE
    return CardDecision.SAME if new_hash == current.content_hash else CardDecision.CONFLICT


@dataclass(frozen=True)
class Accepted:
    event_id: str
    duplicate: bool


class StaleJob(Exception):
    """The job changed since it was read (another worker, an operator): read it again."""


class DuplicateEvent(Exception):
    def __init__(self, stored: StoredEvent) -> None:
        super().__init__(f"event {stored.event_id} was already received")
        self.stored = stored


@dataclass(frozen=True)
class StoredEvent:
    event_id: str
    seq: int
    content_hash: str
    received_at_ms: int


@dataclass(frozen=True)
class CardWrite:
    """The card mapping a finished job leaves, written only if the mapping still shows `expected_revision`."""

    service_id: str
    card_id: str
    target: Target
    card: CardMessage
    expected_revision: int | None  # None: no mapping may exist yet
