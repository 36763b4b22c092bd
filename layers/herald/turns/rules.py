"""The turn queue's decisions (contract §4) as plain functions of an agent's turns: where a posted message
goes (a new turn, the queue, or refused and recorded), what starts a turn, and what a caller must be for
a change. The service reads, decides with these, and commits."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from herald.errors import Conflict, NotFound, PermissionDenied
from herald.ids import new_id
from herald.turns.models import (
    APPROVAL_TRANSITIONS,
    AgentTurns,
    Approval,
    ApprovalStatus,
    Arrival,
    Entry,
    EventType,
    QueuedMessage,
    Session,
    Turn,
    TurnState,
)
from herald.turns.ports import EngineCaller

ENGINE = "engine"
REFUSALS = {
    "awaiting_approval": "the agent's turn is waiting for an approval; the message was recorded but will not be read",
    "message_queue_full": "ten messages already wait for this agent; the message was recorded but will not be read",
}


@dataclass(frozen=True)
class Arriving:
    """Where a posted message goes: the agent's turns after it, the log entries, and how it arrived (started a
    turn, queued at `position`) or why it was refused (recorded, never read)."""

    after: AgentTurns
    entries: tuple[Entry, ...]
    arrival: Arrival | None
    position: int | None = None
    refusal: str | None = None

    @property
    def outcome(self) -> str:
        """The metric it counts as."""
        if self.refusal is not None:
            return "TurnMessageRefused"
        return "TurnMessageQueued" if self.arrival is Arrival.QUEUED else "TurnMessageStarted"


def arrive(turns: AgentTurns, message: QueuedMessage) -> Arriving:
    """No turn running: the message starts one (with any still waiting, which go first: the newest never jumps
    ahead). Running: it waits in the queue. Queue full or turn suspended: it is recorded and refused."""
    agent, message_id = turns.agent, message.message_id
    said = {"agent": agent, "message_id": message_id, "text": message.text, "lang": message.lang}
    entries = [Entry(EventType.MESSAGE, message.sender, said)]
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
        return Arriving(turns, tuple(entries), None, refusal=refusal)
    if turns.state is TurnState.RUNNING:
        after = replace(turns, queue=(*turns.queue, message))
        position = len(after.queue)
        entries.append(Entry(EventType.MESSAGE_QUEUED, ENGINE, {**said, "position": position}))
        return Arriving(after, tuple(entries), Arrival.QUEUED, position)
    after, started = start_turn(turns, (*turns.queue, message))
    return Arriving(after, (*entries, *started), Arrival.STARTED)


def start_turn(turns: AgentTurns, messages: Sequence[QueuedMessage]) -> tuple[AgentTurns, list[Entry]]:
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
class Taking:
    """The messages waiting for the agent, taken into its running turn at a step boundary: the agent's turns
    after it (nothing waiting) and the log's entry; nothing to take: no change and no entry."""

    after: AgentTurns
    entries: tuple[Entry, ...]
    messages: tuple[QueuedMessage, ...]


def take_waiting(turns: AgentTurns) -> Taking:
    """Every waiting message, in order, into the running turn: delivered now, so never again at its end, and no
    longer the sender's to cancel."""
    if turns.state is not TurnState.RUNNING or turns.turn is None:
        raise Conflict(f"the turn is {turns.state}: messages are taken only while it runs", reason="turn_not_running")
    if not turns.queue:
        return Taking(turns, (), ())
    message_ids = [m.message_id for m in turns.queue]
    entry = Entry(
        EventType.MESSAGE_DELIVERED,
        ENGINE,
        {"agent": turns.agent, "turn_id": turns.turn.turn_id, "message_ids": message_ids, "taken": True},
    )
    return Taking(replace(turns, queue=()), (entry,), turns.queue)


def require_owner(session: Session, engine: EngineCaller) -> None:
    if session.owner_service != engine.service_id:
        raise PermissionDenied("another service owns this session", reason="session_of_another_service")


def require_agent(session: Session, agent: str) -> None:
    if agent not in session.agents:
        raise NotFound("agent not found in this session")


def require_active(session: Session) -> None:
    if not session.active:
        raise Conflict("the session has ended", reason="session_not_active")


def require_current(turns: AgentTurns, turn_id: str) -> None:
    if turns.turn_id != turn_id or turns.state is TurnState.IDLE:
        raise Conflict("that turn is not the agent's current turn", reason="turn_not_current")


@dataclass(frozen=True)
class Deciding:
    """An approval's one decision: the approval and the agent's turns after it, and the log's entries."""

    approval: Approval
    after: AgentTurns
    entries: tuple[Entry, ...]


def suspend_for(turns: AgentTurns, approval: Approval) -> tuple[AgentTurns, tuple[Entry, ...]]:
    """The running turn asks: it waits (suspended) for the approval, and the log says both."""
    said = approval.named
    asked = {
        **said,
        "user_id": approval.user_id,
        "confirm_id": approval.confirm_id,
        "expire_at_ms": approval.expire_at_ms,
    }
    entries = (Entry(EventType.APPROVAL_REQUESTED, ENGINE, asked), Entry(EventType.TURN_SUSPENDED, ENGINE, said))
    return replace(turns, state=TurnState.SUSPENDED, approval_id=approval.approval_id), entries


def decided(
    approval: Approval, status: ApprovalStatus, by: str, at_ms: int, reason: str = ""
) -> tuple[Approval, Entry]:
    """The approval's one decision, and the log's `approval.decided` that records it."""
    if status not in APPROVAL_TRANSITIONS[approval.status]:
        raise RuntimeError(f"an approval cannot go from {approval.status} to {status}")
    decision = {"decision": str(status), "decided_by": by, "decided_at_ms": at_ms, "reason": reason}
    entry = Entry(EventType.APPROVAL_DECIDED, by, {**approval.named, **decision})
    return replace(approval, status=status, decided_by=by, decided_at_ms=at_ms, reason=reason), entry


def decide_approval(
    turns: AgentTurns, approval: Approval, status: ApprovalStatus, by: str, at_ms: int, reason: str = ""
) -> Deciding:
    """Record the decision; the turn that waits for it runs again (`turn.resumed`). A turn no longer waiting for it
    (finished, or another turn now) is left as it is."""
    approval_after, entry = decided(approval, status, by, at_ms, reason)
    if not waits_for(turns, approval):
        return Deciding(approval_after, turns, (entry,))
    resumed = Entry(EventType.TURN_RESUMED, by, approval.named)
    return Deciding(approval_after, replace(turns, state=TurnState.RUNNING, approval_id=None), (entry, resumed))


def waits_for(turns: AgentTurns, approval: Approval) -> bool:
    """Whether the agent's current turn is suspended waiting for this approval."""
    return (
        turns.state is TurnState.SUSPENDED
        and turns.approval_id == approval.approval_id
        and turns.turn_id == approval.turn_id
    )


def require_approver(session: Session, user_id: str) -> None:
    """Only a member whose role may talk to the agent may be asked to approve what it does."""
    if user_id not in session.members:
        raise PermissionDenied("the user is not a member of this session", reason="user_not_a_member")
    if not session.may_converse(user_id):
        raise PermissionDenied("the user's role in this session may not act on agents", reason="user_role_not_allowed")
