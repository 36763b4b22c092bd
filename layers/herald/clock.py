"""Wall-clock time in epoch milliseconds, the unit of every `*_at_ms` field."""

import time
from collections.abc import Callable

Clock = Callable[[], int]


def now_ms() -> int:
    return time.time_ns() // 1_000_000
