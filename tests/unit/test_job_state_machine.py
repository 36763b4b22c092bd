"""Issue 50, item 4: external-event delivery driven by Hypothesis through random interleavings of a partner's
revisions of two cards (in any order, repeated), two workers draining the lane (one racing the other between its
reads and its mark), Feishu answering a clear no, a refusal, or acting and then not answering (UNKNOWN, which Herald
settles inside Feishu's uuid window), an operator's resolution, and the clock passing leases and backoffs.
After every step: each card is one Feishu message, and what it shows never goes back a revision."""

from __future__ import annotations

import contextlib

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from herald.errors import DeliveryError, HeraldError
from herald.events.apps import OneApp
from herald.events.dispatch import EventDispatcher
from herald.events.jobs import JobStatus, StaleJob
from herald.events.models import Card, ExternalEvent
from herald.events.operations import EventOperations
from herald.events.policy import DispatchPolicy
from herald.events.service import EventIntake
from tests.support.clock import FakeClock
from tests.support.fakes import AdmitAll, FixedTargets, InMemoryJobStore, PartnerKey

TARGET = {"receive_id": "oc_1", "receive_id_type": "chat_id"}
PARTNER = PartnerKey("svc", frozenset({"chat_id:oc_1"}))
LEASE_MS = 60_000
FAULTS = ["no", "refused", "acted_unanswered"]


class Feishu:
    """Feishu as documented: a send with a uuid it has seen answers the same message; a message shows the card
    it was last written with. The next call may fail: a clear no (retryable), a refusal, or done and unanswered."""

    app_id = "cli_stack"

    def __init__(self) -> None:
        self.by_uuid: dict[str, str] = {}
        self.shown: dict[str, list[str]] = {}  # message id -> the titles it showed, in order
        self.fault: str | None = None

    def tenant_access_token(self) -> str:
        return "token"

    def _call(self, act: object) -> None:
        fault, self.fault = self.fault, None
        if fault == "no":
            raise DeliveryError("Feishu answered HTTP 500", retryable=True)
        if fault == "refused":
            raise DeliveryError("Feishu refused the card", retryable=False, code=230002)
        if fault == "acted_unanswered":
            raise DeliveryError("Feishu did not answer in time", retryable=True, maybe_delivered=True)

    def send_card(self, receive_id_type: str, receive_id: str, card: Card, uuid: str) -> str:
        message_id = self.by_uuid.setdefault(uuid, f"om_{len(self.by_uuid) + 1}")
        if message_id not in self.shown:
            self.shown[message_id] = [card.title]
        self._after_acting()
        return message_id

    def update_card(self, message_id: str, card: Card) -> None:
        self.shown[message_id].append(card.title)
        self._after_acting()

    def _after_acting(self) -> None:
        """Only a fault that leaves the call done stands now; the others were raised before acting."""
        if self.fault == "acted_unanswered":
            self._call(None)

    def before_acting(self) -> None:
        if self.fault in ("no", "refused"):
            self._call(None)


class FaultyFeishu(Feishu):
    def send_card(self, receive_id_type: str, receive_id: str, card: Card, uuid: str) -> str:
        self.before_acting()
        return super().send_card(receive_id_type, receive_id, card, uuid)

    def update_card(self, message_id: str, card: Card) -> None:
        self.before_acting()
        super().update_card(message_id, card)


def revision(card: str, number: int, event_id: str) -> ExternalEvent:
    data = {"title": f"{card} r{number}", "status": "running", "summary": "", "target": TARGET,
            "event_id": card, "revision": number}  # fmt: skip
    return ExternalEvent.from_content(event_id, {"event_type": "job.progress", "data": data})


class JobMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.store, self.clock, self.feishu = InMemoryJobStore(), FakeClock(1_000_000), FaultyFeishu()
        self.intake = EventIntake(self.store, AdmitAll(), self.clock)
        self.operations = EventOperations(self.store, DispatchPolicy(), self.clock)
        self.posted = 0

    def _worker(self) -> EventDispatcher:
        policy = DispatchPolicy(lease_ms=LEASE_MS, reserve_ms=0)
        targets = FixedTargets(frozenset({"chat_id:oc_1"}))
        return EventDispatcher(self.store, targets, OneApp(self.feishu), policy, nudge=lambda n: None, clock=self.clock)

    def _drain(self) -> None:
        with contextlib.suppress(StaleJob, HeraldError):
            self._worker().drain("svc", lambda: 10**9)

    @rule(card=st.sampled_from(["job-a", "job-b"]), number=st.integers(1, 4))
    def partner_posts_a_revision(self, card: str, number: int) -> None:
        self.posted += 1
        with contextlib.suppress(HeraldError):
            self.intake.accept(PARTNER, revision(card, number, f"e{self.posted}"))

    @rule()
    def worker_drains(self) -> None:
        self._drain()

    @rule()
    def worker_drains_while_another_races_it_before_its_mark(self) -> None:
        self.store.before["mark"] = [self._drain]
        self._drain()
        self.store.before.clear()

    @rule(fault=st.sampled_from(FAULTS))
    def feishus_next_call_fails(self, fault: str) -> None:
        self.feishu.fault = fault

    @rule(ms=st.sampled_from([1_000, 30_000, LEASE_MS + 1]))
    def time_passes(self, ms: int) -> None:
        self.clock.advance(ms)

    @rule()
    def operator_resolves_what_blocks(self) -> None:
        """A failed job is skipped; an unknown one is resolved with the message the operator found in Feishu
        for its uuid (or skipped where Feishu has none: nothing was sent)."""
        for job in self.store.blocked()[:1]:
            found = self.feishu.by_uuid.get(job.feishu_uuid) if job.status is JobStatus.UNKNOWN else None
            try:
                if found:
                    self.operations.sent(job.job_id, found, by="oncall")
                else:
                    self.operations.skip(job.job_id, by="oncall")
            except HeraldError:
                pass

    @invariant()
    def each_card_is_one_message_that_never_goes_back_a_revision(self) -> None:
        cards = [titles[0].split(" ")[0] for titles in self.feishu.shown.values()]
        assert len(cards) == len(set(cards)), f"a card was sent as two messages: {self.feishu.shown}"
        for titles in self.feishu.shown.values():
            numbers = [int(title.split(" r")[1]) for title in titles]
            assert numbers == sorted(numbers), f"a card went back a revision: {titles}"


JobMachine.TestCase.settings = settings(
    max_examples=120, stateful_step_count=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_a_card_never_goes_back_a_revision_whatever_the_interleaving = JobMachine.TestCase
