"""A card that lives for weeks keeps showing its newest revision (issue 46): Feishu edits a card only through the
app that sent it, within 14 days of the send, and never once recalled; past any of those, the revision goes out
as a new card that says it continues the earlier one, the mapping moves to it, and the lane never blocks."""

from __future__ import annotations

import pytest

from herald.events.cards import FEISHU_EDIT_WINDOW_MS, CardMessage
from herald.events.drained import DrainResult
from herald.events.jobs import JobStatus
from herald.events.models import Target
from herald.events.records import Outcome
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
