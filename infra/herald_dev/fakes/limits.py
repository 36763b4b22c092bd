"""Rate limits a provider fake enforces as the provider does: calls per second per scope (the app, one chat),
counted over a sliding second at arrival; a call over any of them is refused and not done. And how long the
fake takes to answer. Set through each fake's `POST /__fake/limits`; none by default (tests assume none)."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

WINDOW_S = 1.0


@dataclass
class EnforcedLimits:
    """`per_second[scope kind]` calls a sliding second for each scope of that kind (0 or absent: none), and
    `latency_s` before every answer. `refused[scope kind]` counts the calls refused."""

    per_second: dict[str, int] = field(default_factory=dict)
    latency_s: float = 0.0
    refused: dict[str, int] = field(default_factory=dict)
    clock: Callable[[], float] = time.monotonic
    _arrivals: dict[str, deque[float]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def configure(self, per_second: dict[str, int], latency_ms: int) -> None:
        with self._lock:
            self.per_second = {kind: int(limit) for kind, limit in per_second.items()}
            self.latency_s = max(0, latency_ms) / 1000
            self.refused = {}
            self._arrivals = {}

    def admit(self, scopes: dict[str, str]) -> str | None:
        """Count one call against each `kind -> scope`; the kind whose limit it is over (nothing counted),
        or None when it may be done."""
        now = self.clock()
        with self._lock:
            windows = []
            for kind, scope in scopes.items():
                limit = self.per_second.get(kind, 0)
                if limit <= 0:
                    continue
                arrivals = self._arrivals.setdefault(f"{kind}:{scope}", deque())
                while arrivals and arrivals[0] <= now - WINDOW_S:
                    arrivals.popleft()
                if len(arrivals) >= limit:
                    self.refused[kind] = self.refused.get(kind, 0) + 1
                    return kind
                windows.append(arrivals)
            for arrivals in windows:
                arrivals.append(now)
        return None

    def answer_delay(self) -> None:
        """The provider's time to answer (a benchmark's stand-in for a real round trip)."""
        if self.latency_s:
            time.sleep(self.latency_s)
