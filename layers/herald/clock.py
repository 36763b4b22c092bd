"""Wall-clock time in epoch milliseconds, the unit of every `*_at_ms` field."""

import time
from collections.abc import Callable

Clock = Callable[[], int]


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def utc_date(at_ms: int) -> str:
    """The day of a moment, in UTC (`2026-12-05`)."""
    return time.strftime("%Y-%m-%d", time.gmtime(at_ms / 1000))


def utc_text(at_ms: int) -> str:
    """A moment as a person reads it in a recorded reason (`2026-12-05 11:58:44 UTC`), not epoch milliseconds."""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at_ms / 1000))
