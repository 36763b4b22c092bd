"""A provider app's circuit, shared by every Lambda instance: no worker is held for another's provider problem.

Calls to one provider app (a tenant's Feishu app, a Tencent IM app) hold a slot each while in flight, at most
`calls_at_once` of them across the stack, so an app that accepts connections and never answers holds that many
workers, never the whole pool: the others serve every other app. Failed calls in a row (no answer, a 5xx) park
the app: its calls are refused, uncalled (`Parked`), so its work waits in the queue instead of failing one
attempt per lane; after the park one call at a time probes it (half open), and a failed probe parks it again
for twice as long (up to `longest_park_ms`). One answer that is not a failure closes it.

The state is one item per app, read and written over its version (herald.limits.dynamo)."""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
from typing import Protocol

from herald.clock import Clock, now_ms
from herald.errors import DeliveryError

_RACES = 20
_FRESH_MS = 1_000  # how old a state read for `wait_ms` may be when the call's entry starts from it


@dataclass(frozen=True)
class CircuitLimits:
    calls_at_once: int = 4  # below the worker pool: an app that hangs leaves the rest of the pool to others
    failures_to_park: int = 3
    first_park_ms: int = 5_000
    longest_park_ms: int = 60_000
    busy_wait_ms: int = 1_000  # how soon a call refused for want of a slot asks again
    slow_call_ms: int = 1_000  # slots held longer than this: the call refused waits until the first of them ends


@dataclass(frozen=True)
class CircuitState:
    """One app's circuit as stored: its calls in flight (a token each, and when its lease ends), its failures
    in a row, and until when it is parked."""

    calls: tuple[tuple[str, int, int], ...] = ()  # in flight: a token each, when it started, when its lease ends
    failures: int = 0
    parked_until_ms: int = 0
    parks: int = 0  # parks in a row: each doubles the next
    version: int = 0  # the store's optimistic lock

    def live(self, now: int) -> tuple[tuple[str, int, int], ...]:
        """The calls still in flight (a worker that died leaves its slot until the lease it took ends)."""
        return tuple(call for call in self.calls if call[2] > now)

    def wait_ms(self, now: int, limits: CircuitLimits) -> tuple[int, str]:
        """0 when a call may start now; else how long until it may, and why."""
        if self.parked_until_ms > now:
            return self.parked_until_ms - now, f"parked after {self.failures} failed calls in a row"
        live = self.live(now)
        first_ends = min((until for _, _, until in live), default=now) - now
        if self.failures >= limits.failures_to_park and live:  # half open: its probe answers, or times out
            return max(limits.busy_wait_ms, min(limits.first_park_ms, first_ends)), "its probe is in flight"
        if len(live) < limits.calls_at_once:
            return 0, ""
        if now - min(started for _, started, _ in live) < limits.slow_call_ms:
            return limits.busy_wait_ms, f"{limits.calls_at_once} calls in flight"
        # Every slot held by calls slower than the app answers: they end (answered or timed out) no later than this.
        return max(limits.busy_wait_ms, min(limits.first_park_ms, first_ends)), f"{len(live)} slow calls in flight"

    def entered(self, token: str, until_ms: int, now: int) -> CircuitState:
        return replace(self, calls=(*self.live(now), (token, now, until_ms)))

    def answered(self, token: str) -> CircuitState:
        """After a call the app answered: its slot freed, and the circuit closed."""
        calls = tuple(call for call in self.calls if call[0] != token)
        return replace(self, calls=calls, failures=0, parked_until_ms=0, parks=0)

    def failed(self, token: str, now: int, limits: CircuitLimits) -> CircuitState:
        """After a call that failed: it counts, and parks the app at `failures_to_park` in a row (a failure while
        it is parked already, a call started before, changes no park)."""
        calls = tuple(call for call in self.live(now) if call[0] != token)
        failures = self.failures + 1
        if failures < limits.failures_to_park or self.parked_until_ms > now:
            return replace(self, calls=calls, failures=failures)
        park = min(limits.longest_park_ms, limits.first_park_ms * 2**self.parks)
        return replace(self, calls=calls, failures=failures, parked_until_ms=now + park, parks=self.parks + 1)


