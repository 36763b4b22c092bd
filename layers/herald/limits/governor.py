"""Outbound governors: Herald's calls to a provider kept under the provider's own published limits, across
every Lambda instance. Each limit is a bucket kept in DynamoDB and paced as a generic cell rate algorithm:
the bucket stores the theoretical time its next call is due (`due_ms`); a call is let through once that
time is at most `burst - 1` intervals ahead, and pushes it one interval on. A call reserves its moment in
every bucket it counts against with one read of each and one conditional write of all; a lost race reads
again.

Every bucket runs below its published limit by `headroom` (a per-second limit paced with no burst; a
per-minute one with a tenth of it as a burst, so no sliding minute holds more than the limit). A provider's
rate-limit answer halves the bucket's rate (multiplicative decrease) and the rate climbs back to the
configured one over `recovery_s` (additive increase): Herald slows down where the provider says so, then
recovers by itself.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple, Protocol

from herald.clock import Clock, now_ms
from herald.limits.shares import ASKED_RECENTLY_MS, Claim, Share, SharedBucket

HEADROOM = 0.9  # the share of a published limit Herald plans to use: arrivals jitter, clocks differ
SLOWEST_SHARE = 0.05  # a refusal never cuts a bucket below this share of its limit
_RACES = 20
_RESERVE_AGAIN_MS = 2_000  # a late call waits at most this long for its next moment, or goes as it is
_LATE_RESERVATIONS = 3  # how many times a call late for its moment takes the next one
_LEAD_WEIGHT = 0.3  # how much the last call's reservation and last step count in the lead (a moving average)
_MOST_LEAD_MS = 1_000.0


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

    @property
    def slack_ms(self) -> float:
        """How much later than paced a call may reach the provider before a window of `per_seconds` holds
        more than `calls`: the time that pacing below the limit leaves spare in each window."""
        return self.per_seconds * 1000 * (1 / self.headroom - 1)


@dataclass(frozen=True)
class Bucket:
    """A bucket as stored: when its next call is due, and its last cut (a provider's refusal)."""

    due_ms: float = 0.0
    cut_rate_per_s: float = 0.0  # the rate right after the last cut (0: never cut)
    cut_at_ms: int = 0
    version: int = 0  # the store's optimistic lock
    claims: Mapping[str, Claim] = field(default_factory=dict)  # a shared bucket's sharers (herald.limits.shares)

    def rate_per_s(self, limit: BucketLimit, now: int) -> float:
        """The rate now: the limit's, or climbing back to it linearly since the last cut."""
        full = limit.rate_per_s
        if not self.cut_rate_per_s:
            return full
        climbed = self.cut_rate_per_s + (now - self.cut_at_ms) / 1000 * full / limit.recovery_s
        return min(full, climbed)

    def interval_ms(self, limit: BucketLimit, now: int) -> float:
        return 1000 / self.rate_per_s(limit, now)

    def earliest_ms(self, limit: BucketLimit, now: int) -> float:
        """The first moment, now or later, at which the bucket lets a call through."""
        return max(now, self.due_ms - (limit.burst - 1) * self.interval_ms(limit, now))

    def taken(self, limit: BucketLimit, now: int, at_ms: float) -> Bucket:
        """The bucket after a call reserved for `at_ms` (no earlier than `earliest_ms`)."""
        return replace(self, due_ms=max(self.due_ms, at_ms) + self.interval_ms(limit, now))

    def refused(self, limit: BucketLimit, now: int, retry_after_ms: int = 0) -> Bucket:
        """A provider's rate-limit answer. One that says when it accepts again (`retry_after_ms`) holds the
        bucket until then and no longer: its rate is untouched, so the calls after the hold go at the limit's
        pace. One that does not halves the rate now (never below SLOWEST_SHARE of the limit)."""
        if retry_after_ms > 0:
            return replace(self, due_ms=max(self.due_ms, now + retry_after_ms))
        cut = max(limit.rate_per_s * SLOWEST_SHARE, self.rate_per_s(limit, now) / 2)
        return replace(self, cut_rate_per_s=cut, cut_at_ms=now, due_ms=max(self.due_ms, float(now)))


class BucketStore(Protocol):
    def read(self, name: str) -> Bucket:
        """The bucket as stored (a fresh one if it was never used)."""
        ...

    def write(self, buckets: Mapping[str, Bucket], expires_at_s: int) -> bool:
        """Store every bucket (by name), all or none: only if each stored one still has its `version` (False
        if another instance wrote one first); each stored version becomes its `version + 1`."""
        ...


class Look(NamedTuple):
    """What a look before the work begins found (`Governor.look`): the ms until the call could go, when that is
    beyond the caller's budget (0: go on), and whether its part of a shared app is what holds it back."""

    wait_ms: int = 0
    over_part: bool = False


class Reservation(NamedTuple):
    """A call's moment (None: none reserved), the ms until it (or until the earliest one), and whether that is
    worth waiting for in the caller's time (not when the call's sharer is over its part of a shared app)."""

    moment: float | None
    wait_ms: int
    worth_waiting: bool = True


@dataclass(frozen=True)
class Gate:
    """One limit a call counts against: the bucket's name (e.g. `feishu:chat:cli_x:oc_1`) and its limit."""

    name: str
    limit: BucketLimit
    shared: bool = False  # an app's bucket: shared fairly between the calls' sharers (herald.limits.shares)


class Governor:
    """Reserves a call's moment in all its buckets at once, and waits for it while the caller's time allows.

    A call is let through at one moment in every bucket it counts against (the chat's and the app's): the
    earliest every one of them allows, written to all of them in one conditional write. Tokens taken one
    bucket at a time would be held while the next was waited for, and the call would reach the provider
    long after the first bucket counted it: calls then bunch up on arrival, over the very limit paced."""

    def __init__(self, store: BucketStore, clock: Clock = now_ms, sleep: Callable[[float], None] = time.sleep) -> None:
        self._store = store
        self._clock = clock
        self._sleep = sleep
        # How long reserving a moment and the caller's last step have been taking (a moving average): a moment
        # is reserved at least that far ahead, so the call is ready when its moment comes instead of going late.
        self._lead_ms = 0.0
        # One reservation at a time in this instance: its threads (pushes side by side) would otherwise race
        # each other for the same bucket item, each win costing every other thread a read and a write.
        self._reserving = threading.Lock()
        # Until when this instance last saw each gate crowded (no moment within a caller's budget) or, shared,
        # contended (others asked): only then is it looked at before a call's work begins (`look`); alone and
        # unhurried, a call pays no read for it.
        self._watched_until: dict[str, int] = {}

    def take(
        self,
        gates: Sequence[Gate],
        budget_ms: Callable[[], int] = lambda: 0,
        meanwhile: Callable[[], object] = lambda: None,
        share: Share | None = None,
    ) -> int:
        """Reserve the call's moment, run `meanwhile` (the caller's last step before the call), and wait for
        the moment: 0 when the call may go now, else the ms it would still have to wait beyond `budget_ms()`
        (then nothing is reserved, `meanwhile` does not run, and the call does not go). What `meanwhile`
        does comes out of the wait instead of coming between the moment and the call. `share`: whose call it
        is, for the shared gates' fair share (None: the call shares nothing)."""
        paced = [gate for gate in gates if not gate.limit.off]
        if not paced:
            meanwhile()
            return 0
        while True:
            budget = budget_ms()
            moment, wait, worth_waiting = self._reserve(paced, budget, self._lead_ms, share)
            if moment is not None:
                break
            if wait > budget or not worth_waiting:
                self._watch(paced)
                return wait
            self._sleep(wait / 1000)  # lost every race, or others' moments are near: try again then
        reserved_at = moment - wait
        meanwhile()
        took = min(_MOST_LEAD_MS, self._clock() - reserved_at)
        self._lead_ms += _LEAD_WEIGHT * (took - self._lead_ms)
        self._go_at(paced, moment)
        return 0

    def look(self, gates: Sequence[Gate], budget_ms: int, share: Share | None = None) -> Look:
        """Before a job is claimed: whether its call would find its moment within `budget_ms`, and whether its
        sharer is over its part of a shared gate while others ask too. Only the gates this instance saw crowded or
        contended within the last seconds are read, so work that cannot go now goes back to its queue writing
        nothing, and a call alone and unhurried pays no read for it."""
        now = self._clock()
        watched = [gate for gate in gates if not gate.limit.off and self._watched_until.get(gate.name, 0) > now]
        if not watched:
            return Look()
        buckets = {gate.name: self._store.read(gate.name) for gate in watched}
        earliest = {gate.name: buckets[gate.name].earliest_ms(gate.limit, now) for gate in watched}
        seen = {gate.name: _shared(buckets[gate.name], gate, share, now) for gate in watched if gate.shared and share}
        owns = {name: s.own_moment_ms(earliest[name]) for name, s in seen.items()}
        if over := [math.ceil(seen[name].own_earliest_ms() - now) for name, own in owns.items() if own is None]:
            return Look(max(over), over_part=True)
        own_moments = [own for own in owns.values() if own is not None]
        wait = math.ceil(max(now + self._lead_ms, *earliest.values(), *own_moments) - now)
        return Look(wait) if wait > budget_ms else Look()

    def _watch(self, gates: Sequence[Gate]) -> None:
        until = self._clock() + ASKED_RECENTLY_MS
        for gate in gates:
            self._watched_until[gate.name] = until

    def _go_at(self, gates: Sequence[Gate], moment: float) -> None:
        """Wait for the moment. A call later than tolerated (a slow `meanwhile` or reservation, a late wake-up)
        would reach the provider beside the calls reserved after it: it takes the next free moment instead, a
        few times at most (none soon: it goes late, as it is). The next free moment, whatever the call's part of a
        shared app: its part was spent on the moment it missed, and a late call let go as it is would be one more
        than the app's pace."""
        tolerated = _tolerated_lateness_ms(gates)
        for _ in range(_LATE_RESERVATIONS):
            self._sleep_until(moment)
            if self._clock() - moment <= tolerated:
                return
            again, _, _ = self._reserve(gates, _RESERVE_AGAIN_MS)  # its part was spent on the moment it missed
            if again is None:
                return
            moment = again
        self._sleep_until(moment)

    def _sleep_until(self, moment: float) -> None:
        if (left := moment - self._clock()) >= 1:  # times near 1.8e12 ms carry float rounding
            self._sleep(math.ceil(left) / 1000)

    def refused(self, gate: Gate, retry_after_ms: int = 0) -> None:
        """The provider answered a call through `gate` with its rate-limit code: slow that bucket down."""
        for _ in range(_RACES):
            now = self._clock()
            bucket = self._store.read(gate.name)
            after = bucket.refused(gate.limit, now, retry_after_ms)
            if self._store.write({gate.name: after}, _expiry(after.due_ms, now, gate)):
                return

    def _reserve(
        self, gates: Sequence[Gate], budget_ms: int, lead_ms: float = 0.0, share: Share | None = None
    ) -> Reservation:
        """The moment reserved (no sooner than `lead_ms` from now) and the ms until it; or None and the ms until
        the earliest one, when that is beyond the budget (or 1 when every race was lost)."""
        with self._reserving:
            return self._reserve_racing(gates, budget_ms, lead_ms, share)

    def _reserve_racing(
        self, gates: Sequence[Gate], budget_ms: int, lead_ms: float, share: Share | None
    ) -> Reservation:
        for _ in range(_RACES):
            now = self._clock()
            buckets = {gate.name: self._store.read(gate.name) for gate in gates}
            at = max(now + lead_ms, *(buckets[gate.name].earliest_ms(gate.limit, now) for gate in gates))
            shared = {
                gate.name: _shared(buckets[gate.name], gate, share, now)
                for gate in gates
                if gate.shared and share is not None
            }
            contended = any(seen.contended for seen in shared.values())
            self._watch([gate for gate in gates if gate.name in shared and shared[gate.name].contended])
            if contended:
                owns = [(seen, seen.own_moment_ms(at)) for seen in shared.values()]
                if over := [seen.own_earliest_ms() for seen, own in owns if own is None]:
                    # Over its part while others ask: its worker is not held for its next moment (others need it)
                    return Reservation(None, math.ceil(max(over) - now), worth_waiting=False)
                at = max(at, *(own for _, own in owns if own is not None))  # its part's moment, if later
                ahead = lead_ms + max(seen.app_interval_ms for seen in shared.values())
                if at - now > ahead:  # others ask too: no moment reserved far ahead of them, and they know we ask
                    self._announce(buckets, shared, gates)
                    return Reservation(None, math.ceil(at - now - ahead))
            wait = math.ceil(at - now) if at - now >= 1 else 0
            if wait > budget_ms:
                if contended:
                    self._announce(buckets, shared, gates)
                return Reservation(None, wait)
            after = {gate.name: buckets[gate.name].taken(gate.limit, now, at) for gate in gates}
            for name, seen in shared.items():
                after[name] = replace(after[name], claims=seen.taken(at))
            if self._store.write(after, max(_expiry(after[gate.name].due_ms, now, gate) for gate in gates)):
                return Reservation(at, wait)
        return Reservation(None, 1)

    def _announce(
        self, buckets: Mapping[str, Bucket], shared: Mapping[str, SharedBucket], gates: Sequence[Gate]
    ) -> None:
        """A sharer that waits for contention records that it asked (SharedBucket.asked says when), so the others
        make room for it; a lost race is no matter, the winner's write was an ask too."""
        asked = {
            name: replace(buckets[name], claims=claims)
            for name, seen in shared.items()
            if (claims := seen.asked()) is not None
        }
        if asked:
            now = self._clock()
            by_name = {gate.name: gate for gate in gates}
            self._store.write(asked, max(_expiry(b.due_ms, now, by_name[name]) for name, b in asked.items()))


def _shared(bucket: Bucket, gate: Gate, share: Share, now: int) -> SharedBucket:
    """A shared gate's bucket as `share` sees it now."""
    return SharedBucket(bucket.claims, bucket.interval_ms(gate.limit, now), gate.limit.burst, share, now)


def _tolerated_lateness_ms(gates: Sequence[Gate]) -> float:
    """How late a call may go at its reserved moment: half the slack of its paced buckets (the other half is for
    the call's way to the provider, whose arrival is what the provider counts); a per-minute bucket's burst
    absorbs any lateness."""
    per_second = [gate for gate in gates if gate.limit.burst == 1]
    if not per_second:
        return math.inf
    return min(gate.limit.slack_ms for gate in per_second) / 2


def _expiry(due_ms: float, now: int, gate: Gate) -> int:
    return int(max(due_ms, now) / 1000) + 2 * gate.limit.per_seconds + 3600
