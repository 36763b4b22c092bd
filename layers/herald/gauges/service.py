"""Reads the gauges from the stores' own indexes of things needing attention (all sparse, so a healthy
stack reads next to nothing)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from herald.clock import Clock, now_ms
from herald.confirms.models import Confirm, Delivery
from herald.events.jobs import Job, JobStatus
from herald.turns.models import Due

SCAN_LIMIT = 1000  # counted up to this many of each; an alarm fires long before


class BlockedJobs(Protocol):
    def blocked(self) -> list[Job]: ...


class DueConfirms(Protocol):
    def due(self, now: int, limit: int) -> list[Confirm]: ...


class FailedDeliveries(Protocol):
    def failures(self, limit: int) -> list[Delivery]: ...


class DueTurns(Protocol):
    def due(self, before_ms: int, limit: int) -> Sequence[Due]: ...


@dataclass(frozen=True)
class Gauges:
    events_unknown_jobs: int  # waiting for an operator (Herald could not settle them)
    events_unknown_settling: int  # Herald is still settling them
    events_failed_jobs: int
    events_blocked_services: int
    events_blocked_lanes: int  # a service ordering by target has a lane per target; otherwise one lane
    events_oldest_blocked_age_seconds: float
    confirms_stuck: int
    im_push_failed_deliveries: int
    turns_stuck: int

    def metrics(self) -> dict[str, tuple[float, str]]:
        """Metric name -> (value, unit), as CloudWatch and the template's alarms name them."""
        return {
            "EventsUnknownJobs": (self.events_unknown_jobs, "Count"),
            "EventsUnknownSettling": (self.events_unknown_settling, "Count"),
            "EventsFailedJobs": (self.events_failed_jobs, "Count"),
            "EventsBlockedServices": (self.events_blocked_services, "Count"),
            "EventsBlockedLanes": (self.events_blocked_lanes, "Count"),
            "EventsOldestBlockedAge": (self.events_oldest_blocked_age_seconds, "Seconds"),
            "ConfirmsStuck": (self.confirms_stuck, "Count"),
            "ImPushFailedDeliveries": (self.im_push_failed_deliveries, "Count"),
            "TurnsStuck": (self.turns_stuck, "Count"),
        }


class HealthGauges:
    def __init__(
        self,
        jobs: BlockedJobs,
        confirms: DueConfirms,
        deliveries: FailedDeliveries,
        turns: DueTurns,
        confirm_grace_ms: int,
        turn_grace_ms: int,
        clock: Clock = now_ms,
    ) -> None:
        self._jobs = jobs
        self._confirms = confirms
        self._deliveries = deliveries
        self._turns = turns
        self._confirm_grace_ms = confirm_grace_ms
        self._turn_grace_ms = turn_grace_ms
        self._clock = clock

    def read(self) -> Gauges:
        now = self._clock()
        blocked = self._jobs.blocked()
        oldest = min((job.blocked_at_ms for job in blocked), default=now)
        # Past their time by more than the janitors' own period (they run every minute), i.e. not repaired.
        return Gauges(
            events_unknown_jobs=sum(job.status is JobStatus.UNKNOWN and job.awaiting_operator for job in blocked),
            events_unknown_settling=sum(
                job.status is JobStatus.UNKNOWN and not job.awaiting_operator for job in blocked
            ),
            events_failed_jobs=sum(job.status is JobStatus.FAILED for job in blocked),
            events_blocked_services=len({job.service_id for job in blocked}),
            events_blocked_lanes=len({job.lane.key for job in blocked}),
            events_oldest_blocked_age_seconds=round(max(0, now - oldest) / 1000, 1),
            confirms_stuck=len(self._confirms.due(now - self._confirm_grace_ms, SCAN_LIMIT)),
            im_push_failed_deliveries=len(self._deliveries.failures(SCAN_LIMIT)),
            turns_stuck=len(self._turns.due(now - self._turn_grace_ms, SCAN_LIMIT)),
        )
