"""The one retry loop: an operation tried again, after a jittered pause, while it fails in a way worth
another try (a lost optimistic race, throttling). Plain Python: stores and services both use it."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def with_backoff(
    operation: Callable[[], T],
    *,
    retry_on: Callable[[Exception], bool],
    attempts: int,
    base_s: float,
    cap_s: float,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """`operation()`, tried up to `attempts` times while what it raises is something `retry_on` accepts;
    before each new try a pause drawn from [0, min(cap_s, base_s * 2**try)) (full jitter, so racing callers
    spread out). The last try's error is raised as it is."""
    for attempt in range(attempts - 1):
        try:
            return operation()
        except Exception as error:
            if not retry_on(error):
                raise
            sleep(random.uniform(0, min(cap_s, base_s * 2**attempt)))  # noqa: S311 - jitter, not secrecy
    return operation()
