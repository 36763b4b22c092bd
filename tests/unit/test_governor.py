"""The outbound governor's arithmetic: pacing under a published limit, the burst of a per-minute limit, a
provider's refusal halving the rate (never below its floor) and the rate climbing back, on a clock the test
moves."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor

import pytest

from herald.limits.governor import SLOWEST_SHARE, Bucket, BucketLimit, Gate, Governor
from tests.support.clock import FakeClock, most_in_any_window
from tests.support.fakes import InMemoryBucketStore

START = 1_800_000_000_000


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
def governor(clock: FakeClock) -> Governor:
    return Governor(InMemoryBucketStore(), clock)


def calls_passed(governor: Governor, clock: FakeClock, gates: list[Gate], seconds: int, step_ms: int = 10) -> list[int]:
    """Try a call every `step_ms` for `seconds`; the times (ms from the start) of those let through."""
    passed = []
    for _ in range(seconds * 1000 // step_ms):
        if governor.take(gates) == 0:
            passed.append(clock.now - START)
        clock.advance(step_ms)
    return passed


def test_a_per_second_limit_is_paced_under_it_in_every_sliding_second(governor: Governor, clock: FakeClock) -> None:
    chat = Gate("feishu:chat:oc_1", BucketLimit(5))
    passed = calls_passed(governor, clock, [chat], seconds=10)
    assert most_in_any_window(passed, 1000) <= 5
    assert len(passed) >= 0.85 * 5 * 10  # and near it: the headroom is a tenth


def test_a_per_minute_limit_allows_a_tenth_at_once_and_never_more_than_the_limit_in_a_minute(
    governor: Governor, clock: FakeClock
) -> None:
    app = Gate("feishu:app", BucketLimit(1000, per_seconds=60))
    burst = [governor.take([app]) for _ in range(150)]
    assert burst.count(0) == 100  # a tenth of the limit, at once
    passed = calls_passed(governor, clock, [app], seconds=180)
    assert most_in_any_window(passed, 60_000) + 100 <= 1000 + 15  # the burst plus a minute's pacing


def test_no_token_says_how_long_to_wait_and_then_one_passes(governor: Governor, clock: FakeClock) -> None:
    chat = Gate("chat", BucketLimit(5))
    assert governor.take([chat]) == 0
    wait = governor.take([chat])
    assert 0 < wait <= 1000 / (5 * 0.9) + 1
    clock.advance(wait)
    assert governor.take([chat]) == 0


def test_a_refusal_halves_the_rate_and_it_climbs_back_over_the_recovery_time(clock: FakeClock) -> None:
    limit = BucketLimit(10, recovery_s=30)
    bucket = Bucket().refused(limit, clock.now)
    assert bucket.rate_per_s(limit, clock.now) == pytest.approx(limit.rate_per_s / 2)
    assert bucket.rate_per_s(limit, clock.now + 15_000) == pytest.approx(limit.rate_per_s)  # half of it back in 15 s
    assert bucket.rate_per_s(limit, clock.now + 10_000) < limit.rate_per_s


def test_refusals_in_a_row_never_cut_below_the_floor(clock: FakeClock) -> None:
    limit = BucketLimit(10)
    bucket = Bucket()
    for _ in range(20):
        bucket = bucket.refused(limit, clock.now)
    assert bucket.rate_per_s(limit, clock.now) == pytest.approx(limit.rate_per_s * SLOWEST_SHARE)


def test_a_refusal_holds_the_bucket_for_the_wait_the_provider_suggests(governor: Governor, clock: FakeClock) -> None:
    chat = Gate("chat", BucketLimit(5))
    governor.refused(chat, retry_after_ms=3_000)
    assert governor.take([chat]) == 3_000
    clock.advance(3_000)
    assert governor.take([chat]) == 0


def test_a_refusal_that_names_its_wait_holds_until_then_and_no_longer_nor_slower(
    governor: Governor, clock: FakeClock
) -> None:
    """Issue 47, item 3: the bucket's next moment is the provider's own, and the calls after the hold go at the
    limit's pace (a wait that was named is no reason to halve the rate too)."""
    chat = Gate("chat", BucketLimit(5))
    for elapsed in range(3):  # refused again and again during the hold: each names the same end
        governor.refused(chat, retry_after_ms=5_000 - elapsed * 1_000)
        clock.advance(1_000)
    assert governor.take([chat]) == 2_000  # the hold's end, not further
    clock.advance(2_000)
    assert governor.take([chat]) == 0
    assert governor.take([chat]) == pytest.approx(1000 / (5 * 0.9), abs=1)  # the limit's pace, not half of it


