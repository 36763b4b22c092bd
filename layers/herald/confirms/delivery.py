"""Pushing confirms to Tencent IM: which pushes a change causes, and delivering one exactly once.

A new confirm pushes an `im_confirm` to its receiver; reaching a terminal state pushes an
`im_confirm_update`. Each is one C2C custom message from the sender to the receiver with
`SyncOtherMachine=1`, so both parties' devices get it (the update also sets `NoUnread`/`NoLastMsg`: it only
greys buttons). A delivery record per push keeps its `MsgRandom` (reused by every retry, so Tencent can
drop a duplicate), its attempts and last error, and whether it was sent: a redelivered push that was
already sent sends nothing.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from herald import budgets
from herald.circuits import AppCircuit, Unguarded, waits_for_app
from herald.clock import Clock, now_ms, utc_text
from herald.confirms.models import Confirm, ConfirmStatus, CustomMessage, Delivery, SendResult
from herald.errors import DeliveryError
from herald.limits.shares import EqualShares, Share

IM_CONFIRM = "im_confirm"
IM_CONFIRM_UPDATE = "im_confirm_update"
SENDMSG = "sendmsg"  # Tencent IM's APIs a push calls, each paced on its own
ROAMMSG = "admin_getroammsg"
THROTTLED_TRIES = 3  # rate-limit answers to one push taken in one invocation before it waits on the queue
T = TypeVar("T")


@dataclass(frozen=True)
class Push:
    """One message on the IM queue."""

    app_code: str
    confirm_id: str
    kind: str  # im_confirm | im_confirm_update
    status: str

    @property
    def delivery_key(self) -> str:
        return self.kind if self.kind == IM_CONFIRM else f"{self.kind}:{self.status}"

    @classmethod
    def for_delivery(cls, app_code: str, confirm_id: str, delivery_key: str) -> Push:
        """The push a delivery record is about (its key is the push's `delivery_key`)."""
        kind, _, status = delivery_key.partition(":")
        return cls(app_code, confirm_id, kind, status or "pending")

    @property
    def dedup_id(self) -> str:
        return f"{self.confirm_id}:{self.delivery_key}"

    def to_message(self) -> dict[str, str]:
        return {
            "app_code": self.app_code,
            "confirm_id": self.confirm_id,
            "kind": self.kind,
            "status": self.status,
        }

    @classmethod
    def from_message(cls, body: dict[str, Any]) -> Push:
        return cls(app_code=body["app_code"], confirm_id=body["confirm_id"], kind=body["kind"], status=body["status"])


def pushes_for(old: Confirm | None, new: Confirm) -> list[Push]:
    """The pushes one stored change of a confirm calls for."""
    if old is None and new.status is ConfirmStatus.PENDING:
        return [Push(new.app_code, new.confirm_id, IM_CONFIRM, str(new.status))]
    if new.status.terminal and (old is None or old.status != new.status):
        return [Push(new.app_code, new.confirm_id, IM_CONFIRM_UPDATE, str(new.status))]
    return []


class DeliveryStore(Protocol):
    def begin(self, app_code: str, confirm_id: str, key: str, msg_random: int, now: int) -> Delivery:
        """The delivery record, created on first sight with this MsgRandom (kept on later calls)."""
        ...

    def sending(self, delivery: Delivery, now: int) -> None:
        """Record that a call to Tencent starts (kept from the first such call until an outcome is recorded)."""
        ...

    def sent(self, delivery: Delivery, result: SendResult, now: int) -> None: ...

    def failed(self, delivery: Delivery, error: str, permanent: bool, now: int) -> None: ...

    def for_confirm(self, app_code: str, confirm_id: str) -> list[Delivery]: ...

    def failures(self, limit: int) -> list[Delivery]: ...


class ImSender(Protocol):
    def send(self, message: CustomMessage) -> SendResult: ...

    def find_sent(
        self, from_account: str, to_account: str, msg_random: int, since_s: int, until_s: int
    ) -> SendResult | None: ...


class ImPace(Protocol):
    def wait(self, api: str, budget_ms: Callable[[], int], share: Share | None = None) -> int:
        """0 once a call to `api` may go (its token taken, waiting while `budget_ms()` allows), else the ms
        it would still have to wait. `share`: the tenant's, in the app's fair share (None: none)."""
        ...

    def refused(self, api: str) -> None:
        """Tencent answered a call to `api` with its rate-limit code: slow down."""
        ...


class TenantShares(Protocol):
    def of_tenant(self, tenant: str) -> Share | None:
        """A tenant's pushes as one sharer of its Tencent IM app, with its weight registered now."""
        ...


class PermanentDeliveryFailure(Exception):
    """This push can never be delivered: it goes to the dead-letter queue with this reason."""


class RetryableDeliveryFailure(Exception):
    """Worth another try later: the push comes back after a backoff that grows with `attempts`."""

    def __init__(self, message: str, attempts: int) -> None:
        super().__init__(message)
        self.attempts = attempts


class DeliveryPaced(Exception):
    """Not tried now: Tencent IM's pace leaves no call for this push in the invocation's time. It comes back
    after `delay_ms`; no attempt is counted (waiting for a token is not a failure)."""

    def __init__(self, message: str, delay_ms: int) -> None:
        super().__init__(message)
        self.delay_ms = delay_ms


def new_msg_random() -> int:
    """A 32-bit unsigned MsgRandom, chosen once per message and kept for its retries."""
    return secrets.randbelow(2**32)


def message_for(confirm: Confirm, push: Push, msg_random: int) -> CustomMessage:
    data: dict[str, Any] = {
        "type": push.kind,
        "version": 1,
        "confirm_id": confirm.confirm_id,
        "business_type": confirm.business_type,
        "business_subtype": confirm.business_subtype,
        "msg": confirm.message_text,
        "status": push.status,
        "actions": [button.to_dict() for button in confirm.buttons],
        "created_at_ms": confirm.created_at_ms,
        "expire_at_ms": confirm.expire_at_ms,
    }
    if push.kind == IM_CONFIRM_UPDATE:
        data["processed_action"] = confirm.processed_action
        data["processed_at_ms"] = confirm.processed_at_ms
    return CustomMessage(
        from_account=confirm.sender_user_id,
        to_account=confirm.receiver_user_id,
        msg_random=msg_random,
        data=data,
        desc=IM_CONFIRM,
        ext=IM_CONFIRM,
        send_msg_control=("NoUnread", "NoLastMsg") if push.kind == IM_CONFIRM_UPDATE else (),
    )


class ConfirmDelivery:
    """Herald, not the queue, decides when a push has failed for good: after `max_attempts` calls that
    Tencent answered with a retryable error. A push that waited behind another in its receiver's message
    group was received without being tried, so SQS's receive count is only a backstop for messages that
    fail before any call (the template's maxReceiveCount leaves room for both)."""

    def __init__(
        self,
        confirms: Any,
        deliveries: DeliveryStore,
        im: ImSender,
        max_attempts: int,
        history_ms: int,
        clock: Clock = now_ms,
        pace: ImPace | None = None,
        circuit: AppCircuit | None = None,
        shares: TenantShares | None = None,
    ) -> None:
        self._pace = pace
        self._shares = shares or EqualShares()
        self._circuit = circuit or Unguarded()  # the IM client's calls go through it
        self._confirms = confirms  # a ConfirmStore (only `get` is used)
        self._deliveries = deliveries
        self._im = im
        self._max_attempts = max_attempts
        self._clock = clock
        self._history_ms = history_ms  # how far back Tencent's roaming history reaches

    def deliver(self, push: Push) -> Delivery:
        confirm: Confirm | None = self._confirms.get(push.app_code, push.confirm_id)
        if confirm is None:
            raise PermanentDeliveryFailure(f"confirm {push.confirm_id} does not exist")
        if wait := self._circuit.wait_ms():  # before the push's first write: a push its app refuses writes nothing
            raise DeliveryPaced(f"Tencent IM app of {push.app_code or 'the stack'}: its circuit refuses calls", wait)
        key = push.delivery_key
        delivery = self._deliveries.begin(push.app_code, push.confirm_id, key, new_msg_random(), self._clock())
        if delivery.status == "sent":
            return delivery
        try:
            if delivery.sending_since_ms and (found := self._sent_earlier(push, confirm, delivery)) is not None:
                self._deliveries.sent(delivery, found, self._clock())
                return delivery
            budgets.ensure_time_for_provider_call("IM send")  # before the record that a call starts
            self._deliveries.sending(delivery, self._clock())
            message = message_for(confirm, push, delivery.msg_random)
            result = self._paced(SENDMSG, push.app_code, lambda: self._im.send(message))
        except DeliveryError as exc:
            if wait := waits_for_app(exc, self._circuit):  # the app is parked: the push waits for it, uncounted
                raise DeliveryPaced(f"Tencent IM app waits: {exc}", wait) from exc
            attempts = delivery.attempts + 1
            reason = str(exc) if not exc.retryable else f"gave up after {attempts} attempts: {exc}"
            if exc.retryable and attempts < self._max_attempts:
                self._deliveries.failed(delivery, str(exc), permanent=False, now=self._clock())
                raise RetryableDeliveryFailure(str(exc), attempts) from exc
            self._deliveries.failed(delivery, reason, permanent=True, now=self._clock())
            raise PermanentDeliveryFailure(reason) from exc
        self._deliveries.sent(delivery, result, self._clock())
        return delivery

    def _sent_earlier(self, push: Push, confirm: Confirm, delivery: Delivery) -> SendResult | None:
        """An earlier call's answer was lost (the sender died, or no answer came): Tencent may have the message.
        Its history, not a second send, says so; MsgRandom only deduplicates sends within the same second, so
        history is the only proof, and only while Tencent keeps it."""
        if self._clock() - delivery.sending_since_ms > self._history_ms:
            raise PermanentDeliveryFailure(
                f"an earlier send (at {utc_text(delivery.sending_since_ms)}) may have arrived, and Tencent "
                f"IM's history no longer reaches back to it ({self._history_ms // 86_400_000} days): not "
                "sent again; look in the conversation, then redrive or drop the push"
            )
        return self._paced(
            ROAMMSG,
            push.app_code,
            lambda: self._im.find_sent(
                confirm.sender_user_id,
                confirm.receiver_user_id,
                delivery.msg_random,
                since_s=delivery.sending_since_ms // 1000 - 1,
                until_s=self._clock() // 1000 + 1,
            ),
        )

    def _paced(self, api: str, tenant: str, call: Callable[[], T]) -> T:
        """`call` under Tencent IM's pace (the tenant's share of the app): it waits for the app's token while the
        invocation allows, and a rate-limit answer (nothing was done) slows the bucket and waits again, a few
        times, before the push goes back to the queue untried."""
        if self._pace is None:
            return call()
        share = self._shares.of_tenant(tenant)
        for _ in range(THROTTLED_TRIES):
            if wait := self._pace.wait(api, budgets.spare_ms, share):
                raise DeliveryPaced(f"Tencent IM {api}: the next call is {wait} ms away", wait)
            try:
                return call()
            except DeliveryError as exc:
                if not exc.throttled:
                    raise
                self._pace.refused(api)
        raise DeliveryPaced(f"Tencent IM {api}: refused by its rate limit {THROTTLED_TRIES} times", 1000)
