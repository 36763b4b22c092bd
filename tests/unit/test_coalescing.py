"""Superseded card revisions are coalesced: when a newer revision of the same card (service, card id,
receiver) is already waiting in the service's order, the older is not sent; each skipped job is recorded
superseded, by which revision; a card never shows an older revision after a newer one."""

from __future__ import annotations

import pytest

from herald.events.apps import OneApp
from herald.events.dispatch import EventDispatcher
from herald.events.drained import DrainResult
from herald.events.jobs import JobStatus
from herald.events.models import Card, ExternalEvent
from herald.events.policy import SUPERSEDED_AT_ONCE, DispatchPolicy
from herald.events.service import EventIntake
from tests.support.clock import FakeClock
from tests.support.fakes import AdmitAll, FixedTargets, InMemoryJobStore, PartnerKey

ALLOWED = frozenset({"chat_id:oc_1", "chat_id:oc_2"})


class Feishu:
    """Keeps each message's card as Feishu would show it, and every call in order."""

    def __init__(self) -> None:
        self.shown: dict[str, str] = {}
        self.calls: list[str] = []

    app_id = "cli_stack"

    def tenant_access_token(self) -> str:
        return "token"

    def send_card(self, receive_id_type: str, receive_id: str, card: Card, uuid: str) -> str:
        message_id = f"om_{len(self.shown) + 1}"
        self.shown[message_id] = card.title
        self.calls.append(f"send {card.title} to {receive_id}")
        return message_id

    def update_card(self, message_id: str, card: Card) -> None:
        self.shown[message_id] = card.title
        self.calls.append(f"update {message_id} to {card.title}")


class Herald:
    def __init__(self) -> None:
        self.clock = FakeClock(1_800_000_000_000)
        self.store = InMemoryJobStore()
        self.feishu = Feishu()
        self.outcomes: list[str] = []
        policy = DispatchPolicy(reserve_ms=0)
        self.dispatcher = EventDispatcher(
            self.store,
            FixedTargets(ALLOWED),
            OneApp(self.feishu),
            policy,
            nudge=lambda nudge: None,
            clock=self.clock,
            on_outcome=lambda job, outcome: self.outcomes.append(outcome),
        )
        self.intake = EventIntake(self.store, AdmitAll(), self.clock)
        self.posted = 0

    def post(self, card_id: str | None, revision: int | None, chat: str = "oc_1", title: str = "") -> None:
        self.posted += 1
        data: dict[str, object] = {
            "title": title or f"{card_id} r{revision}",
            "status": "running",
            "target": {"receive_id": chat, "receive_id_type": "chat_id"},
        }
        if card_id is not None:
            data |= {"event_id": card_id, "revision": revision}
        event = ExternalEvent.from_content(f"e{self.posted}", {"event_type": "t", "data": data})
        self.intake.accept(PartnerKey("svc", ALLOWED), event)

    def drain(self) -> DrainResult:
        return self.dispatcher.drain("svc", lambda: 60_000).result

    def status(self, seq: int) -> JobStatus:
        job = self.store.job("svc", seq)
        assert job is not None
        return job.status


@pytest.fixture
def herald() -> Herald:
    return Herald()


def test_ten_revisions_posted_at_once_send_only_the_newest(herald: Herald) -> None:
    for revision in range(1, 11):
        herald.post("build-7", revision)
    assert herald.drain() is DrainResult.CAUGHT_UP
    assert herald.feishu.calls == ["send build-7 r10 to oc_1"]
    assert [herald.status(seq) for seq in range(1, 11)] == [JobStatus.SUPERSEDED] * 9 + [JobStatus.SUCCEEDED]
    skipped = herald.store.job("svc", 3)
    assert skipped is not None and skipped.resolutions[-1]["revision"] == 10
    assert skipped.resolutions[-1]["job_id"] == "svc:10"
    assert herald.outcomes.count("superseded") == 9


def test_events_between_a_cards_revisions_keep_their_order(herald: Herald) -> None:
    herald.post("build-7", 1)
    herald.post(None, None, title="deploy started")
    herald.post("build-7", 2)
    herald.drain()
    assert herald.feishu.calls == ["send deploy started to oc_1", "send build-7 r2 to oc_1"]