def test_a_call_counts_against_every_gate_and_waits_for_the_tightest(governor: Governor, clock: FakeClock) -> None:
    chat = Gate("chat", BucketLimit(5))
    app = Gate("app", BucketLimit(50))
    assert governor.take([chat, app]) == 0
    clock.advance(25)  # past the app's pace (50 a second), not the chat's (5)
    assert governor.take([chat, app]) > 25
    other = Gate("other chat", BucketLimit(5))
    assert governor.take([other, app]) == 0  # another chat of the same app goes on
    assert governor.take([Gate("a third chat", BucketLimit(5)), app]) > 0  # but not two at once: the app's pace


def test_a_call_waiting_for_its_chat_is_counted_by_the_app_when_it_goes_not_while_it_waits(clock: FakeClock) -> None:
    """A token held while another bucket is waited for would be counted long before the call arrives: calls
    would bunch up at the provider over the very limit paced. Every bucket counts the call at its moment."""
    buckets = InMemoryBucketStore()
    governor = Governor(buckets, clock, clock.sleep)
    chat, app = Gate("chat", BucketLimit(1)), Gate("app", BucketLimit(8))
    assert governor.take([app, chat]) == 0
    clock.advance(100)
    assert governor.take([app, chat], lambda: 5_000) == 0  # waited for the chat's next moment
    went_at = clock.now
    assert went_at == START + 1112  # 1 a second, a tenth under it: every 1111.1 ms
    assert buckets.read("app").due_ms == pytest.approx(went_at + 1000 / (8 * 0.9), abs=1)
    assert buckets.read("chat").due_ms == pytest.approx(START + 2 * 1000 / 0.9, abs=1)


def test_a_call_that_cannot_wait_for_its_moment_reserves_nothing(governor: Governor, clock: FakeClock) -> None:
    chat, app = Gate("chat", BucketLimit(1)), Gate("app", BucketLimit(8))
    assert governor.take([app, chat]) == 0
    clock.advance(200)  # the app's next moment has come, not the chat's
    assert governor.take([app, chat]) > 800
    assert governor.take([app, Gate("another chat", BucketLimit(1))]) == 0  # the app's moment was not spent


def test_a_call_made_late_by_its_last_step_takes_the_next_free_moment_instead_of_bunching(clock: FakeClock) -> None:
    """A call whose last step (marking the delivery) outlasts its wait goes late, close to the calls reserved
    after it: at a provider counting a sliding second, late calls and punctual ones add up over the limit. Past
    half the bucket's slack late, a call takes the next free moment instead (its first one goes unused)."""
    buckets = InMemoryBucketStore()
    governor = Governor(buckets, clock, clock.sleep)
    im = Gate("tim", BucketLimit(5))  # paced at 4.5 a second: every 222.2 ms
    interval = 1000 / 4.5
    assert governor.take([im]) == 0  # at START; the next moment is START + 222
    assert governor.take([im], lambda: 5_000, meanwhile=lambda: clock.advance(400)) == 0
    assert clock.now == pytest.approx(START + 2 * interval, abs=1)  # not at START + 400, beside the next one
    assert buckets.read("tim").due_ms == pytest.approx(START + 3 * interval, abs=1)


def test_a_governor_reserves_far_enough_ahead_for_its_calls_last_step_and_spends_no_moment_twice(
    clock: FakeClock,
) -> None:
    """Marks that take 150 ms (a loaded table): once the governor has seen a few, it reserves each moment that
    far ahead, so the mark ends before the moment, the call is on time and no moment is taken again (a moment
    taken again is one the provider's limit never gets to use)."""
    buckets = InMemoryBucketStore()
    governor = Governor(buckets, clock, clock.sleep)
    im = Gate("tim", BucketLimit(5))
    interval = 1000 / 4.5
    for _ in range(30):  # each call finds the bucket free: it would go at once, were it not for its mark
        clock.advance(400)
        assert governor.take([im], lambda: 5_000, meanwhile=lambda: clock.advance(150)) == 0
    reserved_before = buckets.read("tim").due_ms
    clock.advance(400)
    started = clock.now
    assert governor.take([im], lambda: 5_000, meanwhile=lambda: clock.advance(150)) == 0
    # one moment, used on time (within a few ms: the lead is a moving average); two would put it an interval on
    assert buckets.read("tim").due_ms == pytest.approx(clock.now + interval, abs=15)
    assert reserved_before < started and clock.now - started == pytest.approx(150, abs=25)


