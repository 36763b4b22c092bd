"""A clock a test moves by hand, made the process container's clock: leases and expiries pass without
sleeping (SQS visibility and DynamoDB TTL keep their own time, as in AWS)."""

from __future__ import annotations

from herald.clock import now_ms
from herald.container import Container, use
from herald.settings import Settings


class FakeClock:
    def __init__(self, start_ms: int) -> None:
        self.now = start_ms

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


def controlled_clock() -> FakeClock:
    """A clock starting now, for every part the process builds from here on (settings from the environment)."""
    clock = FakeClock(now_ms())
    use(Container(Settings.from_env(), clock=clock))
    return clock
