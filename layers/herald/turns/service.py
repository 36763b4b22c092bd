"""The turn queue's service (contract §4), free of AWS: every decision reads the session and the agent, decides
(with `rules`), and commits the agent's new state with its event log entries in one conditional write. A commit made
from a stale read is refused by the store and the decision is taken again from a fresh one, so posts,
cancels, finishes and the janitor are serialized per session: a message is delivered or cancelled, never
both, and the queue never holds more than ten.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from herald.auth.models import Principal
from herald.clock import Clock, now_ms
from herald.errors import Conflict, InvalidArgument, NotFound, PermissionDenied, RateLimited
from herald.ids import new_id
from herald.retry import with_backoff
from herald.turns.models import (
    MAX_EVENT_SEQ,
    TURN_TRANSITIONS,
    AgentTurns,
    Approval,
    ApprovalStatus,
    Arrival,
    Change,
    Entry,
    EventType,
    Message,
    QueuedMessage,
    Session,
    SessionEvent,
    SessionStatus,
    StaleRead,
    Turn,
    TurnState,
)
from herald.turns.ports import EngineCaller, TurnQueue, TurnStore
from herald.turns.rules import (
    ENGINE,
    REFUSALS,
    arrive,
    decided,
    require_active,
    require_agent,
    require_current,
    require_owner,
    start_turn,
    take_waiting,
)

_COMMIT_ATTEMPTS = 40

T = TypeVar("T")


@dataclass(frozen=True)
class Posted:
    message_id: str
    arrival: Arrival
    position: int | None = None


@dataclass(frozen=True)
class Repairs:
    redispatched: int = 0
    delivered: int = 0
    told: int = 0


@dataclass(frozen=True)
class Abandoned:
    """The pending approval a finishing turn cancels (none: all empty)."""

    approval: Approval | None = None
    before: Approval | None = None
    entries: tuple[Entry, ...] = ()


class TurnService:
    def __init__(
        self, store: TurnStore, queue: TurnQueue, clock: Clock = now_ms, observe: Callable[[str], None] | None = None
    ) -> None:
        self._store = store
        self._queue = queue
        self._clock = clock
        self._observe = observe or (lambda outcome: None)  # counts outcomes (metrics), e.g. "TurnMessageQueued"

    # ------------------------------------------------------------------ app side (a member of the session)
    def post(self, caller: Principal, session_id: str, agent: str, text: str, lang: str | None) -> Posted:
        """Where the message goes is `rules.arrive`'s decision; a refused one is recorded, then refused. A retry
        after a commit whose answer was lost finds its message recorded and answers as the commit did."""
        message_id = new_id("msg")
        tried = False

        def decide() -> Posted:
            nonlocal tried
            session = self._conversable(caller, session_id)
            require_agent(session, agent)
            turns = self._store.agent(caller.app_code, session_id, agent)
            if tried and self._store.message(caller.app_code, session_id, message_id) is not None:  # it did commit
                position = turns.position_of(message_id)
                return Posted(message_id, Arrival.QUEUED if position else Arrival.STARTED, position)
            tried = True
            now = self._clock()
            message = Message(caller.app_code, session_id, agent, message_id, caller.user_id, text, lang, now)
            arriving = arrive(turns, QueuedMessage(message_id, caller.user_id, text, lang, now))
            self.commit(Change(session, turns, arriving.after, arriving.entries, message))
            self._observe(arriving.outcome)
            if arriving.arrival is None:
                refusal = str(arriving.refusal)
                raise Conflict(REFUSALS[refusal], reason=refusal, details={"message_id": message_id})
            return Posted(message_id, arriving.arrival, arriving.position)

        return self.decided(decide)

    def cancel(self, caller: Principal, session_id: str, agent: str, message_id: str) -> None:
        """Only its sender cancels a message, and only while it waits; the commit's conditions serialize
        this against the finish that would deliver it."""

        def decide() -> None:
            session = self._member_session(caller, session_id)
            message = self._store.message(caller.app_code, session_id, message_id)
            if message is None or message.agent != agent:
                raise NotFound("message not found")
            if message.sender != caller.user_id:
                raise PermissionDenied("only its sender may cancel a message", reason="message_of_another_person")
            require_active(session)
            turns = self._store.agent(caller.app_code, session_id, agent)
            if turns.position_of(message_id) is None:
                raise Conflict("the message was already delivered or cancelled", reason="message_not_in_queue")
            after = replace(turns, queue=tuple(m for m in turns.queue if m.message_id != message_id))
            entry = Entry(
                EventType.MESSAGE_CANCELLED,
                caller.user_id,
                {"agent": agent, "message_id": message_id, "by": caller.user_id},
            )
            self.commit(Change(session, turns, after, (entry,)))

        self.decided(decide)

    def events(self, caller: Principal, session_id: str, after_seq: int, limit: int) -> list[SessionEvent]:
        if not 0 <= after_seq <= MAX_EVENT_SEQ:
            raise InvalidArgument(f"after_seq must be between 0 and {MAX_EVENT_SEQ}")
        self._member_session(caller, session_id)
        if after_seq == MAX_EVENT_SEQ:
            return []  # no event can follow the last number
        return self._store.events(caller.app_code, session_id, after_seq, limit)

    # ------------------------------------------------------------------ engine side
    def put_session(
        self,
        engine: EngineCaller,
        session_id: str,
        members: Mapping[str, str],
        agents: Sequence[str],
        status: SessionStatus,
    ) -> Session:
        """The engine's word on a session of its tenant; the first service to create it owns it. Reopening
        it delivers the queues it froze when it ended (the janitor finishes that if this call dies half way)."""
        before, after = self._store.put_session(engine.app_code, session_id, members, agents, status, engine.service_id)
        require_owner(after, engine)
        if before is not None and not before.active and after.active:
            self._deliver_reopened(after)
        return after

    def _deliver_reopened(self, session: Session) -> int:
        delivered = sum(
            self.deliver_waiting(session.app_code, session.session_id, agent) is not None for agent in session.agents
        )
        self._store.delivered_reopened(session.app_code, session.session_id)
        return delivered

    def finish(self, engine: EngineCaller, session_id: str, agent: str, turn_id: str) -> AgentTurns:
        """The turn ended. Whatever waits for the agent becomes its next turn, in the same commit, so no
        message can arrive between the end and the delivery and be left behind or jump ahead."""

        def decide() -> AgentTurns:
            session, turns = self.turn_of(engine, session_id, agent)
            if turns.finished_turn_id == turn_id:
                return turns  # a repeated finish
            require_current(turns, turn_id)
            abandoned = self._abandoned(turns)
            after = replace(turns, state=TurnState.IDLE, turn=None, finished_turn_id=turn_id, approval_id=None)
            entries = [*abandoned.entries, Entry(EventType.TURN_FINISHED, ENGINE, {"agent": agent, "turn_id": turn_id})]
            if session.active and after.queue:
                after, started = start_turn(after, after.queue)
                entries.extend(started)
            self.commit(
                Change(
                    session, turns, after, tuple(entries), approval=abandoned.approval, approval_before=abandoned.before
                )
            )
            return after

        return self.decided(decide)

    def _abandoned(self, turns: AgentTurns) -> Abandoned:
        """A turn that finishes while it waits for an approval abandons it: the approval is cancelled in the same
        commit (the engine is told, and the person's buttons grey out)."""
        if turns.approval_id is None:
            return Abandoned()
        approval = self._store.approval(turns.app_code, turns.session_id, turns.approval_id)
        if approval is None or not approval.pending:
            return Abandoned()
        cancelled, entry = decided(approval, ApprovalStatus.CANCELLED, ENGINE, self._clock())
        return Abandoned(cancelled, approval, (entry,))

    def take_waiting(
        self, engine: EngineCaller, session_id: str, agent: str, turn_id: str
    ) -> tuple[QueuedMessage, ...]:
        """The engine, between two steps of the running turn, takes what waits for the agent now: one commit,
        serialized (as a finish is) against a cancel that would take a message out of the queue."""

        def decide() -> tuple[QueuedMessage, ...]:
            session, turns = self.turn_of(engine, session_id, agent)
            require_current(turns, turn_id)
            taking = take_waiting(turns)
            if taking.messages:
                self.commit(Change(session, turns, taking.after, taking.entries))
                self._observe("TurnMessagesTaken")
            return taking.messages

        return self.decided(decide)

    def suspend(self, engine: EngineCaller, session_id: str, agent: str, turn_id: str) -> AgentTurns:
        """The turn waits for an approval: new messages are refused until it resumes."""
        return self._move(
            engine, session_id, agent, turn_id, TurnState.RUNNING, TurnState.SUSPENDED, EventType.TURN_SUSPENDED
        )

    def resume(self, engine: EngineCaller, session_id: str, agent: str, turn_id: str) -> AgentTurns:
        """Back to running; messages queued before the suspension wait for this turn's finish. A turn that waits for
        an approval resumes with its decision (or the engine cancels the approval)."""
        return self._move(
            engine, session_id, agent, turn_id, TurnState.SUSPENDED, TurnState.RUNNING, EventType.TURN_RESUMED
        )

    def deliver_waiting(self, app_code: str, session_id: str, agent: str) -> Turn | None:
        """An idle agent of an active session with messages waiting (frozen when the session ended) gets
        them as a turn."""

        def decide() -> Turn | None:
            session = self._store.session(app_code, session_id)
            if session is None or not session.active:
                return None
            turns = self._store.agent(app_code, session_id, agent)
            if turns.state is not TurnState.IDLE or not turns.queue:
                return None
            after, entries = start_turn(turns, turns.queue)
            self.commit(Change(session, turns, after, tuple(entries)))
            return after.turn

        return self.decided(decide)

    # ------------------------------------------------------------------ hand-over to the engine
    def dispatch(self, turn: Turn) -> bool:
        """Give a started turn to the engine's queue, then record that it was given; a turn already given
        (a repeated stream record) or no longer the agent's (the engine finished it) is not sent again.
        Between the two steps a crash leaves it unrecorded; the retry sends it again with the same FIFO
        deduplication id (the turn id), which SQS drops within its five-minute window."""
        current = self._store.agent(turn.app_code, turn.session_id, turn.agent)
        if current.turn_id != turn.turn_id or not current.undispatched:
            return False
        self._queue.publish(turn)
        self._store.mark_dispatched(turn)
        self._observe("TurnHandedOver")
        return True

    def tell(self, approval: Approval) -> bool:
        """Give an approval's decision to the engine's queue, then record that it was given (as `dispatch` does a
        turn: a repeat is not sent again; a crash between the two sends it again with the same deduplication id)."""
        current = self._store.approval(approval.app_code, approval.session_id, approval.approval_id)
        if current is None or not current.untold:
            return False
        self._queue.tell(current)
        self._store.mark_told(current)
        self._observe("ApprovalDecisionHandedOver")
        return True

    def repair(self, grace_ms: int, limit: int = 100) -> Repairs:
        """The janitor, for what was left undone for longer than `grace_ms`: turns started but never handed
        to the engine (the outbox gave up, or died between the two steps of `dispatch`), approvals' decisions
        likewise (`tell`), and reopened sessions whose frozen queues were not delivered (the reopening call died
        half way)."""
        redispatched = delivered = told = 0
        for due in self._store.due(self._clock() - grace_ms, limit):
            if due.approval_id is not None:
                approval = self._store.approval(due.app_code, due.session_id, due.approval_id)
                told += approval is not None and self.tell(approval)
            elif due.agent is not None:
                turns = self._store.agent(due.app_code, due.session_id, due.agent)
                redispatched += turns.turn is not None and self.dispatch(turns.turn)
            elif (session := self._store.session(due.app_code, due.session_id)) is not None:
                delivered += self._deliver_reopened(session)
        return Repairs(redispatched, delivered, told)

    # ------------------------------------------------------------------ shared steps
    def _move(
        self,
        engine: EngineCaller,
        session_id: str,
        agent: str,
        turn_id: str,
        source: TurnState,
        target: TurnState,
        event: EventType,
    ) -> AgentTurns:
        def decide() -> AgentTurns:
            session, turns = self.turn_of(engine, session_id, agent)
            require_current(turns, turn_id)
            if turns.state is target:
                return turns  # a repeated call
            if turns.state is not source:
                raise Conflict(f"the turn is {turns.state}", reason="turn_not_" + str(source))
            if turns.approval_id is not None:
                raise Conflict("the turn waits for an approval: cancel it to resume", reason="approval_pending")
            after = replace(turns, state=target)
            self.commit(Change(session, turns, after, (Entry(event, ENGINE, {"agent": agent, "turn_id": turn_id}),)))
            return after

        return self.decided(decide)

    def turn_of(self, engine: EngineCaller, session_id: str, agent: str) -> tuple[Session, AgentTurns]:
        session = self._store.session(engine.app_code, session_id)
        if session is None:
            raise NotFound("session not found")
        require_owner(session, engine)
        turns = self._store.agent(engine.app_code, session_id, agent)
        if turns.version == 0:
            raise NotFound("the agent has no turn in this session")
        return session, turns

    def _member_session(self, caller: Principal, session_id: str) -> Session:
        """The session as a member with a conversing role sees it; another tenant's does not exist."""
        session = self._store.session(caller.app_code, session_id)
        if session is None:
            raise NotFound("session not found")
        if caller.user_id not in session.members:
            raise PermissionDenied("not a member of this session", reason="not_a_member")
        if not session.may_converse(caller.user_id):
            raise PermissionDenied("your role in this session may not talk to agents", reason="role_not_allowed")
        return session

    def _conversable(self, caller: Principal, session_id: str) -> Session:
        session = self._member_session(caller, session_id)
        require_active(session)
        return session

    def commit(self, change: Change) -> None:
        """Every decision is one commit; its state change is a move of TURN_TRANSITIONS (a finish that starts
        the next turn at once passes through idle) or none, anything else a bug stopped before the write."""
        before, after = change.before.state, change.after.state
        if after is not before and after not in TURN_TRANSITIONS[before]:
            raise RuntimeError(f"an agent's turn cannot go from {before} to {after}")
        self._store.commit(change, self._clock())

    def decided(self, decide: Callable[[], T]) -> T:
        """`decide()`, decided again on a fresh read while another change beat it to the session."""
        try:
            return with_backoff(
                decide,
                retry_on=lambda error: isinstance(error, StaleRead),
                attempts=_COMMIT_ATTEMPTS,
                base_s=0.005,
                cap_s=0.2,
            )
        except StaleRead as error:
            raise RateLimited("too many concurrent changes to this session; try again", reason="busy") from error
