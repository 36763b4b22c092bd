"""How a drain of one lane ends (`Drained`: its one answer), how each attempt at its head job ends (`Step`), and
what its card's side effect did (`Written`)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from herald.events.records import Outcome


class NotYet(Exception):
    """The lane has work that cannot run now (a job of `tenant`); ask again after `delay_ms`.

    `crowded`: it waits on what others want too (its app's next moments, its service's part of a shared app): it
    waits in the waiting queue, not in front of new work (herald.events.handlers). `first_back_ms` (over its part):
    it stays away at least that long, longer each time it comes back still over its part
    (`DispatchPolicy.crowded_retry`): a backlog's lanes coming back at once would take every worker in turn."""

    def __init__(
        self, reason: str, delay_ms: int, tenant: str | None = "", crowded: bool = False, first_back_ms: int = 0
    ) -> None:
        super().__init__(reason)
        self.delay_ms = max(0, delay_ms)
        self.tenant = tenant or ""
        self.crowded = crowded
        self.first_back_ms = first_back_ms


class DrainResult(StrEnum):
    CAUGHT_UP = "caught_up"
    BLOCKED = "blocked"
    PAUSED = "paused"  # out of time after some jobs ran, or waiting for the pace: a continuation nudge carries on
    WAITING = "waiting"  # the head job is not due yet (its retry, its next settling, another's lease): ask again
    OUT_OF_TIME = "out_of_time"  # no time left to claim the head job: nothing was tried, ask again at once


@dataclass(frozen=True)
class Drained:
    """How a drain ended: its one answer (a WAITING lane says in how long to ask again, and why)."""

    result: DrainResult
    retry_in_ms: int = 0
    reason: str = ""
    tenant: str = ""  # the tenant of the job a WAITING lane waits on
    crowded: bool = False  # a WAITING lane waits on what others want too (see NotYet)
    first_back_ms: int = 0  # ... over its part of a shared app: it stays away at least this long


class Step(StrEnum):
    """How one attempt at the head job ended."""

    FINISHED = "finished"  # delivered, rejected or settled: the lane moves past it
    BLOCKS = "blocks"  # failed, or unknown for an operator: the lane waits behind it
    AGAIN = "again"  # moved by another first, or refused by Feishu's rate limit: read it again


PACE_SLEEP_MOST_MS = 1_000  # a call's moment further away: the message comes back for it instead
# In the events queue (new work), a lane whose call's moment is further away than this is crowded out to the waiting
# queue at once: that queue's workers stay free for new work (another partner's first card) instead of sleeping.
NEW_WORK_PACE_SLEEP_MOST_MS = 600


@dataclass(frozen=True)
class PaceWait:
    """How an attempt ends when its call has no moment within the worker's time: back in the queue, untried; the
    moment is `ms` away (a provider's hold can make it a minute)."""

    ms: int

    @property
    def back_in_ms(self) -> int:
        """When the message comes back: a second before the moment, for the worker to sleep the rest (SQS hides a
        message for whole seconds, rounded up: asked for the moment itself, it would come back up to a second late)."""
        return self.ms - PACE_SLEEP_MOST_MS if self.ms > PACE_SLEEP_MOST_MS else self.ms


@dataclass(frozen=True)
class Written:
    """What a card's side effect did: the message it went to, how, and the message a continuing card continues."""

    message_id: str
    outcome: Outcome
    continued_from: str = ""
