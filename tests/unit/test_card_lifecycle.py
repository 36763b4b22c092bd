"""A card that lives for weeks keeps showing its newest revision (issue 46): Feishu edits a card only through the
app that sent it, within 14 days of the send, and never once recalled; past any of those, the revision goes out
as a new card that says it continues the earlier one, the mapping moves to it, and the lane never blocks."""

from __future__ import annotations

import pytest

from herald.events.cards import FEISHU_EDIT_WINDOW_MS, CardMessage
from herald.events.drained import DrainResult
from herald.events.jobs import CALLS_KEPT, JobStatus
from herald.events.models import Target
from herald.events.records import CallOutcome, Outcome, provider_call
from tests.support.dispatch_harness import Harness

DAY_MS = 86_400_000


@pytest.fixture
def herald() -> Harness:
    return Harness()


def mapping(herald: Harness) -> CardMessage:
    card = herald.store.card("svc", "build-7", Target("chat_id", "oc_1"))
    assert card is not None
    return card


def test_a_card_records_the_app_that_sent_it_and_when_and_an_update_keeps_both(herald: Harness) -> None:
    herald.post("e1", "rev 1", card_id="build-7", revision=1)
    assert herald.drain() is DrainResult.CAUGHT_UP
    sent = mapping(herald)
    assert (sent.app_id, sent.sent_at_ms) == (herald.feishu.app_id, herald.clock())
    herald.clock.advance(DAY_MS)
    herald.post("e2", "rev 2", card_id="build-7", revision=2)
    assert herald.drain() is DrainResult.CAUGHT_UP
    updated = mapping(herald)
    assert (updated.message_id, updated.revision) == (sent.message_id, 2)
    assert (updated.app_id, updated.sent_at_ms) == (sent.app_id, sent.sent_at_ms)  # the send's, not the update's


def test_a_revision_past_feishus_14_day_edit_window_continues_as_a_new_card_and_the_next_updates_it(
    herald: Harness,
) -> None:
    herald.post("e1", "rev 1", card_id="build-7", revision=1)
    herald.drain()
    first = mapping(herald)
    herald.clock.advance(FEISHU_EDIT_WINDOW_MS)  # Herald knows the send time: it does not even try the update
    herald.post("e2", "rev 2", card_id="build-7", revision=2)
    assert herald.drain() is DrainResult.CAUGHT_UP
    assert herald.feishu.calls == ["send rev 1", "send rev 2"]
    job = herald.job(2)
    assert (job.status, job.outcome, job.continued_from) == (JobStatus.SUCCEEDED, Outcome.CONTINUED, first.message_id)
    moved = mapping(herald)
    assert moved.message_id == job.message_id != first.message_id and moved.sent_at_ms == herald.clock()
    assert herald.feishu.cards[moved.message_id][-1].continues_from_ms == first.sent_at_ms
    herald.post("e3", "rev 3", card_id="build-7", revision=3)
    assert herald.drain() is DrainResult.CAUGHT_UP
    assert herald.feishu.calls[-1] == "update rev 3" and herald.feishu.updated == [moved.message_id]
    assert "continued" in herald.outcomes


@pytest.mark.parametrize("answer", ["gone", "too_old"], ids=["recalled 230011", "past the window 230031"])
def test_a_card_feishu_will_not_edit_continues_as_a_new_card_and_never_blocks_the_lane(
    herald: Harness, answer: str
) -> None:
    herald.post("e1", "rev 1", card_id="build-7", revision=1)
    herald.drain()
    first = mapping(herald)
    herald.feishu.next = [answer]  # the update is refused for good
    herald.post("e2", "rev 2", card_id="build-7", revision=2)
    herald.post("e3", "done", card_id=None)
    assert herald.drain() is DrainResult.CAUGHT_UP
    assert herald.feishu.calls == ["send rev 1", "update rev 2", "send rev 2", "send done"]
    job = herald.job(2)
    assert (job.status, job.outcome, job.continued_from) == (JobStatus.SUCCEEDED, Outcome.CONTINUED, first.message_id)
    assert mapping(herald).message_id == job.message_id != first.message_id


def test_a_card_sent_by_another_app_is_never_patched_through_this_one_but_continues(herald: Harness) -> None:
    """The tenant registered its own Feishu app after the card went out: Feishu refuses a PATCH by any identity
    but the sender's, so Herald does not try one."""
    herald.post("e1", "rev 1", card_id="build-7", revision=1)
    herald.drain()
    first = mapping(herald)
    herald.feishu.app_id = "cli_tenant_own"
    herald.post("e2", "rev 2", card_id="build-7", revision=2)
    assert herald.drain() is DrainResult.CAUGHT_UP
    assert herald.feishu.calls == ["send rev 1", "send rev 2"] and herald.feishu.updated == []
    moved = mapping(herald)
    assert moved.app_id == "cli_tenant_own" and moved.message_id != first.message_id


def call(at: int, app: str, operation: str, outcome: str, message_id: str) -> dict[str, object]:
    return {"at_ms": at, "app_id": app, "operation": operation, "outcome": outcome, "code": 0, "message_id": message_id}


def test_each_call_a_job_makes_is_recorded_with_its_time_app_operation_outcome_code_and_message(
    herald: Harness,
) -> None:
    herald.post("e1", "rev 1", card_id="build-7", revision=1)
    herald.drain()
    first = mapping(herald)
    herald.clock.advance(1_000)
    herald.feishu.next = ["gone"]
    herald.post("e2", "rev 2", card_id="build-7", revision=2)
    herald.drain()
    job, at, app = herald.job(2), herald.clock(), herald.feishu.app_id
    assert [dict(call) for call in job.calls] == [
        {**call(at, app, "update", "refused", first.message_id), "code": 230011},
        call(at, app, "send", "done", job.message_id),
    ]
    assert [call["operation"] for call in herald.job(1).calls] == ["send"]


def test_a_call_without_an_answer_is_recorded_unanswered_and_the_settling_try_after_it(herald: Harness) -> None:
    herald.feishu.next = ["hang"]
    herald.post("e1", "rev 1", card_id="build-7", revision=1)
    herald.drain()
    assert [(c["operation"], c["outcome"]) for c in herald.job(1).calls] == [("send", "unanswered")]
    assert herald.drain_until_settled() is DrainResult.CAUGHT_UP
    settled = herald.job(1)
    assert [(c["operation"], c["outcome"]) for c in settled.calls] == [("send", "unanswered"), ("send", "done")]
    assert settled.calls[-1]["message_id"] == settled.message_id


def test_a_job_keeps_its_first_and_latest_calls_when_it_makes_many(herald: Harness) -> None:
    herald.post("e1", "rev 1")
    job = herald.job(1)
    calls = [provider_call(n, "cli_stack", "send", CallOutcome.THROTTLED, code=99991400) for n in range(CALLS_KEPT + 7)]
    kept = job.with_calls(calls[:3]).with_calls(calls[3:]).calls
    assert len(kept) == CALLS_KEPT
    assert [c["at_ms"] for c in kept] == [*range(CALLS_KEPT // 4), *range(7 + CALLS_KEPT // 4, CALLS_KEPT + 7)]
