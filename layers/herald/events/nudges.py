"""External events, the dispatch messages: what a stored change of a job calls for (the table's stream is the
outbox), and the janitor's nudges for side effects left behind."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from herald.clock import Clock, now_ms
from herald.events.jobs import Job, JobStatus
from herald.events.models import Lane

DISPATCH_VERSION = 1  # the dispatch message's shape: a worker refuses one newer than it reads (dead-lettered, kept)


@dataclass(frozen=True)
class Nudge:
    """A dispatch message: `lane` (a service, or one target of it) has work (a new job, or a blocked one
    resolved or removed)."""

    lane: str
    seq: int
    why: str

    @property
    def dedup_id(self) -> str:
        return f"{self.lane}:{self.seq}:{self.why}"

    def to_message(self) -> dict[str, Any]:
        return {"v": DISPATCH_VERSION, "lane": self.lane, "seq": self.seq, "why": self.why}

    @staticmethod
    def lane_of(message: dict[str, Any]) -> str:
        """The lane a message names; one published before lanes names its service, which is its lane; one
        published before versions is version 0."""
        version = message.get("v", 0)
        if not isinstance(version, int) or isinstance(version, bool) or not 0 <= version <= DISPATCH_VERSION:
            raise ValueError(f"a dispatch message of version {version!r}: this worker reads up to {DISPATCH_VERSION}")
        lane = message.get("lane", message.get("service_id"))
        if not isinstance(lane, str):
            raise ValueError("a dispatch message names its lane")
        return Lane.parse(lane).key


def nudges_for(old: Job | None, new: Job | None) -> list[Nudge]:
    """The dispatch messages one stored change of a job calls for (the table's stream is the outbox).
    A retry needs none: the message that ran the attempt comes back for it; nor does a worker taking an
    unknown job back to running to settle it (that worker carries on, or the janitor finds its lease ended)."""
    if new is not None and old is None:
        return [Nudge(new.lane.key, new.seq, "new")]
    unblocked = new is None or not (new.status.blocking or new.status is JobStatus.RUNNING)
    if old is not None and old.status.blocking and unblocked:
        why = "removed" if new is None else f"resolved-{new.generation}"
        return [Nudge(old.lane.key, old.seq, why)]
    return []


class OverdueJobs(Protocol):
    """Where the events janitor looks: marked jobs whose lease ended, and blocked jobs."""

    def in_flight_until(self, before_ms: int) -> list[Job]: ...

    def blocked(self) -> list[Job]: ...


class EventsJanitor:
    """Every minute: a nudge for each lane whose side effect was left behind, so a worker settles it
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
            (job, job.next_settle_at_ms)
            for job in self._store.blocked()
            if job.status is JobStatus.UNKNOWN and 0 < job.next_settle_at_ms < before
        ]
        nudges = [Nudge(job.lane.key, job.seq, f"overdue-{job.settle_tries}-{due}") for job, due in left]
        for nudge in nudges:
            self._nudge(nudge)
        return nudges
