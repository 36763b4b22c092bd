"""External events, delivery's ports: the job store as the dispatcher uses it, where a service may send, the
Feishu client, and the pace of Herald's calls to Feishu."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from herald.auth.models import DeliveryScope
from herald.events.cards import CardMessage, CardWrite
from herald.events.jobs import Job
from herald.events.models import Card, LaneHead, Target
from herald.limits.governor import Look
from herald.limits.shares import Share

Budget = Callable[[], int]  # the ms a caller may still wait
Meanwhile = Callable[[], object]  # the caller's last step before its call


class DispatchStore(Protocol):
    """What the dispatcher reads, and its writes: a job's step, and the cursor moved past finished jobs."""

    def head(self, lane: str) -> LaneHead: ...

    def job(self, lane: str, seq: int) -> Job | None: ...

    def card(self, service_id: str, card_id: str, target: Target) -> CardMessage | None: ...

    def waiting(self, lane: str, after_seq: int, limit: int) -> list[Job]:
        """The lane's jobs after `after_seq`, in order, at most `limit` of them."""
        ...

    def advance(self, lane: str, from_seq: int, to_seq: int) -> None:
        """Move the lane's cursor from `from_seq` to `to_seq` (no-op if someone already did)."""
        ...

    def commit(
        self, before: Job, after: Job, at_ms: int, *, card: CardWrite | None = None, advance: bool = False
    ) -> Job:
        """`after` over `before` if the stored job is still as `before` (StaleJob if not); with the card
        mapping it leaves, and, when `advance`, its lane's cursor moved past it."""
        ...

    def supersede(self, run: Sequence[tuple[Job, Job]], at_ms: int) -> None:
        """Jobs passed over from the head of their lane, in order: each `after` (superseded) over `before`, and
        the cursor past the last, in one write; StaleJob, and nothing written, if any of them moved."""
        ...


class TargetPolicy(Protocol):
    def delivery_scope(self, service_id: str) -> DeliveryScope:
        """Where the service's events may go now (`receive_id_type:receive_id`), and its weight in a shared app."""
        ...


class Messenger(Protocol):
    app_id: str  # the Feishu app it calls as: a card's message is updated only by the app that sent it

    def tenant_access_token(self) -> str: ...

    def send_card(self, receive_id_type: str, receive_id: str, card: Card, uuid: str) -> str: ...

    def update_card(self, message_id: str, card: Card) -> None: ...


class Pace(Protocol):
    """Herald's calls to Feishu, kept under its published limits (herald.events.pacing)."""

    def wait(self, target: Target, budget_ms: Budget, meanwhile: Meanwhile, share: Share | None = None) -> int:
        """Reserve a call's moment to `target`, run `meanwhile`, and wait for the moment while `budget_ms()`
        allows; the ms still to wait when it does not (then `meanwhile` does not run; 0: the call may go).
        `share`: whose call it is, in the app's fair share (None: none)."""
        ...

    def look(self, target: Target, budget_ms: int, share: Share | None = None) -> Look:
        """Before a job is claimed: how long until a call to `target` could go, when beyond `budget_ms`, and
        whether `share`'s part of the app is what holds it back (nothing to wait for: `Look()`)."""
        ...

    def refused(self, target: Target, scope: str, retry_after_ms: int = 0) -> None:
        """Feishu refused a call to `target` by its rate limit (`scope`: `app` or `chat`): hold there for as long
        as it asked (`retry_after_ms`), or slow down when it did not say."""
        ...


class Shares(Protocol):
    def of(self, tenant: str | None, service_id: str, weight: int = 1) -> Share | None:
        """Whose a job's calls are in its app's fair share: its service's `weight`, its tenant's registered now
        (None: no share)."""
        ...