def test_revisions_waiting_behind_a_delivered_card_update_it_once_and_never_backwards(herald: Herald) -> None:
    herald.post("build-7", 1)
    herald.drain()
    herald.post("build-7", 4)
    herald.post("build-7", 2)  # older than one already waiting: never shown after it
    herald.post("build-7", 3)
    herald.drain()
    assert herald.feishu.calls == ["send build-7 r1 to oc_1", "update om_1 to build-7 r4"]
    assert herald.feishu.shown == {"om_1": "build-7 r4"}
    # r2 gives way to r3 behind it; r3 finds r4 already shown and is skipped as stale
    assert [herald.status(seq) for seq in (2, 3, 4)] == [JobStatus.SUCCEEDED, JobStatus.SUPERSEDED, JobStatus.SUCCEEDED]
    stale = herald.store.job("svc", 4)
    assert stale is not None and stale.outcome == "stale_revision"


def test_the_same_card_id_to_another_receiver_is_another_card(herald: Herald) -> None:
    herald.post("build-7", 1, chat="oc_1")
    herald.post("build-7", 2, chat="oc_2")
    herald.drain()
    assert herald.feishu.calls == ["send build-7 r1 to oc_1", "send build-7 r2 to oc_2"]


def test_a_revision_requeued_after_it_may_have_gone_out_is_sent_again_not_passed_over(herald: Herald) -> None:
    herald.post("build-7", 1)
    herald.post("build-7", 2)
    first = herald.store.job("svc", 1)
    assert first is not None
    marked = first.claimed("w", herald.clock()).marked(herald.clock())
    herald.store.jobs[("svc", 1)] = marked.resolved(JobStatus.QUEUED, {"action": "requeue"}, herald.clock(), None)
    herald.drain()
    assert herald.feishu.calls == ["send build-7 r1 to oc_1", "update om_1 to build-7 r2"]


def test_revisions_that_arrive_while_a_drain_runs_are_coalesced_by_that_drain(herald: Herald) -> None:
    """Found by tests/bench/delivery_at_limits.py: a drain knew only the jobs there when it began, so a
    revision arriving behind a newer one during a long drain was sent although the newer one waited."""
    herald.post("build", 1)

    def two_more_revisions_arrive() -> None:
        herald.post("build", 2)
        herald.post("build", 3)

    herald.store.before["claim"] = [two_more_revisions_arrive]  # while revision 1 is being sent
    assert herald.drain() is DrainResult.CAUGHT_UP
    assert herald.feishu.calls == ["send build r1 to oc_1", "update om_1 to build r3"]
    assert [herald.status(seq) for seq in (1, 2, 3)] == [JobStatus.SUCCEEDED, JobStatus.SUPERSEDED, JobStatus.SUCCEEDED]


def test_revisions_superseded_at_the_head_are_recorded_together_not_one_write_each(herald: Herald) -> None:
    """Found by tests/bench/delivery_at_limits.py (a): one write per superseded job let a worker skip about as
    fast as a partner posted, so it reached the revisions to send only once the posting stopped, and a card
    sent early left the chat silent for seconds while its pace allowed calls."""
    for revision in range(1, 11):
        for card in range(5):
            herald.post(f"card-{card}", revision)
    assert herald.drain() is DrainResult.CAUGHT_UP
    assert herald.feishu.calls == [f"send card-{card} r10 to oc_1" for card in range(5)]
    assert [herald.status(seq) for seq in range(1, 51)] == [JobStatus.SUPERSEDED] * 45 + [JobStatus.SUCCEEDED] * 5
    assert herald.store.writes.count("supersede") == -(-45 // SUPERSEDED_AT_ONCE)
    assert herald.store.writes.count("complete") == 5  # the sends': no superseded job was written alone
    assert herald.outcomes.count("superseded") == 45 and herald.store.head("svc").done_seq == 50
    for seq in range(1, 46):
        skipped = herald.store.job("svc", seq)
        assert skipped is not None and skipped.resolutions[-1]["revision"] == 10
        assert skipped.resolutions[-1]["job_id"] == f"svc:{46 + (seq - 1) % 5}"


def test_two_workers_draining_one_lane_at_once_pass_over_its_revisions_once_and_send_the_newest_once(
    herald: Herald,
) -> None:
    for revision in (1, 2, 3):
        herald.post("build", revision)
    other = EventDispatcher(
        herald.store, FixedTargets(ALLOWED), OneApp(herald.feishu), DispatchPolicy(reserve_ms=0), lambda nudge: None
    )
    # the other worker drains the lane between this one's read of the run and its write
    herald.store.before["supersede"] = [lambda: other.drain("svc", lambda: 60_000)]
    assert herald.drain() is DrainResult.CAUGHT_UP
    assert herald.feishu.calls == ["send build r3 to oc_1"]
    assert [herald.status(seq) for seq in (1, 2, 3)] == [JobStatus.SUPERSEDED] * 2 + [JobStatus.SUCCEEDED]
    assert herald.store.writes.count("supersede") == 1 and herald.outcomes == []  # every write was the other's
    assert herald.store.head("svc").done_seq == 3
