"""Issue 47, item 2: the weighted fair share of a provider app, on a clock the test moves. Sharers that keep
asking split the app's rate by their weights (tenants first, then each tenant's services); a sharer alone, or
beside one that does not use its part, gets the rest (work conserving); a newcomer waits a couple of intervals,
not behind a second of another's reservations; alone, a sharer's claim rides in the write its call makes anyway."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping

import pytest

from herald.limits.governor import Bucket, BucketLimit, Gate, Governor
from herald.limits.shares import ASKED_RECENTLY_MS, Claim, RegisteredShares, Share, fraction
from tests.support.clock import FakeClock, most_in_any_window
from tests.support.fakes import InMemoryBucketStore

START = 1_800_000_000_000
APP = [Gate("feishu:cli_a:s", BucketLimit(8), shared=True)]  # the bench's fake app: 8 a second, paced at 7.2
RATE = 8 * 0.9


class CountingStore(InMemoryBucketStore):
    """The buckets in memory, counting reads and writes (a request each, on DynamoDB)."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = self.writes = 0

    def read(self, name: str) -> Bucket:
        self.reads += 1
        return super().read(name)

    def write(self, buckets: Mapping[str, Bucket], expires_at_s: int) -> bool:
        self.writes += 1
        self.reads -= len(buckets)  # the fake's own version check is not a request
        return super().write(buckets, expires_at_s)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


def run(
    governor: Governor,
    clock: FakeClock,
    asking: Mapping[str, Share],
    seconds: float,
    wants: Callable[[str, int, dict[str, list[int]]], bool] = lambda who, ms, passed: True,
) -> dict[str, list[int]]:
    """Each sharer asks every 10 ms while `wants(who, ms from the start)` (in an order shuffled each step, from a
    fixed seed); the times (ms from the start) each one's calls were let through."""
    passed: dict[str, list[int]] = {who: [] for who in asking}
    order, shuffled = list(asking), random.Random(47)
    for _ in range(int(seconds * 100)):
        elapsed = clock.now - START
        shuffled.shuffle(order)
        for who in order:
            if wants(who, elapsed, passed) and governor.take(APP, share=asking[who]) == 0:
                passed[who].append(elapsed)
        clock.advance(10)
    return passed


def rate_between(times: list[int], start_ms: int, end_ms: int) -> float:
    return sum(1 for t in times if start_ms <= t < end_ms) / ((end_ms - start_ms) / 1000)


def test_a_sharer_alone_gets_the_whole_app(clock: FakeClock) -> None:
    passed = run(Governor(InMemoryBucketStore(), clock), clock, {"a": Share.of("t1", "a")}, seconds=10)
    assert rate_between(passed["a"], 0, 10_000) == pytest.approx(RATE, rel=0.05)


def test_two_sharers_that_keep_asking_split_the_app_evenly_and_never_exceed_it(clock: FakeClock) -> None:
    sharers = {"a": Share.of("t1", "a"), "b": Share.of("t1", "b")}
    passed = run(Governor(InMemoryBucketStore(), clock), clock, sharers, seconds=20)
    for who in sharers:
        assert rate_between(passed[who], 2_000, 20_000) == pytest.approx(RATE / 2, rel=0.1)
    assert most_in_any_window(sorted(passed["a"] + passed["b"]), 1000) <= 8


def test_weights_three_to_one_split_the_app_three_quarters_to_one(clock: FakeClock) -> None:
    sharers = {"a": Share.of("t1", "a", weight=3), "b": Share.of("t1", "b", weight=1)}
    passed = run(Governor(InMemoryBucketStore(), clock), clock, sharers, seconds=20)
    assert rate_between(passed["a"], 2_000, 20_000) == pytest.approx(RATE * 3 / 4, rel=0.1)
    assert rate_between(passed["b"], 2_000, 20_000) == pytest.approx(RATE / 4, rel=0.15)


