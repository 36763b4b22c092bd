"""External events, what became of them (contract §3): a partner reads the fate of its own events with the key it
posts them with, one by its event id or a page of them, newest first. An event is read only by keys of its
service and of the tenant it was accepted for; another's event and an event that does not exist (or whose
retention ended) read the same: not found."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from herald.errors import InvalidArgument, NotFound
from herald.events.jobs import Job, JobStatus

MAX_PAGE_SIZE = 100


class FateStatus(StrEnum):
    """An event's status as its partner reads it: its job's, or `held` for a queued one an operator's pause (or
    its tenant's disabling) holds: nothing of it is sent until the pause ends."""

    QUEUED = "queued"
    HELD = "held"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    REJECTED = "rejected"
    SKIPPED = "skipped"
    SUPERSEDED = "superseded"
    FAILED = "failed"
    UNKNOWN = "unknown"


class StatusStore(Protocol):
    def event_job(self, service_id: str, event_id: str) -> Job | None:
        """The job of the service's event `event_id` (None: no such event, or its retention ended)."""
        ...

    def service_jobs(
        self, service_id: str, tenant: str, status: JobStatus | None, limit: int, page_token: str
    ) -> tuple[list[Job], str]:
        """A page of the service's jobs accepted for `tenant` (or before tenants were recorded), newest first (of
        `status` only, when given), and the next page's token."""
        ...


def event_fate(job: Job, held: bool = False) -> dict[str, Any]:
    """A job as its partner sees it: where it is (`held` while a pause holds it), what it went to, what replaced or
    continued it, and each call Herald made to Feishu for it (never an app, a key, an operator's name or another
    service's anything)."""
    event = job.event
    replaced = next((r for r in reversed(job.resolutions) if r.get("action") == "superseded"), None)
    return {
        "event_id": event.event_id,
        "event_type": event.event_type,
        "status": str(FateStatus.HELD if held else job.status),
        "blocked": job.status.blocking,  # it holds up the events behind it until it is settled or resolved
        "card": {"event_id": event.card_id, "revision": event.revision} if event.card_id is not None else None,
        "target": {"receive_id_type": event.target.receive_id_type, "receive_id": event.target.receive_id},
        "message_id": job.message_id or None,
        "superseded_by": (
            {"revision": replaced.get("revision"), "event_id": replaced.get("event_id")} if replaced else None
        ),
        "continued_from": job.continued_from or None,
        "attempts": [
            {"at_ms": call["at_ms"], "operation": call["operation"], "outcome": call["outcome"], "code": call["code"]}
            for call in job.calls
        ],
        "accepted_at_ms": job.received_at_ms,
        "completed_at_ms": job.finished_at_ms if job.status.completed and job.finished_at_ms else None,
    }


@dataclass(frozen=True)
class EventPage:
    items: list[dict[str, Any]]
    next_page_token: str


class EventStatuses:
    """A partner's reads of its own events. `held(job)`: whether a pause (or its tenant's disabling) holds the
    job's lane now."""

    def __init__(self, store: StatusStore, held: Callable[[Job], bool] = lambda _: False) -> None:
        self._store = store
        self._held = held

    def _fate(self, job: Job) -> dict[str, Any]:
        return event_fate(job, job.status is JobStatus.QUEUED and self._held(job))

    def get(self, service_id: str, tenant: str, event_id: str) -> dict[str, Any]:
        """The event's fate, read by a key of its service and of the tenant it was accepted for."""
        job = self._store.event_job(service_id, event_id)
        if job is None or job.service_id != service_id or job.tenant not in (None, tenant):
            raise NotFound("no such event")
        return self._fate(job)

    def list(self, service_id: str, tenant: str, status: str | None, page_size: int, page_token: str) -> EventPage:
        if not 1 <= page_size <= MAX_PAGE_SIZE:
            raise InvalidArgument(f"page_size is 1 to {MAX_PAGE_SIZE}")
        try:
            wanted = FateStatus(status) if status else None
        except ValueError as exc:
            raise InvalidArgument(f"status is one of {', '.join(FateStatus)}", reason="unknown_status") from exc
        stored = JobStatus.QUEUED if wanted is FateStatus.HELD else JobStatus(wanted) if wanted else None
        jobs, token = self._store.service_jobs(service_id, tenant, stored, page_size, page_token)
        fates = [self._fate(job) for job in jobs]
        return EventPage([fate for fate in fates if wanted in (None, fate["status"])], token)
