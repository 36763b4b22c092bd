"""The turn queue's rules (contract §4), free of AWS: every decision reads the session and the agent, decides,
and commits the agent's new state with its event log entries in one conditional write. A commit made
from a stale read is refused by the store and the decision is taken again from a fresh one, so posts,
cancels, finishes and the janitor are serialized per session: a message is delivered or cancelled, never
both, and the queue never holds more than ten.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol, TypeVar

from herald.auth.models import Principal
from herald.clock import Clock, now_ms
from herald.errors import Conflict, InvalidArgument, NotFound, PermissionDenied, RateLimited
from herald.ids import new_id
from herald.retry import with_backoff
from herald.turns.models import (
    MAX_EVENT_SEQ,
    TURN_TRANSITIONS,
    AgentTurns,
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

ENGINE = "engine"
_COMMIT_ATTEMPTS = 40

T = TypeVar("T")


@dataclass(frozen=True)
class EngineCaller:
    """The engine service acting, and the tenant it acts for (one its key holds)."""

    service_id: str
    app_code: str


class TurnStore(Protocol):
    """Every session is addressed by its tenant and its id."""

    def session(self, app_code: str, session_id: str) -> Session | None: ...

    def put_session(
        self,
        app_code: str,
        session_id: str,
        members: Mapping[str, str],
        agents: Sequence[str],
        status: SessionStatus,
        owner_service: str,
    ) -> tuple[Session | None, Session]:
        """Create or update; a session another service owns is returned as it is, unchanged."""
        ...

    def agent(self, app_code: str, session_id: str, agent: str) -> AgentTurns: ...

    def message(self, app_code: str, session_id: str, message_id: str) -> Message | None: ...

    def commit(self, change: Change, at_ms: int) -> list[SessionEvent]: ...

    def events(self, app_code: str, session_id: str, after_seq: int, limit: int) -> list[SessionEvent]: ...

    def mark_dispatched(self, turn: Turn) -> None: ...

    def due(self, before_ms: int, limit: int) -> list[tuple[str, str, str | None]]: ...

    def delivered_reopened(self, app_code: str, session_id: str) -> None: ...


class TurnQueue(Protocol):
    """The engine's queue of turns to run (one FIFO group per session and agent)."""

    def publish(self, turn: Turn) -> None: ...


@dataclass(frozen=True)
class Posted:
    message_id: str
    arrival: Arrival
    position: int | None = None


def _start_turn(turns: AgentTurns, messages: Sequence[QueuedMessage]) -> tuple[AgentTurns, list[Entry]]:
    """Every given message, in order, becomes the agent's next turn."""
    turn = Turn.of(turns, new_id("turn"), messages)
    started = replace(turns, state=TurnState.RUNNING, turn=turn, queue=())
    entries = [
        Entry(
            EventType.MESSAGE_DELIVERED,
            ENGINE,
            {"agent": turns.agent, "turn_id": turn.turn_id, "message_ids": list(turn.message_ids)},
        ),
        Entry(EventType.TURN_STARTED, ENGINE, {"agent": turns.agent, **turn.to_message()}),
    ]
    return started, entries


