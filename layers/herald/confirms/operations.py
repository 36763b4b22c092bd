"""What operators see and do about confirms that did not settle or did not reach their receiver
(`herald-ops confirms stuck | repair`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from herald.clock import Clock, now_ms
from herald.confirms.delivery import DeliveryStore, Push
from herald.confirms.models import Confirm, Delivery
from herald.confirms.service import Confirms, ConfirmStore
from herald.errors import NotFound


class PushQueue(Protocol):
    def publish(self, push: Push, receiver_user_id: str, attempt: str = "") -> None: ...


@dataclass(frozen=True)
class Repaired:
    confirm: Confirm
    resent: tuple[str, ...]  # the delivery keys of the pushes sent again


@dataclass(frozen=True)
class DeliveryViewer:
    """Who asks where a confirm's pushes stand: a support reader (a key with `/internal/v1/confirms`), an owner
    service (the business types it registered), or both."""

    reader: bool
    owned: frozenset[str]

    def may_see(self, business_type: str) -> bool:
        """An owner service sees only its own business types, even with the reader's capability too."""
        return business_type in self.owned if self.owned else self.reader


class ConfirmOperations:
    def __init__(
        self,
        confirms: Confirms,
        store: ConfirmStore,
        deliveries: DeliveryStore,
        queue: PushQueue,
        clock: Clock = now_ms,
    ) -> None:
        self._confirms = confirms
        self._store = store
        self._deliveries = deliveries
        self._queue = queue
        self._clock = clock

    def stuck(self, grace_ms: int, limit: int = 100) -> list[Confirm]:
        """Pending past their expiry or processing past their lease by more than `grace_ms`: the janitor
        (every minute) should have settled them, so something stops it (the owner service is down?)."""
        return self._store.due(self._clock() - grace_ms, limit)

    def deliveries(self, app_code: str, confirm_id: str, viewer: DeliveryViewer) -> tuple[Confirm, list[Delivery]]:
        """A confirm and where its IM pushes stand (sent at, attempts, last error); one the viewer may not see
        is as absent as one that does not exist."""
        confirm = self._confirms.get(app_code, confirm_id)
        if not viewer.may_see(confirm.business_type):
            raise NotFound("no such confirm")
        return confirm, self._deliveries.for_confirm(app_code, confirm_id)

    def failed_deliveries(self, limit: int = 100) -> list[Delivery]:
        return self._deliveries.failures(limit)

    def repair(self, app_code: str, confirm_id: str) -> Repaired:
        """Settle the confirm from its owner's fact now, and send its failed pushes again (after the cause,
        e.g. an account Tencent did not know, is fixed)."""
        confirm = self._confirms.settle_now(self._confirms.get(app_code, confirm_id))
        resent = []
        for delivery in self._deliveries.for_confirm(app_code, confirm_id):
            if delivery.status == "failed":
                push = Push.for_delivery(app_code, confirm_id, delivery.key)
                self._queue.publish(push, confirm.receiver_user_id, attempt=f"repair-{self._clock()}")
                resent.append(delivery.key)
        return Repaired(confirm, tuple(resent))
