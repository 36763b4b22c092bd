"""A clock a test moves by hand, made the process container's clock: leases and expiries pass without
sleeping (SQS visibility and DynamoDB TTL keep their own time, as in AWS)."""

from __future__ import annotations

from herald.clock import now_ms
from tests.support.container import reconfigure


class FakeClock:
    def __init__(self, start_ms: int) -> None:
        self.now = start_ms
        self.slept_ms = 0

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms

    def sleep(self, seconds: float) -> None:
        """A sleep that passes on this clock (a governor's wait), added up in `slept_ms`."""
        ms = round(seconds * 1000)
        self.slept_ms += ms
        self.advance(ms)


def most_in_any_window(times: list[int], window_ms: int = 1000) -> int:
    """The most of `times` (ms) inside any window of `window_ms` starting at one of them: what a provider
    counting a sliding window would see."""
    return max(sum(1 for t in times if start <= t < start + window_ms) for start in times)


def controlled_clock() -> FakeClock:
    """A clock starting now, for every part the process builds from here on (its settings kept)."""
    clock = FakeClock(now_ms())
    reconfigure(clock=clock)
    return clock