def test_tenants_split_the_app_first_and_each_tenants_part_is_split_between_its_services(clock: FakeClock) -> None:
    """Tenant t1 with two services, t2 with one, equal tenant weights: t2's service gets half the app, each of
    t1's a quarter (a tenant does not get more by running more services)."""
    sharers = {"a": Share.of("t1", "a"), "b": Share.of("t1", "b"), "c": Share.of("t2", "c")}
    passed = run(Governor(InMemoryBucketStore(), clock), clock, sharers, seconds=20)
    assert rate_between(passed["c"], 2_000, 20_000) == pytest.approx(RATE / 2, rel=0.1)
    assert rate_between(passed["a"], 2_000, 20_000) == pytest.approx(RATE / 4, rel=0.15)
    assert rate_between(passed["b"], 2_000, 20_000) == pytest.approx(RATE / 4, rel=0.15)


def test_an_idle_sharer_gives_its_share_away_at_once(clock: FakeClock) -> None:
    """b asks for the first 5 s, then stops: a takes the whole app again within a couple of intervals."""
    sharers = {"a": Share.of("t1", "a"), "b": Share.of("t1", "b")}
    passed = run(
        Governor(InMemoryBucketStore(), clock), clock, sharers, 10, lambda who, ms, _: who == "a" or ms < 5_000
    )
    assert rate_between(passed["a"], 1_000, 5_000) == pytest.approx(RATE / 2, rel=0.1)
    assert rate_between(passed["a"], 5_500, 10_000) == pytest.approx(RATE, rel=0.05)


def test_a_sharer_using_less_than_its_part_leaves_the_rest_to_the_other(clock: FakeClock) -> None:
    """b wants one call a second (its part is 3.6 a second), asking from the second's start until it is let
    through: it gets it within two of the app's intervals each second, and a gets the rest of the app, not just
    its half."""

    def wants(who: str, ms: int, passed: dict[str, list[int]]) -> bool:
        return who == "a" or not any(t >= ms - ms % 1000 for t in passed["b"])

    sharers = {"a": Share.of("t1", "a"), "b": Share.of("t1", "b")}
    passed = run(Governor(InMemoryBucketStore(), clock), clock, sharers, 20, wants)
    assert len(passed["b"]) == 20
    assert all(t % 1000 <= 2 * 1000 / RATE + 10 for t in passed["b"])
    assert rate_between(passed["a"], 2_000, 20_000) >= 0.9 * (RATE - 1)


def test_a_newcomer_waits_a_couple_of_intervals_not_behind_a_second_of_anothers_reservations(
    clock: FakeClock,
) -> None:
    """a, alone, reserved its moments up to a second ahead (workers waiting for them); b's first call is let
    through within a few intervals of the app, and a reserves nothing far ahead while b asks."""
    store = InMemoryBucketStore()
    governor = Governor(store, clock, clock.sleep)
    a, b = Share.of("t1", "a"), Share.of("t1", "b")
    for _ in range(7):  # a second of a's moments reserved ahead, as seven waiting workers would
        assert governor._reserve(APP, 1_000, share=a)[0] is not None
    assert store.read(APP[0].name).due_ms - clock.now > 900
    assert governor.take(APP, lambda: 0, share=b) > 0  # the app is taken for a second: b waits, and says it asks
    assert governor._reserve(APP, 1_000, share=a)[0] is None  # a reserves no further while b asks
    started = clock.now
    assert governor.take(APP, lambda: 2_000, share=b) == 0
    assert clock.now - started <= 1_000 + 2 * 1000 / RATE  # the second already reserved, and no more


def test_an_uncontended_call_makes_no_request_beyond_its_reservation(clock: FakeClock) -> None:
    """Alone, a sharer's claim rides in the write the call makes anyway: one read and one write a call, with or
    without a share."""
    counted = {}
    for share in (None, Share.of("t1", "a")):
        store = CountingStore()
        governor = Governor(store, clock, clock.sleep)
        for _ in range(20):
            clock.advance(200)
            assert governor.take(APP, share=share) == 0
        counted[share is None] = (store.reads, store.writes)
    assert counted[True] == counted[False] == (20, 20)


def test_a_sharer_stops_counting_once_it_has_not_asked_for_a_while(clock: FakeClock) -> None:
    others = {"t1/b": Claim(1, 1, START, START - ASKED_RECENTLY_MS - 1)}
    bucket = Bucket(claims=others)
    store = InMemoryBucketStore()
    store.buckets[APP[0].name] = bucket
    governor = Governor(store, clock)
    assert governor.take(APP, share=Share.of("t1", "a")) == 0
    assert set(store.read(APP[0].name).claims) == {"t1/a"}  # b's old claim dropped with the write


