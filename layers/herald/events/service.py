"""External events, intake (contract §3): a partner's event is stored with its lane's next receive
sequence in the same transaction that stores it, so sequence order is commit order; 202 means stored. The
lane is the service, or the event's target when the service's key orders by target.
Delivery is herald.events.dispatch; an operator's resolutions herald.events.operations."""

from __future__ import annotations

from typing import Protocol

from herald.clock import Clock, now_ms
from herald.errors import Conflict, InvalidArgument, PermissionDenied
from herald.events.jobs import Job
from herald.events.models import Accepted, DuplicateEvent, ExternalEvent, Lane


class IntakeStore(Protocol):
    def append(self, lane: Lane, event: ExternalEvent, clock: Clock, tenant: str = "") -> Job:
        """Store the event as the lane's next job, for `tenant` (its Feishu app delivers it); DuplicateEvent if
        its event id is already held (an event id is its service's, whichever lane)."""
        ...


class Sender(Protocol):
    """The partner service posting, as its key describes it."""

    @property
    def service_id(self) -> str: ...

    @property
    def allowed_targets(self) -> frozenset[str]: ...

    @property
    def allow_markdown(self) -> bool: ...

    @property
    def target_rate(self) -> int | None: ...

    @property
    def delivery_tenant(self) -> str:
        """The tenant its events are delivered for: its key's one app_code ("" for several: the stack's apps)."""
        ...

    @property
    def orders_by_target(self) -> bool:
        """Its events run in one lane per target instead of one for the service."""
        ...


class TargetAdmission(Protocol):
    def check(self, subject: str, per_minute: int | None) -> None:
        """Count one event of `subject` (`<service>#<target>`) against the per-target limit (the key's own
        `per_minute`, else the stack's); raises RateLimited when it is over."""
        ...


class EventIntake:
    def __init__(self, store: IntakeStore, admission: TargetAdmission, clock: Clock = now_ms) -> None:
        self._store = store
        self._admission = admission
        self._clock = clock

    def accept(self, sender: Sender, event: ExternalEvent) -> Accepted:
        """202 semantics: the event is stored with its receive sequence, or was already (same content). A
        markdown summary needs a key allowed it, and never mentions anyone."""
        if event.markdown:
            if not sender.allow_markdown:
                raise PermissionDenied("this key may not send markdown cards", reason="markdown_not_allowed")
            if "<at" in event.summary.lower():
                raise InvalidArgument("data.summary: mentions are not allowed", reason="mention_not_allowed")
        self._admission.check(f"{sender.service_id}#{event.target.key}", sender.target_rate)
        if event.target.key not in sender.allowed_targets:
            raise PermissionDenied(
                "the target is not among this service's allowed targets", reason="target_not_allowed"
            )
        try:
            lane = Lane.of(sender.service_id, event.target, sender.orders_by_target)
            self._store.append(lane, event, self._clock, tenant=sender.delivery_tenant)
        except DuplicateEvent as dup:
            if dup.stored.content_hash == event.content_hash:
                return Accepted(event.event_id, duplicate=True)
            raise Conflict(
                f"event_id {event.event_id} was received at {dup.stored.received_at_ms} with other content",
                reason="event_id_reused",
                details={"received_at_ms": dup.stored.received_at_ms, "content_hash": dup.stored.content_hash},
            ) from dup
        return Accepted(event.event_id, duplicate=False)
