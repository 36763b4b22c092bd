"""The sliding window: a burst at the end of one clock minute leaves little for the start of the next, a
refusal says when a request would pass, and each request is one conditional write."""

from __future__ import annotations

import pytest

from herald.errors import RateLimited
from herald.limits.service import Limit, RateLimiter
from tests.support.fakes import InMemoryCounter

MINUTE_MS = 60_000
T0 = 1_800_000_000_000  # the start of a minute


class Clock:
    def __init__(self, now: int) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def allowed(limiter: RateLimiter, limit: Limit, n: int, subject: str = "u1") -> int:
    passed = 0
    for _ in range(n):
        try:
            limiter.check(limit, subject)
            passed += 1
        except RateLimited:
            pass
    return passed


def test_a_burst_across_a_minute_boundary_gets_the_limit_not_twice_the_limit() -> None:
    """Regression: fixed windows let 10 through at 0:59 and 10 more at 1:00."""
    clock, counter = Clock(T0 + 59_000), InMemoryCounter()
    limiter, limit = RateLimiter(counter, clock=clock), Limit("user", 10)
    assert allowed(limiter, limit, 10) == 10
    clock.now = T0 + MINUTE_MS + 500
    assert allowed(limiter, limit, 10) == 0  # 9.92 of the last minute's ten still count
    clock.now = T0 + MINUTE_MS + 30_000
    assert allowed(limiter, limit, 10) == 5  # half of them have slid out


def test_a_refusal_says_when_the_next_request_passes() -> None:
    clock, counter = Clock(T0 + 59_000), InMemoryCounter()
    limiter, limit = RateLimiter(counter, clock=clock), Limit("user", 10)
    allowed(limiter, limit, 10)
    clock.now = T0 + MINUTE_MS + 500
    with pytest.raises(RateLimited) as refused:
        limiter.check(limit, "u1")
    wait_s = refused.value.retry_after_s
    assert wait_s == 6  # at 1:06 the previous minute carries 9: room for one
    clock.now += (wait_s - 1) * 1000
    with pytest.raises(RateLimited):
        limiter.check(limit, "u1")  # a second early it still does not fit
    clock.now += 1000
    limiter.check(limit, "u1")


def test_a_subject_full_in_this_window_waits_into_the_next() -> None:
    clock, counter = Clock(T0 + 1_000), InMemoryCounter()
    limiter, limit = RateLimiter(counter, clock=clock), Limit("user", 4)
    assert allowed(limiter, limit, 4) == 4
    with pytest.raises(RateLimited) as refused:
        limiter.check(limit, "u1")
    # next minute the four carry 4 * (1 - f): one more fits once f >= 1/4, 15 s into it
    assert refused.value.retry_after_s == 59 + 15
    clock.now = T0 + MINUTE_MS + 15_000
    limiter.check(limit, "u1")


def test_each_request_is_one_conditional_write_and_the_closed_window_is_read_once() -> None:
    clock, counter = Clock(T0 + MINUTE_MS + 1), InMemoryCounter()
    limiter, limit = RateLimiter(counter, clock=clock), Limit("user", 100)
    allowed(limiter, limit, 50)
    assert counter.writes == 50 and counter.reads == 1  # the previous minute, read once


def test_subjects_and_scopes_count_apart_and_zero_is_off() -> None:
    clock, counter = Clock(T0), InMemoryCounter()
    limiter = RateLimiter(counter, clock=clock)
    assert allowed(limiter, Limit("user", 2), 3, "a") == 2
    assert allowed(limiter, Limit("user", 2), 3, "b") == 2
    assert allowed(limiter, Limit("key", 2), 3, "a") == 2
    assert allowed(limiter, Limit("user", 0), 50, "a") == 50
