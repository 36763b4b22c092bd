"""A clock a test moves by hand, made the process container's clock: leases and expiries pass without
sleeping (SQS visibility and DynamoDB TTL keep their own time, as in AWS)."""

from __future__ import annotations

from herald.clock import now_ms
from tests.support.container import reconfigure


class FakeClock:
    def __init__(self, start_ms: int) -> None:
        self.now = start_ms

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


def controlled_clock() -> FakeClock:
    """A clock starting now, for every part the process builds from here on (its settings kept)."""
    clock = FakeClock(now_ms())
    reconfigure(clock=clock)
    return clock
