"""Issue 50, item 4: the turn queue driven by Hypothesis through random interleavings of two members' posts and
cancels, the engine's finishes (current and stale), suspends and resumes, its takes of waiting messages at a step
(issue 51), the outbox's hand-over and the janitor, with decisions racing one another between their reads and their
commit and commits that fail before they land or after (their answer lost). After every step: each accepted message
is waiting, delivered in exactly one turn or cancelled, never two of these; a queue holds at most ten; only its
sender ever cancelled a message."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from herald.auth.models import Principal
from herald.errors import HeraldError, Unavailable
from herald.turns.models import EventType, SessionStatus
from herald.turns.ports import EngineCaller
from herald.turns.service import TurnService
from tests.support.fakes import InMemoryTurnStore
from tests.unit.test_turn_races import Queue

ENGINE = EngineCaller("engine", "lalu")
MEMBERS = [Principal("10001", "lalu"), Principal("10002", "lalu")]
DECISIONS = ["post", "cancel", "finish", "finish_stale", "suspend", "resume", "hand_over", "take"]


class FailingCommits(InMemoryTurnStore):
    """The store, whose next commit can fail before it lands or after (DynamoDB wrote it; the answer was lost)."""

    def __init__(self) -> None:
        super().__init__()
        self.fail: str | None = None

    def commit(self, change: Any, at_ms: int) -> Any:
        fail, self.fail = self.fail, None
        if fail == "before":
            raise Unavailable("DynamoDB is unavailable")
        events = super().commit(change, at_ms)
        if fail == "after":
            raise Unavailable("the commit's answer was lost")
        return events


class TurnMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.store, self.queue = FailingCommits(), Queue()
        ticks = iter(range(1_000, 10**9, 10))
        self.turns = TurnService(self.store, self.queue, clock=lambda: next(ticks))
        self.turns.put_session(ENGINE, "s1", {m.user_id: "developer" for m in MEMBERS}, ["bot"], SessionStatus.ACTIVE)
        self.accepted: dict[str, str] = {}  # message id -> its sender
        self.finished: list[str] = []

    def _decide(self, decision: str, member: int, pick: int) -> None:
        principal = MEMBERS[member]
        current = self.store.agent("lalu", "s1", "bot")
        turn_id = current.turn_id or "turn_none"
        try:
            if decision == "post":
                posted = self.turns.post(principal, "s1", "bot", f"text {len(self.accepted)}", None)
                self.accepted[posted.message_id] = principal.user_id
            elif decision == "cancel" and self.accepted:
                message_id = sorted(self.accepted)[pick % len(self.accepted)]
                self.turns.cancel(principal, "s1", "bot", message_id)
            elif decision in ("finish", "finish_stale"):
                finishing = self.finished[-1] if decision == "finish_stale" and self.finished else turn_id
                self.turns.finish(ENGINE, "s1", "bot", finishing)
                self.finished.append(finishing)
            elif decision in ("suspend", "resume"):
                getattr(self.turns, decision)(ENGINE, "s1", "bot", turn_id)
            elif decision == "hand_over" and current.turn is not None:
                self.turns.dispatch(current.turn)
            elif decision == "take":
                self.turns.take_waiting(ENGINE, "s1", "bot", turn_id)
        except HeraldError:
            pass

    @rule(decision=st.sampled_from(DECISIONS), member=st.integers(0, 1), pick=st.integers(0, 50))
    def decide(self, decision: str, member: int, pick: int) -> None:
        self._decide(decision, member, pick)

    @rule(
        decision=st.sampled_from(DECISIONS),
        racing=st.sampled_from(DECISIONS),
        members=st.tuples(st.integers(0, 1), st.integers(0, 1)),
        pick=st.integers(0, 50),
    )
    def decide_raced_between_its_read_and_commit(
        self, decision: str, racing: str, members: tuple[int, int], pick: int
    ) -> None:
        self.store.before_commit.append(lambda: self._decide(racing, members[1], pick + 1))
        self._decide(decision, members[0], pick)
        self.store.before_commit.clear()

    @rule(when=st.sampled_from(["before", "after"]))
    def next_commit_fails(self, when: str) -> None:
        self.store.fail = when

    @rule()
    def janitor(self) -> None:
        self.turns.repair(grace_ms=0)

    def _log(self, event_type: EventType) -> list[Mapping[str, Any]]:
        return [event.data for event in self.store.log.get(("lalu", "s1"), []) if event.type == event_type]

    @invariant()
    def each_message_waits_or_is_delivered_once_or_cancelled_never_two(self) -> None:
        delivered = [m for entry in self._log(EventType.MESSAGE_DELIVERED) for m in entry["message_ids"]]
        cancelled = [entry["message_id"] for entry in self._log(EventType.MESSAGE_CANCELLED)]
        waiting = [m.message_id for m in self.store.agent("lalu", "s1", "bot").queue]
        fates = delivered + cancelled + waiting
        assert len(fates) == len(set(fates)), "a message has two fates"
        assert set(self.accepted) <= set(fates), "an accepted message was lost"
        assert len(waiting) <= 10

    @invariant()
    def only_its_sender_cancelled_a_message(self) -> None:
        for entry in self._log(EventType.MESSAGE_CANCELLED):
            stored = self.store.message("lalu", "s1", entry["message_id"])
            assert stored is not None and entry["by"] == stored.sender

    @invariant()
    def the_engine_is_handed_each_turn_once(self) -> None:
        handed = [turn.turn_id for turn in self.queue.turns]
        assert len(handed) == len(set(handed))


TurnMachine.TestCase.settings = settings(
    max_examples=120, stateful_step_count=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_a_message_is_delivered_once_or_cancelled_whatever_the_interleaving = TurnMachine.TestCase
