"""External events, intake (CONTRACTS §3): a partner's event is stored with its service's next receive
sequence in the same transaction that stores it, so sequence order is commit order; 202 means stored.
Delivery is herald.events.dispatch; an operator's resolutions herald.events.operations."""

from __future__ import annotations

from typing import Protocol

from herald.clock import Clock, now_ms
from herald.errors import Conflict, PermissionDenied
from herald.events.models import Accepted, DuplicateEvent, ExternalEvent, Job


class IntakeStore(Protocol):
    def append(self, service_id: str, event: ExternalEvent, clock: Clock) -> Job:
        """Store the event as the service's next job; DuplicateEvent if its event id is already held."""
        ...


class EventIntake:
    def __init__(self, store: IntakeStore, clock: Clock = now_ms) -> None:
        self._store = store
        self._clock = clock

    def accept(self, service_id: str, allowed_targets: frozenset[str], event: ExternalEvent) -> Accepted:
        """202 semantics: the event is stored with its receive sequence, or was already (same content)."""
        if event.target.key not in allowed_targets:
            raise PermissionDenied(
                "the target is not among this service's allowed targets", reason="target_not_allowed"
            )
        try:
            self._store.append(service_id, event, self._clock)
        except DuplicateEvent as dup:
            if dup.stored.content_hash == event.content_hash:
                return Accepted(event.event_id, duplicate=True)
            raise Conflict(
                f"event_id {event.event_id} was received at {dup.stored.received_at_ms} with other content",
                reason="event_id_reused",
                details={"received_at_ms": dup.stored.received_at_ms, "content_hash": dup.stored.content_hash},
            ) from dup
        return Accepted(event.event_id, duplicate=False)
