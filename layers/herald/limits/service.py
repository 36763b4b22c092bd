"""Abuse limits (CONTRACTS §0): fixed-window request counters per app user, per service key and per
target, kept by a `Counter` that increments with a conditional write, so a limit holds across every
Lambda instance. Over its limit a caller gets `429 RATE_LIMITED` with `Retry-After`: the seconds until
its window ends. A limit of 0 is off.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from herald.clock import Clock, now_ms
from herald.errors import RateLimited


@dataclass(frozen=True)
class Limit:
    scope: str  # "user", "key", "target", ...: part of the counter's name
    per_window: int
    window_seconds: int = 60


class Counter(Protocol):
    def hit(self, bucket: str, limit: int, expires_at_s: int) -> bool:
        """Count one hit in `bucket` unless it already holds `limit`; False when it was full."""
        ...


class RateLimiter:
    def __init__(self, counter: Counter, clock: Clock = now_ms) -> None:
        self._counter = counter
        self._clock = clock

    def check(self, limit: Limit, subject: str) -> None:
        if limit.per_window <= 0:
            return
        now_s = self._clock() // 1000
        window_start = now_s - now_s % limit.window_seconds
        window_end = window_start + limit.window_seconds
        bucket = f"{limit.scope}#{subject}#{window_start}"
        if not self._counter.hit(bucket, limit.per_window, expires_at_s=window_end + 60):
            raise RateLimited(
                f"over the {limit.scope} limit of {limit.per_window} requests per {limit.window_seconds} s",
                reason=f"{limit.scope}_rate_limited",
                retry_after_s=max(1, window_end - now_s),
            )