class CircuitStore(Protocol):
    def read(self, name: str) -> CircuitState:
        """The circuit as stored (a closed one if it was never used)."""
        ...

    def write(self, name: str, state: CircuitState) -> bool:
        """Store it only if the stored one still has its `version` (False if another wrote first)."""
        ...

    def answered(self, name: str, token: str) -> None:
        """`CircuitState.answered` of the stored one, in one write whatever its version (no read: the common end
        of a call costs one request); its version moves on, so a writer that read before loses its race."""
        ...


class Parked(DeliveryError):
    """Not called: the provider app's circuit refuses calls for `wait_ms` (parked, or every slot in flight).
    Nothing left this machine; the work waits for the app, and it is not an attempt of the work."""

    def __init__(self, message: str, wait_ms: int) -> None:
        super().__init__(message, retryable=True)
        self.wait_ms = max(1, wait_ms)


class CallGuard(Protocol):
    def call(self, lease_ms: int) -> AbstractContextManager[Callable[[], None]]:
        """A context around one provider call (its slot held for at most `lease_ms`); Parked when it may not
        start. The call site calls the yielded function when the call failed (no answer, a 5xx)."""
        ...


class AppCircuit(CallGuard, Protocol):
    def parked_ms(self) -> int:
        """How long the app stays parked from now (0: it is not)."""
        ...

    def wait_ms(self) -> int:
        """How long until a call may start (0: now)."""
        ...


class Circuit:
    """One provider app's circuit (`name`: e.g. `feishu:cli_x`), shared through its store."""

    def __init__(self, store: CircuitStore, name: str, limits: CircuitLimits, clock: Clock = now_ms) -> None:
        self._store = store
        self._name = name
        self._limits = limits
        self._clock = clock
        self._last_read = (
            threading.local()
        )  # `wait_ms`'s read, for this thread's next call (IM pushes run side by side)

    @contextmanager
    def call(self, lease_ms: int) -> Iterator[Callable[[], None]]:
        token = self._enter(lease_ms)
        failures: list[bool] = []
        try:
            yield lambda: failures.append(True)
        finally:
            self._leave(token, failed=bool(failures))

    def parked_ms(self) -> int:
        """How long the app stays parked from now (0: it is not)."""
        now = self._clock()
        return max(0, self._read().parked_until_ms - now)

    def wait_ms(self) -> int:
        """How long until a call may start (0: now). Work asks before it writes anything of its own, so work
        refused writes nothing; the state read is the one the call's entry starts from, so asking costs no
        request of its own."""
        state, now = self._read(), self._clock()
        self._last_read.state = (state, now)
        return state.wait_ms(now, self._limits)[0]

    def _read(self) -> CircuitState:
        return self._store.read(self._name)

    def _enter(self, lease_ms: int) -> str:
        token = secrets.token_hex(6)
        for _ in range(_RACES):
            now = self._clock()
            state = self._fresh_read(now)
            wait, why = state.wait_ms(now, self._limits)
            if wait:
                raise Parked(f"{self._name} is not called now: {why}", wait)
            if self._store.write(self._name, state.entered(token, now + lease_ms, now)):
                return token
        raise Parked(f"{self._name} is not called now: its circuit is contended", self._limits.busy_wait_ms)

    def _fresh_read(self, now: int) -> CircuitState:
        """The state `wait_ms` read moments ago (its write is conditional on its version), else read now."""
        last: tuple[CircuitState, int] | None = getattr(self._last_read, "state", None)
        self._last_read.state = None
        if last is not None and now - last[1] <= _FRESH_MS:
            return last[0]
        return self._read()

    def _leave(self, token: str, failed: bool) -> None:
        if not failed:
            self._store.answered(self._name, token)
            return
        for _ in range(_RACES):
            now = self._clock()
            if self._store.write(self._name, self._read().failed(token, now, self._limits)):
                return


class Unguarded:
    """Calls with no circuit (a unit test's provider, a tool's one-off call)."""

    @contextmanager
    def call(self, lease_ms: int) -> Iterator[Callable[[], None]]:
        yield lambda: None

    def parked_ms(self) -> int:
        return 0

    def wait_ms(self) -> int:
        return 0


def waits_for_app(exc: DeliveryError, circuit: AppCircuit) -> int:
    """How long work whose call failed with `exc` waits for its app, untried and not counting an attempt: the
    circuit refused the call, or this failure (or another's) parked the app. 0: a failure of the work's own."""
    if isinstance(exc, Parked):
        return exc.wait_ms
    return circuit.parked_ms() if exc.retryable and not exc.throttled else 0
