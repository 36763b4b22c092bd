"""An UNKNOWN external-event job settles itself where Feishu makes it provable, and waits for an operator,
with the evidence, where it does not (the in-memory store, a scripted Feishu and a fake clock)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from herald.events.drained import DrainResult
from herald.events.jobs import JobStatus
from herald.events.models import Card
from herald.events.nudges import EventsJanitor, Nudge
from herald.events.policy import HELD_LOOK_AGAIN_MS
from herald.events.records import Outcome
from tests.support.dispatch_harness import LEASE_MS, WINDOW_MS, Crash, Harness


@pytest.fixture
def herald() -> Iterator[Harness]:
    yield Harness()


@pytest.mark.parametrize("fault", ["lost", "hang"])
def test_a_send_accepted_but_not_answered_is_resent_with_its_uuid_and_recorded_with_feishus_message_id(
    herald: Harness, fault: str
) -> None:
    herald.post("e1", "one")
    herald.feishu.next = [fault]
    herald.waits()  # unknown, and tried again after a backoff
    unknown = herald.job()
    assert unknown.status is JobStatus.UNKNOWN and not unknown.awaiting_operator and unknown.next_settle_at_ms
    assert herald.drain_until_settled() is DrainResult.CAUGHT_UP
    settled = herald.job()
    assert settled.status is JobStatus.SUCCEEDED and settled.message_id == "om_1"
    assert herald.feishu.messages == {"om_1": ["one"]}  # one card, though sent twice
    (resolution,) = settled.resolutions
    assert resolution["by"] == "herald" and resolution["action"] == "settled" and "om_1" in resolution["note"]
    assert settled.evidence and "not answered as done" in settled.evidence[0]
    assert herald.outcomes.count("settled") == 1


def test_a_worker_that_died_after_the_mark_is_settled_by_the_next_drain_at_once(herald: Harness) -> None:
    herald.post("e1", "one")
    herald.post("e2", "two")
    herald.feishu.next = ["crash"]
    with pytest.raises(Crash):
        herald.drain()
    assert herald.job().status is JobStatus.UNKNOWN and herald.job().next_settle_at_ms <= herald.clock()
    assert herald.drain() is DrainResult.CAUGHT_UP
    assert herald.feishu.messages == {"om_1": ["one"], "om_2": ["two"]}
    assert [herald.job(seq).status for seq in (1, 2)] == [JobStatus.SUCCEEDED, JobStatus.SUCCEEDED]


def test_a_lease_that_ran_out_after_the_mark_is_settled_in_the_same_drain(herald: Harness) -> None:
    herald.post("e1", "one")
    job = herald.job()
    claimed = herald.store.commit(job, job.claimed("a1", herald.clock() + LEASE_MS), herald.clock())
    herald.store.commit(claimed, claimed.marked(herald.clock()), herald.clock())  # ... then the worker vanished
    herald.feishu.send_card("chat_id", "oc_1", Card("one", "running", "", "t"), job.feishu_uuid)
    herald.clock.advance(LEASE_MS + 1)
    assert herald.drain() is DrainResult.CAUGHT_UP
    assert herald.job().status is JobStatus.SUCCEEDED and herald.job().message_id == "om_1"
    assert herald.feishu.messages == {"om_1": ["one"]}
    assert "worker died" in herald.job().evidence[0]


def test_an_update_not_answered_is_written_again_and_a_later_revision_updates_the_same_message(
    herald: Harness,
) -> None:
    herald.post("e1", "rev 1", card_id="build-7", revision=1)
    assert herald.drain() is DrainResult.CAUGHT_UP  # sent before rev 2 arrives, so nothing coalesces
    herald.post("e2", "rev 2", card_id="build-7", revision=2)
    herald.feishu.next = ["lost"]
    assert herald.drain_until_settled() is DrainResult.CAUGHT_UP
    assert herald.job(2).status is JobStatus.SUCCEEDED and herald.job(2).resolutions[0]["by"] == "herald"
    herald.post("e3", "rev 3", card_id="build-7", revision=3)
    assert herald.drain() is DrainResult.CAUGHT_UP
    assert herald.feishu.messages == {"om_1": ["rev 1", "rev 2", "rev 2", "rev 3"]}  # one message, updated
    assert herald.store.cards[("svc", "build-7", "chat_id:oc_1")].revision == 3


def test_past_feishus_uuid_window_the_job_is_not_resent_and_waits_for_an_operator_with_its_evidence(
    herald: Harness,
) -> None:
    herald.post("e1", "one")
    herald.post("e2", "two")
    herald.feishu.next = ["lost", "busy"]  # unclear, then Feishu is busy on the first resend
    herald.clock.advance(herald.waits())
    herald.waits()  # the first resend: not acted, so still unknown
    herald.clock.advance(WINDOW_MS)  # the next try would come after the window closed
    assert herald.drain_until_settled() is DrainResult.BLOCKED
    job = herald.job()
    assert job.status is JobStatus.UNKNOWN and job.awaiting_operator
    assert "uuid window" in job.evidence[-1] and "operator" in job.evidence[-1]
    assert herald.feishu.calls == ["send one", "send one"]  # never sent again past the window
    assert herald.job(2).status is JobStatus.QUEUED  # the service waits behind it


def test_a_job_not_settled_in_its_tries_waits_for_an_operator(herald: Harness) -> None:
    herald.post("e1", "one")
    herald.feishu.next = ["lost", "lost", "lost", "lost"]
    assert herald.drain_until_settled() is DrainResult.BLOCKED
    job = herald.job()
    assert job.awaiting_operator and job.settle_tries == 3 and "not settled after 3 tries" in job.evidence[-1]
    assert len(job.evidence) == 4 and herald.feishu.messages == {"om_1": ["one"]}


def test_a_refusal_that_proves_nothing_about_the_first_try_leaves_it_to_an_operator_at_once(herald: Harness) -> None:
    herald.post("e1", "rev 1", card_id="c", revision=1)
    assert herald.drain() is DrainResult.CAUGHT_UP
    herald.post("e2", "rev 2", card_id="c", revision=2)
    herald.feishu.next = ["lost", "refused"]  # the bot was removed from the chat meanwhile
    assert herald.drain_until_settled() is DrainResult.BLOCKED
    job = herald.job(2)
    assert job.awaiting_operator and job.settle_tries == 1 and "230002" in job.evidence[-1]


def test_an_unknown_update_of_a_card_deleted_meanwhile_is_settled_by_a_new_card_continuing_it(herald: Harness) -> None:
    """Whether the first update landed no longer matters: the message is gone, so the revision continues as a new
    card (issue 46: a recalled card never blocks its lane and is never left unknown)."""
    herald.post("e1", "rev 1", card_id="c", revision=1)
    assert herald.drain() is DrainResult.CAUGHT_UP
    herald.post("e2", "rev 2", card_id="c", revision=2)
    herald.feishu.next = ["lost", "gone"]  # the card's message was deleted meanwhile
    assert herald.drain_until_settled() is DrainResult.CAUGHT_UP
    job = herald.job(2)
    assert (job.status, job.outcome, job.continued_from) == (JobStatus.SUCCEEDED, Outcome.CONTINUED, "om_1")
    assert job.resolutions[-1]["by"] == "herald" and herald.feishu.calls[-1] == "send rev 2"


def unknown_and_due(herald: Harness) -> None:
    """One job, sent but not answered: UNKNOWN, and due for its next try."""
    herald.post("e1", "one")
    herald.feishu.next = ["lost"]
    herald.waits()
    herald.clock.advance(60_000)


def test_an_operator_resolution_between_a_settling_decision_and_its_claim_wins(herald: Harness) -> None:
    from herald.events.operations import EventOperations

    unknown_and_due(herald)
    operations = EventOperations(herald.store, herald.policy, herald.clock)
    herald.store.before["settle"] = [lambda: operations.sent("svc:1", "om_1", by="alice")]
    assert herald.drain() is DrainResult.CAUGHT_UP
    assert herald.feishu.calls == ["send one"]  # the operator's word stands; nothing resent
    assert [r["by"] for r in herald.job().resolutions] == ["alice"]


def test_two_workers_settling_the_same_job_resend_it_once(herald: Harness) -> None:
    unknown_and_due(herald)
    waited: list[int] = []

    def the_other_worker_comes_too() -> None:
        waited.append(herald.waits())

    first = herald.dispatcher()
    herald.store.before["complete"] = [the_other_worker_comes_too]
    assert first.drain("svc", lambda: 10**9).result is DrainResult.CAUGHT_UP
    assert herald.feishu.calls == ["send one", "send one"] and waited == [
        HELD_LOOK_AGAIN_MS
    ]  # looked at again soon, not at the lease end


def test_the_janitor_nudges_side_effects_left_behind_and_not_those_still_in_time(herald: Harness) -> None:
    nudged: list[Nudge] = []
    janitor = EventsJanitor(herald.store, nudged.append, grace_ms=120_000, clock=herald.clock)
    herald.post("e1", "one")
    herald.post("e2", "two")
    claimed = herald.store.commit(herald.job(1), herald.job(1).claimed("a1", herald.clock() + LEASE_MS), herald.clock())
    herald.store.commit(claimed, claimed.marked(herald.clock()), herald.clock())
    assert janitor.nudge_overdue() == []  # its lease still runs
    herald.clock.advance(LEASE_MS + 120_001)
    (nudge,) = janitor.nudge_overdue()
    assert (nudge.lane, nudge.seq) == ("svc", 1)
    herald.drain()
    assert herald.job(1).status is JobStatus.SUCCEEDED and nudged == [nudge]


def test_only_a_blocked_job_moved_on_by_an_operator_or_removed_nudges_its_service_not_a_settling_try(
    herald: Harness,
) -> None:
    from herald.events.jobs import JobStatus as Status
    from herald.events.nudges import nudges_for

    herald.post("e1", "one")
    queued = herald.job()
    unknown = replace(queued, status=Status.UNKNOWN, next_settle_at_ms=1)
    assert [n.why for n in nudges_for(None, queued)] == ["new"]
    assert nudges_for(unknown, unknown.settling("a2", 2, 1)) == []  # its worker carries on
    assert [n.why for n in nudges_for(unknown, replace(unknown, status=Status.QUEUED, generation=1))] == ["resolved-1"]
    assert [n.why for n in nudges_for(unknown, None)] == ["removed"]
