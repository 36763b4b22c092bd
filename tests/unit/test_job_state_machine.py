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
# The next call's fault: raised before Feishu acts (a clear no, a refusal) or after (done, and not answered).
FAULTS = {
    "no": (True, DeliveryError("Feishu answered HTTP 500", retryable=True)),
    "refused": (True, DeliveryError("Feishu refused the card", retryable=False, code=230002)),
    "acted_unanswered": (False, DeliveryError("Feishu did not answer in time", retryable=True, maybe_delivered=True)),
}


class Feishu:
    """Feishu as documented: a send with a uuid it has seen answers the same message; a message shows the card
    it was last written with. Its next call may fail as `fault` names (FAULTS)."""

    app_id = "cli_stack"

    def __init__(self) -> None:
        self.by_uuid: dict[str, str] = {}
        self.shown: dict[str, list[str]] = {}  # message id -> the titles it showed, in order
        self.fault: str | None = None

    def tenant_access_token(self) -> str:
        return "token"

    def _fails(self, before_acting: bool) -> None:
        if self.fault is not None and FAULTS[self.fault][0] is before_acting:
            error, self.fault = FAULTS[self.fault][1], None
            raise error

    def send_card(self, receive_id_type: str, receive_id: str, card: Card, uuid: str) -> str:
        self._fails(before_acting=True)
        message_id = self.by_uuid.setdefault(uuid, f"om_{len(self.by_uuid) + 1}")
        self.shown.setdefault(message_id, [card.title])
        self._fails(before_acting=False)
        return message_id

    def update_card(self, message_id: str, card: Card) -> None:
        self._fails(before_acting=True)
        self.shown[message_id].append(card.title)
        self._fails(before_acting=False)


def revision(card: str, number: int, event_id: str) -> ExternalEvent:
    data = {"title": f"{card} r{number}", "status": "running", "summary": "", "target": TARGET,
            "event_id": card, "revision": number}  # fmt: skip
    return ExternalEvent.from_content(event_id, {"event_type": "job.progress", "data": data})


class JobMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.store, self.clock, self.feishu = InMemoryJobStore(), FakeClock(1_000_000), Feishu()
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

    @rule(fault=st.sampled_from(sorted(FAULTS)))
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
