"""Tencent IM's pace: each push's sendmsg (and each history lookup) takes a token from the app's bucket for
that API, shared by every worker; a rate-limit answer slows the bucket and is never counted as an attempt; a
push whose token is further away than the invocation allows goes back to the queue untried."""

from __future__ import annotations

import json

import pytest

from herald import budgets
from herald.clock import Clock
from herald.confirms.delivery import ConfirmDelivery, DeliveryPaced, Push
from herald.confirms.handlers import on_im_push
from herald.confirms.models import Confirm, ConfirmStatus, CustomMessage, SendResult
from herald.confirms.pacing import TencentImLimits, TencentImPace
from herald.confirms.wiring import delivery as delivery_part
from herald.container import current
from herald.holds.service import Holds
from herald.holds.wiring import holds
from herald.limits.governor import Governor
from herald.providers.tencent_im import TencentImError
from herald.tenants.wiring import tenants
from herald.workers import QueueMessage, RetryLater
from tests.support.clock import FakeClock, most_in_any_window
from tests.support.fakes import (
    InMemoryBucketStore,
    InMemoryConfirmStore,
    InMemoryDeliveryStore,
    InMemoryHoldStore,
    tenants_in_memory,
)

APP = 1_400_000_001
WEEK_MS = 7 * 86_400_000


class Tencent:
    """Answers each call at once; `refusals` rate-limit answers come first (60011: the app's frequency)."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.sends: list[int] = []
        self.lookups: list[int] = []
        self.refusals = 0

    def send(self, message: CustomMessage) -> SendResult:
        if self.refusals:
            self.refusals -= 1
            raise TencentImError("Tencent IM error 60011: over the app's frequency", retryable=True, throttled="app")
        self.sends.append(self.clock())
        return SendResult(msg_key=f"key-{len(self.sends)}", msg_time=self.clock() // 1000)

    def find_sent(
        self, from_account: str, to_account: str, msg_random: int, since_s: int, until_s: int
    ) -> SendResult | None:
        self.lookups.append(self.clock())
        return None


class Herald:
    def __init__(self) -> None:
        self.clock = FakeClock(1_800_000_000_000)
        self.confirms = InMemoryConfirmStore()
        self.deliveries = InMemoryDeliveryStore()
        self.tencent = Tencent(self.clock)
        self.buckets = InMemoryBucketStore()
        governor = Governor(self.buckets, self.clock, self.clock.sleep)
        self.delivery = ConfirmDelivery(
            self.confirms,
            self.deliveries,
            self.tencent,
            max_attempts=2,
            history_ms=WEEK_MS,
            clock=self.clock,
            pace=TencentImPace(governor, APP, TencentImLimits()),
        )

    def push(self, n: int) -> Push:
        now = self.clock()
        confirm = Confirm(
            app_code="lalu",
            confirm_id=f"c{n}",
            business_type="group_join",
            business_subtype="",
            business_id=f"b{n}",
            sender_user_id="alice",
            receiver_user_id=f"user{n % 500}",
            status=ConfirmStatus.PENDING,
            message_text="join?",
            source_name="test",
            source_event_id=f"s{n}",
            created_at_ms=now,
            updated_at_ms=now,
            expire_at_ms=now + 86_400_000,
            version=1,
        )
        self.confirms.create(confirm)
        return Push("lalu", confirm.confirm_id, "im_confirm", "pending")

    def deliver(self, push: Push, remaining_ms: int = 60_000) -> None:
        with budgets.invocation(lambda: remaining_ms):
            self.delivery.deliver(push)

    def record(self, push: Push) -> tuple[str, int]:
        (record,) = self.deliveries.for_confirm(push.app_code, push.confirm_id)
        return record.status, record.attempts


@pytest.fixture
def herald() -> Herald:
    return Herald()


def test_a_burst_of_pushes_is_sent_at_the_apps_pace_and_never_over_it(herald: Herald) -> None:
    for n in range(450):
        herald.deliver(herald.push(n))
    assert len(herald.tencent.sends) == 450 and most_in_any_window(herald.tencent.sends) <= 200
    assert herald.clock.slept_ms >= 2_000  # 450 calls at 180 a second (nine tenths of 200)


def test_a_rate_limit_answer_is_not_an_attempt_and_slows_the_app_down(herald: Herald) -> None:
    push = herald.push(1)
    herald.tencent.refusals = 2  # as many as the push's attempts: it must not fail
    herald.deliver(push)
    assert herald.record(push) == ("sent", 1)
    bucket = herald.buckets.read(f"tim:{APP}:sendmsg")
    assert bucket.cut_rate_per_s == pytest.approx(180 / 4, rel=0.01)  # halved twice (climbing back since)


def test_refused_again_and_again_the_push_goes_back_to_the_queue_untried(herald: Herald) -> None:
    push = herald.push(1)
    herald.tencent.refusals = 10
    with pytest.raises(DeliveryPaced) as paced:
        herald.deliver(push)
    assert paced.value.delay_ms > 0 and herald.tencent.sends == []
    assert herald.record(push) == ("pending", 0)  # no attempt spent: it can never dead-letter for this


def test_a_token_further_away_than_the_invocation_allows_returns_the_push_untried(herald: Herald) -> None:
    herald.deliver(herald.push(1))
    push = herald.push(2)
    just_enough = budgets.PROVIDER_CALL_MS + budgets.RECORD_OUTCOME_MS + 1  # 1 ms to wait; the next token is 5 ms away
    with pytest.raises(DeliveryPaced) as paced:
        herald.deliver(push, remaining_ms=just_enough)
    assert 0 < paced.value.delay_ms <= 6 and len(herald.tencent.sends) == 1
    assert herald.record(push) == ("pending", 0)
    herald.deliver(push)
    assert herald.record(push) == ("sent", 1)


def test_a_history_lookup_is_paced_on_its_own_bucket(herald: Herald) -> None:
    push = herald.push(1)
    record = herald.deliveries.begin("lalu", "c1", "im_confirm", 7, herald.clock())
    herald.deliveries.sending(record, herald.clock())  # an earlier send's answer was lost
    herald.deliver(push)
    assert len(herald.tencent.lookups) == 1 and len(herald.tencent.sends) == 1
    assert herald.buckets.read(f"tim:{APP}:admin_getroammsg").version == 1


def test_the_worker_hides_a_paced_push_for_its_wait_without_a_failure(herald: Herald) -> None:
    push = herald.push(1)
    herald.tencent.refusals = 10
    current().override(delivery_part, herald.delivery)
    current().override(tenants, tenants_in_memory())
    current().override(holds, Holds(InMemoryHoldStore(), lambda *message: None))  # nothing is paused
    body = json.dumps(push.to_message())
    message = QueueMessage(message_id="m1", body=body, group_id="user1", receipt_handle="r", receive_count=1, sent_ms=0)
    with pytest.raises(RetryLater) as later, budgets.invocation(lambda: 60_000):
        on_im_push(message)
    assert later.value.delay_s == 1.0