@dataclass(frozen=True)
class Repairs:
    redispatched: int = 0
    delivered: int = 0


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
        """No turn running: the message starts one (with any still waiting, which go first). Running: it
        waits in the queue. Queue full or turn suspended: it is recorded, refused and never read."""
        message_id = new_id("msg")
        tried = False

        def decide() -> Posted:
            nonlocal tried
            session = self._conversable(caller, session_id)
            _require_agent(session, agent)
            turns = self._store.agent(caller.app_code, session_id, agent)
            if tried and self._store.message(caller.app_code, session_id, message_id) is not None:  # it did commit
                position = turns.position_of(message_id)
                return Posted(message_id, Arrival.QUEUED if position else Arrival.STARTED, position)
            tried = True
            now = self._clock()
            message = Message(caller.app_code, session_id, agent, message_id, caller.user_id, text, lang, now)
            queued = QueuedMessage(message_id, caller.user_id, text, lang, now)
            entries = [
                Entry(
                    EventType.MESSAGE,
                    caller.user_id,
                    {"agent": agent, "message_id": message_id, "text": text, "lang": lang},
                )
            ]
            refusal = (
                "awaiting_approval"
                if turns.state is TurnState.SUSPENDED
                else "message_queue_full"
                if turns.state is TurnState.RUNNING and turns.full
                else None
            )
            if refusal is not None:
                entries.append(
                    Entry(EventType.AGENT_ERROR, ENGINE, {"agent": agent, "message_id": message_id, "reason": refusal})
                )
                self._commit(Change(session, turns, turns, tuple(entries), message))
                self._observe("TurnMessageRefused")
                raise Conflict(_REFUSALS[refusal], reason=refusal, details={"message_id": message_id})
            if turns.state is TurnState.RUNNING:
                after = replace(turns, queue=(*turns.queue, queued))
                position = len(after.queue)
                entries.append(
                    Entry(
                        EventType.MESSAGE_QUEUED,
                        ENGINE,
                        {"agent": agent, "message_id": message_id, "text": text, "lang": lang, "position": position},
                    )
                )
                self._commit(Change(session, turns, after, tuple(entries), message))
                self._observe("TurnMessageQueued")
                return Posted(message_id, Arrival.QUEUED, position)
            # Idle. Messages still waiting (a reopened session) go first: the newest never jumps ahead.
            after, started = _start_turn(turns, (*turns.queue, queued))
            self._commit(Change(session, turns, after, (*entries, *started), message))
            self._observe("TurnMessageStarted")
            return Posted(message_id, Arrival.STARTED)

        return self._decided(decide)

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
            _require_active(session)
            turns = self._store.agent(caller.app_code, session_id, agent)
            if turns.position_of(message_id) is None:
                raise Conflict("the message was already delivered or cancelled", reason="message_not_in_queue")
            after = replace(turns, queue=tuple(m for m in turns.queue if m.message_id != message_id))
            entry = Entry(
                EventType.MESSAGE_CANCELLED,
                caller.user_id,
                {"agent": agent, "message_id": message_id, "by": caller.user_id},
            )
            self._commit(Change(session, turns, after, (entry,)))

        self._decided(decide)

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
        _require_owner(after, engine)
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
            session, turns = self._turn_of(engine, session_id, agent)
            if turns.finished_turn_id == turn_id:
                return turns  # a repeated finish
            _require_current(turns, turn_id)
            after = replace(turns, state=TurnState.IDLE, turn=None, finished_turn_id=turn_id)
            entries = [Entry(EventType.TURN_FINISHED, ENGINE, {"agent": agent, "turn_id": turn_id})]
            if session.active and after.queue:
                after, started = _start_turn(after, after.queue)
                entries.extend(started)
            self._commit(Change(session, turns, after, tuple(entries)))
            return after

        return self._decided(decide)

    def suspend(self, engine: EngineCaller, session_id: str, agent: str, turn_id: str) -> AgentTurns:
        """The turn waits for an approval: new messages are refused until it resumes."""
        return self._move(
            engine, session_id, agent, turn_id, TurnState.RUNNING, TurnState.SUSPENDED, EventType.TURN_SUSPENDED
        )

    def resume(self, engine: EngineCaller, session_id: str, agent: str, turn_id: str) -> AgentTurns:
        """Back to running; messages queued before the suspension wait for this turn's finish."""
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
            after, entries = _start_turn(turns, turns.queue)
            self._commit(Change(session, turns, after, tuple(entries)))
            return after.turn

        return self._decided(decide)

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

    def repair(self, grace_ms: int, limit: int = 100) -> Repairs:
        """The janitor, for what was left undone for longer than `grace_ms`: turns started but never handed
        to the engine (the outbox gave up, or died between the two steps of `dispatch`), and reopened
        sessions whose frozen queues were not delivered (the reopening call died half way)."""
        redispatched = delivered = 0
        for app_code, session_id, agent in self._store.due(self._clock() - grace_ms, limit):
            if agent is None:
                session = self._store.session(app_code, session_id)
                if session is not None:
                    delivered += self._deliver_reopened(session)
                continue
            turns = self._store.agent(app_code, session_id, agent)
            if turns.turn is not None and self.dispatch(turns.turn):
                redispatched += 1
        return Repairs(redispatched, delivered)

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
            session, turns = self._turn_of(engine, session_id, agent)
            _require_current(turns, turn_id)
            if turns.state is target:
                return turns  # a repeated call
            if turns.state is not source:
                raise Conflict(f"the turn is {turns.state}", reason="turn_not_" + str(source))
            after = replace(turns, state=target)
            self._commit(Change(session, turns, after, (Entry(event, ENGINE, {"agent": agent, "turn_id": turn_id}),)))
            return after

        return self._decided(decide)

    def _turn_of(self, engine: EngineCaller, session_id: str, agent: str) -> tuple[Session, AgentTurns]:
        session = self._store.session(engine.app_code, session_id)
        if session is None:
            raise NotFound("session not found")
        _require_owner(session, engine)
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
        _require_active(session)
        return session

    def _commit(self, change: Change) -> None:
        """Every decision is one commit; its state change is a move of TURN_TRANSITIONS (a finish that starts
        the next turn at once passes through idle) or none, anything else a bug stopped before the write."""
        before, after = change.before.state, change.after.state
        if after is not before and after not in TURN_TRANSITIONS[before]:
            raise RuntimeError(f"an agent's turn cannot go from {before} to {after}")
        self._store.commit(change, self._clock())

    def _decided(self, decide: Callable[[], T]) -> T:
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


_REFUSALS = {
    "awaiting_approval": "the agent's turn is waiting for an approval; the message was recorded but will not be read",
    "message_queue_full": "ten messages already wait for this agent; the message was recorded but will not be read",
}


def _is_stale(error: Exception) -> bool:
    return isinstance(error, StaleRead)


def _require_owner(session: Session, engine: EngineCaller) -> None:
    if session.owner_service != engine.service_id:
        raise PermissionDenied("another service owns this session", reason="session_of_another_service")


def _require_agent(session: Session, agent: str) -> None:
    if agent not in session.agents:
        raise NotFound("agent not found in this session")


def _require_active(session: Session) -> None:
    if not session.active:
        raise Conflict("the session has ended", reason="session_not_active")


def _require_current(turns: AgentTurns, turn_id: str) -> None:
    if turns.turn_id != turn_id or turns.state is TurnState.IDLE:
        raise Conflict("that turn is not the agent's current turn", reason="turn_not_current")