def test_a_call_a_little_late_goes_at_once_and_spends_one_moment(clock: FakeClock) -> None:
    buckets = InMemoryBucketStore()
    governor = Governor(buckets, clock, clock.sleep)
    im = Gate("tim", BucketLimit(5))
    interval = 1000 / 4.5
    assert governor.take([im]) == 0
    assert governor.take([im], lambda: 5_000, meanwhile=lambda: clock.advance(250)) == 0  # 28 ms late
    assert clock.now == START + 250
    assert buckets.read("tim").due_ms == pytest.approx(START + 2 * interval, abs=1)


def test_a_call_later_than_half_the_slack_takes_its_next_moment_however_long_the_interval(clock: FakeClock) -> None:
    """A chat's 1 a second, paced every 1,111 ms, leaves 111 ms of slack in a sliding second: a call 100 ms late
    would reach the provider 1,011 ms before the next, leaving 11 ms for its way there. The tolerance is half the
    slack (55 ms), not a share of the interval (half of it would let the call go 555 ms late: two in a second)."""
    buckets = InMemoryBucketStore()
    governor = Governor(buckets, clock, clock.sleep)
    chat = Gate("chat", BucketLimit(1))
    interval = 1000 / 0.9
    assert chat.limit.slack_ms == pytest.approx(111.1, abs=0.1)
    assert governor.take([chat]) == 0
    assert governor.take([chat], lambda: 5_000, meanwhile=lambda: clock.advance(round(interval) + 100)) == 0
    assert clock.now == pytest.approx(START + 2 * interval, abs=1)
    assert buckets.read("chat").due_ms == pytest.approx(START + 3 * interval, abs=1)


@pytest.mark.parametrize("late_wake_ups", [1, 2])
def test_a_call_that_woke_up_late_takes_the_next_free_moment_and_again_if_late_again(
    clock: FakeClock, late_wake_ups: int
) -> None:
    """The first wake-ups come 150 ms late (a loaded machine), later ones on time: START + 222 is awake at 372
    and takes START + 444; late for that too (594), it takes START + 666."""
    oversleeps = [150] * late_wake_ups

    def sleep(seconds: float) -> None:
        clock.advance(round(seconds * 1000) + (oversleeps.pop() if oversleeps else 0))

    buckets = InMemoryBucketStore()
    governor = Governor(buckets, clock, sleep)
    im = Gate("tim", BucketLimit(5))
    interval = 1000 / 4.5
    assert governor.take([im]) == 0
    assert governor.take([im], lambda: 5_000) == 0
    assert clock.now == pytest.approx(START + (1 + late_wake_ups) * interval, abs=1)
    assert buckets.read("tim").due_ms == pytest.approx(START + (2 + late_wake_ups) * interval, abs=1)


class SlowBucketStore:
    """Buckets in memory whose reads take a while (a loaded table), counting the reservations between a read
    and a write, and the writes lost to another's."""

    def __init__(self) -> None:
        self.inner = InMemoryBucketStore()
        self.in_flight = 0
        self.most_in_flight = 0
        self.lost = 0
        self._lock = threading.Lock()

    def read(self, name: str) -> Bucket:
        with self._lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        # the sleep is the behaviour: a read that takes a while, so that threads racing would overlap
        time.sleep(0.002)
        return self.inner.read(name)

    def write(self, buckets: Mapping[str, Bucket], expires_at_s: int) -> bool:
        with self._lock:
            self.in_flight -= 1
            written = self.inner.write(buckets, expires_at_s)
            self.lost += not written
            return written


def test_threads_of_one_instance_reserve_one_at_a_time_instead_of_racing_for_the_bucket(clock: FakeClock) -> None:
    """Pushes side by side in one instance: each win of a race would cost every other thread a read and a write
    (under load, enough lost races made a reservation later than its moment)."""
    buckets = SlowBucketStore()
    governor = Governor(buckets, clock, lambda seconds: None)
    im = Gate("tim", BucketLimit(5))
    start = threading.Barrier(8)

    def push() -> int:
        start.wait()
        return governor.take([im], lambda: 60_000)

    with ThreadPoolExecutor(8) as pool:
        waits = list(pool.map(lambda _: push(), range(8)))
    assert waits == [0] * 8
    assert (buckets.most_in_flight, buckets.lost) == (1, 0)
    assert buckets.inner.read("tim").due_ms == pytest.approx(START + 8 * 1000 / 4.5, abs=1)


def test_a_limit_of_zero_is_off(governor: Governor) -> None:
    off = Gate("off", BucketLimit(0))
    assert [governor.take([off]) for _ in range(100)] == [0] * 100
