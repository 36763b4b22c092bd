"""Outbound governors: Herald's calls to a provider kept under the provider's own published limits, across
every Lambda instance. Each limit is a bucket kept in DynamoDB and paced as a generic cell rate algorithm:
the bucket stores the theoretical time its next call is due (`due_ms`); a call is let through while that
time is at most `burst - 1` intervals ahead of now, and pushes it one interval on. One read and one
conditional write a call; a lost race reads again.

Every bucket runs below its published limit by `headroom` (a per-second limit paced with no burst; a
per-minute one with a tenth of it as a burst, so no sliding minute holds more than the limit). A provider's
rate-limit answer halves the bucket's rate (multiplicative decrease) and the rate climbs back to the
configured one over `recovery_s` (additive increase): Herald slows down where the provider says so, then
recovers by itself.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from herald.clock import Clock, now_ms

HEADROOM = 0.9  # the share of a published limit Herald plans to use: arrivals jitter, clocks differ
SLOWEST_SHARE = 0.05  # a refusal never cuts a bucket below this share of its limit
_RACES = 20


@dataclass(frozen=True)
class BucketLimit:
    """A provider's published limit, `calls` per `per_seconds`, as Herald paces it."""

    calls: int
    per_seconds: int = 1
    recovery_s: float = 30.0  # after a refusal, back to the full rate in this long
    headroom: float = HEADROOM

    @property
    def rate_per_s(self) -> float:
        return self.calls * self.headroom / self.per_seconds

    @property
    def burst(self) -> int:
        """Calls that may go at once: none beyond pacing for a per-second limit, a tenth of a longer one."""
        return 1 if self.per_seconds <= 1 else max(1, round(self.calls * (1 - self.headroom)))

    @property
    def off(self) -> bool:
        return self.calls <= 0


@dataclass(frozen=True)
class Bucket:
    """A bucket as stored: when its next call is due, and its last cut (a provider's refusal)."""

    due_ms: float = 0.0
    cut_rate_per_s: float = 0.0  # the rate right after the last cut (0: never cut)
    cut_at_ms: int = 0
    version: int = 0  # the store's optimistic lock

    def rate_per_s(self, limit: BucketLimit, now: int) -> float:
        """The rate now: the limit's, or climbing back to it linearly since the last cut."""
        full = limit.rate_per_s
        if not self.cut_rate_per_s:
            return full
        climbed = self.cut_rate_per_s + (now - self.cut_at_ms) / 1000 * full / limit.recovery_s
        return min(full, climbed)

    def take(self, limit: BucketLimit, now: int) -> tuple[Bucket | None, int]:
        """The bucket after one call now, or None and how long (ms) until one would pass."""
        interval = 1000 / self.rate_per_s(limit, now)
        due = max(self.due_ms, now)
        early = due - now - (limit.burst - 1) * interval
        if early >= 1:  # within a millisecond is due (times near 1.8e12 ms carry float rounding)
            return None, max(1, math.ceil(early))
        return replace(self, due_ms=due + interval), 0

    def refused(self, limit: BucketLimit, now: int, retry_after_ms: int = 0) -> Bucket:
        """A provider's rate-limit answer: half the rate now (never below SLOWEST_SHARE of the limit), and
        nothing more until its suggested wait has passed."""
        cut = max(limit.rate_per_s * SLOWEST_SHARE, self.rate_per_s(limit, now) / 2)
        return replace(self, cut_rate_per_s=cut, cut_at_ms=now, due_ms=max(self.due_ms, now + retry_after_ms))


class BucketStore(Protocol):
    def read(self, name: str) -> Bucket:
        """The bucket as stored (a fresh one if it was never used)."""
        ...

    def write(self, name: str, bucket: Bucket, expires_at_s: int) -> bool:
        """Store `bucket` if the stored one still has `bucket.version` (False if another instance wrote
        first); the stored version becomes `bucket.version + 1`."""
        ...


@dataclass(frozen=True)
class Gate:
    """One limit a call counts against: the bucket's name (e.g. `feishu:chat:cli_x:oc_1`) and its limit."""

    name: str
    limit: BucketLimit


class Governor:
    """Takes a call's tokens from its buckets, waiting for them while the caller's time allows."""

    def __init__(self, store: BucketStore, clock: Clock = now_ms, sleep: Callable[[float], None] = time.sleep) -> None:
        self._store = store
        self._clock = clock
        self._sleep = sleep

    def take(self, gates: Sequence[Gate], budget_ms: Callable[[], int] = lambda: 0) -> int:
        """Take a token from each gate in turn, waiting for one while `budget_ms()` allows (a token taken is
        kept while a later gate is waited for). 0 when the call may go now, else the ms it would still have
        to wait: then it does not go, and the tokens it took are spent (a little capacity, never a call over
        a limit)."""
        for gate in gates:
            if gate.limit.off:
                continue
            while wait := self._take_one(gate):
                if wait > budget_ms():
                    return wait
                self._sleep(wait / 1000)
        return 0

    def refused(self, gate: Gate, retry_after_ms: int = 0) -> None:
        """The provider answered a call through `gate` with its rate-limit code: slow that bucket down."""
        self._update(gate, lambda bucket, now: (bucket.refused(gate.limit, now, retry_after_ms), 0))

    def _take_one(self, gate: Gate) -> int:
        return self._update(gate, lambda bucket, now: bucket.take(gate.limit, now))

    def _update(self, gate: Gate, step: Callable[[Bucket, int], tuple[Bucket | None, int]]) -> int:
        for _ in range(_RACES):
            now = self._clock()
            bucket = self._store.read(gate.name)
            after, wait = step(bucket, now)
            if after is None:
                return wait
            expires_at_s = int(max(after.due_ms, now) / 1000) + 2 * gate.limit.per_seconds + 3600
            if self._store.write(gate.name, after, expires_at_s):
                return 0
        return 1  # lost every race: the bucket is contended right now; ask again in a moment
