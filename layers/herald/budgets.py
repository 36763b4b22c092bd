"""Every time budget Herald keeps, in one place, and the check made before each external call.

AWS enforces some numbers (function timeouts, queue visibility, receive counts: template.yaml) and Herald the
rest (provider timeouts, leases, the events worker's reserve, attempt limits: here, the defaults of
`herald.settings`). They only work together: a worker must never start a provider call it cannot finish and
record, a lease must outlive the invocation that holds it, a queue must not hand a message to a second
worker while the first still runs it, and a message must not be dead-lettered for receives it never used.
`tests/unit/test_time_budgets.py` reads template.yaml and fails when any of these no longer fit.

A worker runs each invocation inside `invocation(context.get_remaining_time_in_millis)`; the provider
HTTP client calls `ensure_time_for_provider_call` before every request, which raises `OutOfTime` (nothing
was sent) when the call could outlive the invocation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

# One provider request (Tencent IM, Feishu): at most this long to connect, then this long for the answer.
PROVIDER_CONNECT_S = 2.0
PROVIDER_READ_S = 5.0
PROVIDER_CALL_MS = int((PROVIDER_CONNECT_S + PROVIDER_READ_S) * 1000)
# One call to an owner service (docs/owner-services.md): connect and the whole answer within this, in all,
# however the owner paces its bytes; the HTTP function (Timeout 15 s) answers a receiver's click well inside it.
OWNER_CALL_TOTAL_S = 5.0
# Time kept after a provider call to record its outcome in DynamoDB (a write takes milliseconds; this is
# the margin for a slow one). A worker that cannot record an outcome must not start the call.
RECORD_OUTCOME_MS = 2_000
# Lambda's guidance: a queue's visibility timeout at least six times its consumer's function timeout.
VISIBILITY_PER_FUNCTION_TIMEOUT = 6

# IM pushes: Tencent errors retried with backoff for this many attempts (about 8.5 minutes), then the push
# is dead-lettered by Herald with its reason.
IM_PUSH_MAX_ATTEMPTS = 8
# External events: a job's side effect needs at most a token request and a send, plus the claim, mark and
# completion writes around them; no job is claimed with less than this left.
EVENTS_RESERVE_MS = 2 * PROVIDER_CALL_MS + 3 * RECORD_OUTCOME_MS
EVENTS_MAX_ATTEMPTS = 5
# A claim must outlive the invocation holding it (events worker Timeout 30 s; HTTP function Timeout 15 s),
# or a second worker (or the confirms janitor) would take over work that is still running.
EVENTS_LEASE_MS = 60_000
CONFIRM_LEASE_MS = 20_000

_time_left: ContextVar[Callable[[], int] | None] = ContextVar("herald_time_left", default=None)


class OutOfTime(Exception):
    """Too little of the invocation is left to start this call; nothing was sent."""


@contextmanager
def invocation(remaining_ms: Callable[[], int]) -> Iterator[None]:
    """Calls made inside are checked against the invocation's remaining time."""
    token = _time_left.set(remaining_ms)
    try:
        yield
    finally:
        _time_left.reset(token)


_PROVIDER_CALL_RECORDED_MS = PROVIDER_CALL_MS + RECORD_OUTCOME_MS  # a call, then its outcome written


def time_for_provider_call() -> bool:
    """Whether a provider call started now could finish and be recorded within the invocation."""
    return spare_ms() >= 0


def spare_ms() -> int:
    """How long a provider call may wait to start and still finish and be recorded within the invocation
    (outside one, a provider call's own time)."""
    remaining = _time_left.get()
    return PROVIDER_CALL_MS if remaining is None else remaining() - _PROVIDER_CALL_RECORDED_MS


def ensure_time_for_provider_call(what: str) -> None:
    """Raise `OutOfTime` when a provider call started now might not finish and be recorded in time (never
    outside a worker invocation: the HTTP function answers its caller; a CLI has no deadline)."""
    if (spare := spare_ms()) < 0:
        left, needed = spare + _PROVIDER_CALL_RECORDED_MS, _PROVIDER_CALL_RECORDED_MS
        raise OutOfTime(f"{what}: {left} ms of the invocation left, {needed} ms needed")