@pytest.mark.parametrize(
    ("share", "others", "expected"),
    [
        (Share.of("t1", "a"), {}, 1.0),
        (Share.of("t1", "a", weight=3), {"t1/b": Claim(1, 1, 0, 0)}, 0.75),
        (Share.of("t1", "a"), {"t2/c": Claim(1, 3, 0, 0)}, 0.25),
        (Share.of("t1", "a", tenant_weight=2), {"t1/b": Claim(1, 2, 0, 0), "t2/c": Claim(5, 2, 0, 0)}, 0.25),
    ],
)
def test_a_sharers_fraction_is_its_tenants_part_times_its_part_of_its_tenant(
    share: Share, others: dict[str, Claim], expected: float
) -> None:
    assert fraction(share, others) == pytest.approx(expected)


def test_a_calls_share_carries_its_services_weight_and_its_tenants_as_registered_now() -> None:
    tenants = {"t1": 5}
    shares = RegisteredShares(lambda app_code: tenants[app_code])
    assert shares.of("t1", "svc", 2) == Share("t1/svc", 2, 5)
    tenants["t1"] = 7  # an operator's `tenants set --weight` (the registry's cache is its own)
    assert shares.of("t1", "svc", 2) == Share("t1/svc", 2, 7)
    assert shares.of(None, "svc") == Share("/svc", 1, 1)  # the stack's own apps: no tenant weight
    assert shares.of_tenant("t1") == Share("t1/", 1, 7)  # a tenant's pushes, one sharer


def test_a_sharer_over_its_part_gives_its_worker_back_at_once_while_one_within_its_part_waits(
    clock: FakeClock,
) -> None:
    """A worker holding a call of a sharer over its part would sleep for that sharer's next moment while
    another sharer's work waits for a worker: it is told the wait at once instead (its message comes back then),
    and only a call within its part waits in its worker's time. Here the app's next moment is 50 ms away; b's
    own moment has come and b asked since (it waits); a's own is three app intervals away."""
    interval = 1000 / RATE
    store = InMemoryBucketStore()
    store.buckets[APP[0].name] = Bucket(
        due_ms=clock.now + 50,
        claims={
            "t1/a": Claim(1, 1, clock.now + 3 * interval, clock.now - 10),
            "t1/b": Claim(1, 1, clock.now - 1, clock.now),
        },
    )
    governor = Governor(store, clock, clock.sleep)
    wait = governor.take(APP, lambda: 5_000, share=Share.of("t1", "a"))
    assert wait == pytest.approx(3 * interval, abs=1) and clock.slept_ms == 0  # not held for it
    assert governor.take(APP, lambda: 5_000, share=Share.of("t1", "b")) == 0
    assert clock.slept_ms == 50  # b waited in its worker's time for the app's moment


def test_a_sharers_part_is_looked_at_before_its_work_only_once_this_instance_saw_others_ask(
    clock: FakeClock,
) -> None:
    """Alone, the look before a job's claim costs nothing (no read); once a reservation here met another sharer,
    the look tells a sharer whose next moment is beyond the caller's time how long to wait, and one within it 0."""
    store = CountingStore()
    governor = Governor(store, clock, clock.sleep)
    a, b = Share.of("t1", "a"), Share.of("t1", "b", weight=9)
    assert governor.look(APP, 10_000, a) == (0, False) and store.reads == 0
    assert governor.take(APP, share=b) == 0
    assert governor.take(APP, lambda: 1_000, share=a) == 0  # a's first: it met b
    assert governor.take(APP, lambda: 1_000, share=b) == 0  # b keeps asking: its part is in use
    interval = 1000 / RATE
    assert governor.look(APP, 10_000, a) == (0, False)  # its very next moment, within this time: on to its claim
    wait, over_part = governor.look(APP, 0, a)
    assert not over_part and 7 * interval <= wait <= 10 * interval  # a tenth of the app: its next is far
    assert store.reads > 3
    assert governor.look(APP, 10_000, b) == (0, False)


