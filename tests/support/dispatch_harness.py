"""A lane's dispatcher on the in-memory store with a scripted Feishu and a fake clock: what the dispatcher's unit
tests (settling unknown jobs, a card's life) drive."""

from __future__ import annotations

from herald.circuits import Circuit, CircuitLimits
from herald.errors import DeliveryError
from herald.events.apps import OneApp
from herald.events.dispatch import EventDispatcher
from herald.events.drained import Drained, DrainResult
from herald.events.jobs import Job
from herald.events.models import Card, ExternalEvent
from herald.events.policy import FEISHU_UUID_WINDOW_MS, DispatchPolicy
from herald.events.service import EventIntake
from tests.support.clock import FakeClock
from tests.support.fakes import AdmitAll, FixedTargets, InMemoryCircuitStore, InMemoryJobStore, PartnerKey

TARGET = {"receive_id": "oc_1", "receive_id_type": "chat_id"}
ALLOWED = frozenset({"chat_id:oc_1"})
LEASE_MS = 60_000
WINDOW_MS = FEISHU_UUID_WINDOW_MS - 300_000


class Crash(Exception):
    """The worker dies here (as a Lambda timeout would end it)."""


class ScriptedFeishu:
    """Feishu as its documentation describes it: one message per uuid within the hour (the same message id
    answered again), a PATCH replaces a card. `next` scripts what happens to the coming calls:
    "ok", "lost" (Feishu acts, the answer is an HTTP 500 without a code), "hang" (Feishu acts, no answer),
    "busy" (Feishu's rate-limit code: not acted), "gone" (an update of a recalled or deleted message: 230011, not
    acted, never will), "too_old" (an update past Feishu's 14 days: 230031), "crash" (Feishu acts, then the
    worker dies), "refused" (an update refused for a reason that says nothing of an earlier one: 230002)."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.app_id = "cli_stack"
        self.next: list[str] = []
        self.messages: dict[str, list[str]] = {}  # message id -> its card titles, in order
        self.cards: dict[str, list[Card]] = {}  # message id -> the cards it showed, in order
        self.updated: list[str] = []  # the message ids updates were made to
        self.by_uuid: dict[str, tuple[str, int]] = {}  # uuid -> (message id, when first sent)
        self.calls: list[str] = []
        self.token_errors: list[DeliveryError] = []  # what the coming token requests fail with

    def tenant_access_token(self) -> str:
        if self.token_errors:
            raise self.token_errors.pop(0)
        return "t"

    def _outcome(self) -> str:
        return self.next.pop(0) if self.next else "ok"

    def _after_acting(self, outcome: str) -> None:
        if outcome == "lost":
            raise DeliveryError("send: Feishu answered HTTP 500 (-1)", retryable=True, maybe_delivered=True)
        if outcome == "hang":
            raise DeliveryError("send failed in transit: read timed out", retryable=True, maybe_delivered=True)
        if outcome == "crash":
            raise Crash

    def send_card(self, receive_id_type: str, receive_id: str, card: Card, uuid: str) -> str:
        self.calls.append(f"send {card.title}")
        outcome = self._outcome()
        if outcome == "busy":
            raise DeliveryError("send: Feishu error 99991400", retryable=True)
        first = self.by_uuid.get(uuid)
        if first is not None and self.clock() - first[1] < FEISHU_UUID_WINDOW_MS:
            message_id = first[0]
        else:
            message_id = f"om_{len(self.messages) + 1}"
            self.messages[message_id] = [card.title]
            self.cards[message_id] = [card]
            self.by_uuid[uuid] = (message_id, self.clock())
        self._after_acting(outcome)
        return message_id

    def update_card(self, message_id: str, card: Card) -> None:
        self.calls.append(f"update {card.title}")
        outcome = self._outcome()
        if outcome == "busy":
            raise DeliveryError("update: Feishu error 99991400", retryable=True)
        if outcome == "gone":
            raise DeliveryError("update: Feishu error 230011: message not found", retryable=False, code=230011)
        if outcome == "refused":
            raise DeliveryError("update: Feishu error 230002: the bot is not in the chat", retryable=False, code=230002)
        if outcome == "too_old":
            raise DeliveryError("update: Feishu error 230031: message too old", retryable=False, code=230031)
        self.updated.append(message_id)
        self.messages[message_id].append(card.title)
        self.cards[message_id].append(card)
        self._after_acting(outcome)


class Harness:
    def __init__(self) -> None:
        self.clock = FakeClock(1_000_000)
        self.store = InMemoryJobStore()
        self.feishu = ScriptedFeishu(self.clock)
        self.intake = EventIntake(self.store, AdmitAll(), self.clock)
        self.outcomes: list[str] = []
        self.policy = DispatchPolicy(lease_ms=LEASE_MS, reserve_ms=0, settle_attempts=3, send_dedup_window_ms=WINDOW_MS)
        self.circuit = Circuit(InMemoryCircuitStore(), "feishu:cli_stack", CircuitLimits(), self.clock)

    def post(self, event_id: str, title: str, card_id: str | None = None, revision: int | None = None) -> None:
        data: dict[str, object] = {"title": title, "status": "running", "summary": "", "target": TARGET}
        if card_id is not None:
            data.update({"event_id": card_id, "revision": revision})
        self.intake.accept(
            PartnerKey("svc", ALLOWED), ExternalEvent.from_content(event_id, {"event_type": "t", "data": data})
        )

    def dispatcher(self) -> EventDispatcher:
        return EventDispatcher(
            self.store,
            FixedTargets(ALLOWED),
            OneApp(self.feishu, circuit=self.circuit),
            self.policy,
            nudge=lambda nudge: None,
            clock=self.clock,
            on_outcome=lambda job, outcome: self.outcomes.append(outcome),
        )

    def drained(self) -> Drained:
        return self.dispatcher().drain("svc", lambda: 10**9)

    def drain(self) -> DrainResult:
        return self.drained().result

    def waits(self) -> int:
        """The lane must wait (its head is not due): in how long to ask again."""
        drained = self.drained()
        assert drained.result is DrainResult.WAITING, drained
        return drained.retry_in_ms

    def job(self, seq: int = 1) -> Job:
        return self.store.jobs[("svc", seq)]

    def drain_until_settled(self, limit: int = 10) -> DrainResult:
        """Drain, and after each wait, wait out its delay (as the queue's hidden message would)."""
        for _ in range(limit):
            drained = self.drained()
            if drained.result is not DrainResult.WAITING:
                return drained.result
            self.clock.advance(drained.retry_in_ms)
        raise AssertionError("never settled")
