"""Holding and resuming deliveries. A worker holds a message whose tenant is disabled, then reads the tenant again:
an `enable` written between its first read and its hold would otherwise release before the hold existed, and the
message would wait for the next resume. `enable` writes first and releases after, so one of the two always sees the
other (each read consistent); a message released by both is delivered once (pushes are deduplicated by the
deliveries table, a lane's nudge finds nothing left to do). An operator's pause and resume work the same way,
its held lanes kept under the pause's own scope."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol

from herald.clock import Clock, now_ms
from herald.errors import NotFound
from herald.holds.models import Held, HeldQueue, Pause, pause_keys_of


class HoldStore(Protocol):
    def put(self, held: Held) -> None: ...

    def in_scope(self, scope: str) -> list[Held]:
        """Every message held in `scope`, in key order (a consistent read)."""
        ...

    def delete(self, held: Held) -> None: ...

    def put_pause(self, pause: Pause) -> bool:
        """Whether it was written: not when a pause of its key is in force already (a conditional write)."""
        ...

    def pauses(self) -> list[Pause]:
        """Every pause in force (a consistent read)."""
        ...

    def delete_pause(self, key: str) -> bool:
        """Whether there was one to delete."""
        ...


class Requeue(Protocol):
    def __call__(self, queue: HeldQueue, body: str, group_id: str, dedup_id: str) -> None: ...


class Holds:
    def __init__(self, store: HoldStore, requeue: Requeue, clock: Clock = now_ms, cache_ms: int = 5_000) -> None:
        self._store = store
        self._requeue = requeue
        self._clock = clock
        self._cache_ms = cache_ms  # how long a worker keeps the pauses it read (a hold re-reads them: see hold)
        self._cached: tuple[dict[str, Pause], int] | None = None
        self._lock = threading.Lock()

    def hold(self, make: Callable[[int], Held], still_paused: Callable[[], bool]) -> Held:
        """Keep the message `make(now)` builds; released at once when its scope was resumed meanwhile."""
        held = make(self._clock())
        self._store.put(held)
        if not still_paused():
            self.release(held.scope)
        return held

    def held(self, scope: str) -> list[Held]:
        return self._store.in_scope(scope)

    def release(self, scope: str) -> int:
        """Every message held in `scope` back on its queue, in the order held, each removed once it is back."""
        released = 0
        for held in self._store.in_scope(scope):
            self._requeue(held.queue, held.body, held.group_id, held.dedup_id)
            self._store.delete(held)
            released += 1
        return released

    # ------------------------------------------------------------------ operators' pauses
    def pause(self, key: str, by: str, note: str) -> Pause:
        """Pause the lanes `key` names (Pause.key_of); pausing again keeps the first pause, its time and author
        (two operators at once: one write wins, and both are answered with it)."""
        pause = Pause(key, by, note, self._clock())
        written = self._store.put_pause(pause)
        self._forget()
        return pause if written else self._pauses_now().get(key, pause)

    def resume(self, key: str) -> int:
        """End the pause (written first), then put every lane it held back on its queue: how many."""
        if not self._store.delete_pause(key):
            raise NotFound(f"nothing is paused as {key}")
        self._forget()
        return self.release(Pause.scope_of(key))

    def paused(self) -> list[tuple[Pause, int]]:
        """Each pause in force, with how many lanes it holds now."""
        return [(pause, len(self._store.in_scope(pause.scope))) for pause in self._store.pauses()]

    def pause_of(self, lane: str, service_id: str) -> Pause | None:
        """The pause that holds `lane` now, as read at most `cache_ms` ago (the lane's own before its service's)."""
        pauses = self._cached_pauses()
        return next((pauses[key] for key in pause_keys_of(lane, service_id) if key in pauses), None)

    def pause_of_tenant(self, app_code: str) -> Pause | None:
        """The pause that holds the tenant's IM pushes now, as read at most `cache_ms` ago."""
        return self._cached_pauses().get(Pause.key_of_tenant(app_code))

    def pause_of_events_tenant(self, app_code: str) -> Pause | None:
        """The pause that holds the tenant's external events now, as read at most `cache_ms` ago."""
        return self._cached_pauses().get(Pause.key_of_events_tenant(app_code))

    def in_force(self, key: str) -> bool:
        """Whether the pause `key` is in force as stored now (a worker that held a lane asks after its hold)."""
        return key in self._pauses_now()

    def _cached_pauses(self) -> dict[str, Pause]:
        now = self._clock()
        with self._lock:
            cached = self._cached
        if cached is None or now - cached[1] >= self._cache_ms:
            return self._pauses_now()
        return cached[0]

    def _forget(self) -> None:
        with self._lock:
            self._cached = None

    def _pauses_now(self) -> dict[str, Pause]:
        pauses = {pause.key: pause for pause in self._store.pauses()}
        with self._lock:
            self._cached = pauses, self._clock()
        return pauses