def test_a_call_that_found_no_moment_in_its_time_makes_the_next_look_before_a_claim_say_how_far_the_app_is(
    clock: FakeClock,
) -> None:
    """Issue 47, item 2 (d): a backlog's lanes each claimed their job, found the app's next moment beyond their
    worker's time, and wrote the claim back: two writes and two stream records for nothing, each time they came
    back. Once this instance saw the app crowded, the look before a claim reads it and says so, and a call that
    could go is let on."""
    store = CountingStore()
    governor = Governor(store, clock, clock.sleep)
    assert governor.take(APP, lambda: 1_000) == 0  # the app's moment now taken
    assert governor.look(APP, 0) == (0, False) and store.reads == 1  # nothing seen crowded: no read
    assert governor.take(APP, lambda: 0) > 0  # the app's next moment is beyond this call's time
    reads = store.reads
    wait, over_part = governor.look(APP, 0)
    assert wait > 0 and not over_part and store.reads == reads + 1
    assert governor.look(APP, 10_000) == (0, False)  # within a caller's longer time: on to its claim


def test_a_late_call_of_a_sharer_over_its_part_takes_the_apps_next_moment_instead_of_going_as_it_is(
    clock: FakeClock,
) -> None:
    """Found by delivery_at_limits (d): a call whose last step made it late asked for its next moment again with
    its share; over its part, it got none and went as it was, beside the moment the app's bucket still offered to
    the next caller: two calls at once, over the app's pace. It takes the app's next free moment instead."""
    store = InMemoryBucketStore()
    store.buckets[APP[0].name] = Bucket(claims={"t1/b": Claim(9, 1, clock.now + 60_000, clock.now)})
    governor = Governor(store, clock, clock.sleep)
    assert governor.take(APP, lambda: 5_000, lambda: clock.advance(200), Share.of("t1", "a")) == 0  # 200 ms late
    went_at = clock.now
    assert store.read(APP[0].name).due_ms == pytest.approx(went_at + 1000 / RATE, abs=1)  # counted where it went
    assert Governor(store, clock).take(APP, share=Share.of("t2", "c")) > 0  # no second call at the same moment


def test_a_sharer_whose_next_own_moment_is_its_very_next_call_waits_for_it_instead_of_being_sent_back_for_its_part(
    clock: FakeClock,
) -> None:
    """Found by delivery_at_limits (d): B, one lane at half the app, called every 278 ms (its part) while the app's
    moments came every 139 ms; each next call of B asked before its own moment and was told "over its part", so its
    lane went back for 3 s (half as long again each time it came back, up to 20 s): B's 20 cards took 72 s where 5
    do. A sharer whose own next moment is less than one of its own intervals away is not over its part: that moment
    is its next call's, and the call waits for it in its worker's time. One further away (its other calls took its
    next moments) is sent back, as before."""
    assert clock.now == START
    interval = 1000 / RATE
    store = InMemoryBucketStore()
    store.buckets[APP[0].name] = Bucket(
        due_ms=clock.now,
        claims={
            "t1/a": Claim(1, 1, clock.now + 200, clock.now - 10),  # a's own next moment: 200 ms away
            "t1/b": Claim(1, 1, clock.now - 1, clock.now),  # b asks too (it waits)
        },
    )
    governor = Governor(store, clock, clock.sleep)
    a = Share.of("t1", "a")
    own_moment_in = math.ceil(200 - interval)  # the app's tolerance: a part's moment may come one interval early
    assert governor.take(APP, lambda: 10, share=a) == own_moment_in  # beyond this worker's time: how far, not 3 s
    assert governor.look(APP, 10, a) == (own_moment_in, False)  # crowded for this time, not over its part
    assert governor.look(APP, 600, a) == (0, False)  # within a longer time: on to its claim
    assert governor.take(APP, lambda: 600, share=a) == 0
    assert clock.slept_ms == pytest.approx(200 - interval, abs=1)  # waited for its own moment, less the tolerance
    assert store.read(APP[0].name).claims["t1/a"].due_ms == pytest.approx(START + 200 + 2 * interval, abs=1)
    b_earlier = Bucket(due_ms=clock.now, claims={**store.read(APP[0].name).claims})
    store.buckets[APP[0].name] = b_earlier
    assert governor.take(APP, lambda: 5_000, share=a) == pytest.approx(200 + 2 * interval - (clock.now - START), abs=1)
