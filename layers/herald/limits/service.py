"""Abuse limits: request counters per app user, per service key, per target and per owner, kept by a
`Counter` that increments with a conditional write, so a limit holds across every Lambda instance. Over its
limit a caller gets `429 RATE_LIMITED` with `Retry-After`: the seconds until a request would pass. A limit
of 0 is off.

The window slides: a request counts against the current fixed window plus the previous window's count
weighted by how much of it still lies inside the last `window_seconds` (Cloudflare's two-window estimate).
A burst at the end of one clock minute therefore leaves little for the start of the next, where fixed
windows would let twice the limit through. Still one conditional write per request: the previous window is
closed, so its count is read once per instance and remembered.
"""

from __future__ import annotations

import math
import secrets
import threading
from dataclasses import dataclass
from typing import Protocol

from herald.clock import Clock, now_ms
from herald.errors import RateLimited

_REMEMBERED_WINDOWS = 10_000  # closed windows' counts kept per instance, then forgotten all at once


@dataclass(frozen=True)
class Limit:
    scope: str  # "user", "key", "target", ...: part of the counter's name
    per_window: int
    window_seconds: int = 60


class Counter(Protocol):
    def hit(self, bucket: str, limit: int, expires_at_s: int, token: str) -> int | None:
        """Count one hit in `bucket` unless it already holds `limit`: None when counted, else the hits the full
        bucket holds. `token` is this hit's own: the same hit sent again (a lost reply) is counted once."""
        ...

    def count(self, bucket: str) -> int:
        """The hits `bucket` holds (0 for one never hit)."""
        ...


@dataclass(frozen=True)
class Window:
    """Where `now` stands in its fixed window, and what the previous one carries into the sliding one."""

    start_ms: int
    length_ms: int
    now_ms: int
    previous_hits: int

    @property
    def carried(self) -> float:
        """The previous window's hits still inside the sliding window ending now."""
        return self.previous_hits * (1 - (self.now_ms - self.start_ms) / self.length_ms)

    def room(self, limit: int) -> int:
        """How many hits the current window may hold before the next one is refused: one more request
        passes while it keeps the estimate (carried + current hits, itself included) within the limit."""
        return math.floor(limit - self.carried + 1e-9)

    def wait_ms(self, limit: int, current_hits: int) -> int:
        """Until one more request fits: later in this window as the previous one fades, or in the next."""
        if self.previous_hits and current_hits + 1 <= limit:
            fraction = 1 - (limit - current_hits - 1) / self.previous_hits
            return max(0, self.start_ms + math.ceil(self.length_ms * fraction) - self.now_ms)
        fraction = max(0.0, 1 - (limit - 1) / current_hits) if current_hits else 0.0
        return self.start_ms + self.length_ms + math.ceil(self.length_ms * fraction) - self.now_ms


class RateLimiter:
    def __init__(self, counter: Counter, clock: Clock = now_ms) -> None:
        self._counter = counter
        self._clock = clock
        self._closed: dict[str, int] = {}
        self._lock = threading.Lock()

    def check(self, limit: Limit, subject: str) -> None:
        if limit.per_window <= 0:
            return
        now, length = self._clock(), limit.window_seconds * 1000
        start = now - now % length
        name = f"{limit.scope}#{subject}#"
        window = Window(start, length, now, self._closed_count(f"{name}{(start - length) // 1000}"))
        bucket = f"{name}{start // 1000}"
        room = window.room(limit.per_window)
        expires_at_s = (start + 2 * length) // 1000 + 60
        token = secrets.token_hex(8)
        held = self._counter.hit(bucket, room, expires_at_s, token) if room > 0 else self._counter.count(bucket)
        if held is None:
            return
        wait_ms = window.wait_ms(limit.per_window, held)
        raise RateLimited(
            f"over the {limit.scope} limit of {limit.per_window} requests per {limit.window_seconds} s",
            reason=f"{limit.scope}_rate_limited",
            retry_after_s=max(1, math.ceil(wait_ms / 1000)),
        )

    def _closed_count(self, bucket: str) -> int:
        with self._lock:
            known = self._closed.get(bucket)
        if known is not None:
            return known
        hits = self._counter.count(bucket)
        with self._lock:
            if len(self._closed) >= _REMEMBERED_WINDOWS:
                self._closed.clear()
            self._closed[bucket] = hits
        return hits
