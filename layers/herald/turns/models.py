"""Agent turn message queue (contract §4): sessions, each agent's turn state and its queue.

An agent of a session is in one of three states, moved only by conditional writes:

    idle ──message──► running ──finish──► idle            (nothing pending)
                        │  ▲     └──────► running (next turn: every pending message, in order)
                 suspend│  │resume
                        ▼  │
                     suspended  (messages are refused with `awaiting_approval`)

A turn that asks for an approval is suspended the same way, and runs again once the approval is decided (a
hand-made resume is refused meanwhile); finishing it abandons the approval (`herald.turns.approvals`).

While a turn runs, messages wait in the agent's queue (at most ten). The queue is the one place "pending"
is read from: posting, cancelling, finishing and the janitor all decide from it, and each change of it
is committed together with the session's event log entries that record it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

QUEUE_LIMIT = 10
# A session's event numbers are 12 digits (they sort as text in the table's sort key): the last one there is.
MAX_EVENT_SEQ = 10**12 - 1

ROLE_RANK = {"viewer": 0, "developer": 1, "admin": 2, "owner": 3}
CONVERSING_ROLE = "developer"  # the lowest role that may talk to agents (and cancel its own messages)


class SessionStatus(StrEnum):
    ACTIVE = "active"
    ENDED = "ended"


class TurnState(StrEnum):
    IDLE = "idle"
    RUNNING = "running"
    SUSPENDED = "suspended"


# An agent's turn state machine: an idle agent starts a turn; a running turn finishes (idle again, or at
# once the next turn if messages wait) or is suspended for an approval; a suspended one resumes or finishes.
TURN_TRANSITIONS: dict[TurnState, frozenset[TurnState]] = {
    TurnState.IDLE: frozenset({TurnState.RUNNING}),
    TurnState.RUNNING: frozenset({TurnState.IDLE, TurnState.SUSPENDED}),
    TurnState.SUSPENDED: frozenset({TurnState.RUNNING, TurnState.IDLE}),
}


class EventType(StrEnum):
    MESSAGE = "chat.message"
    MESSAGE_QUEUED = "chat.message_queued"
    MESSAGE_DELIVERED = "chat.message_delivered"
    MESSAGE_CANCELLED = "chat.message_cancelled"
    AGENT_ERROR = "agent.error"
    TURN_STARTED = "turn.started"
    TURN_FINISHED = "turn.finished"
    TURN_SUSPENDED = "turn.suspended"
    TURN_RESUMED = "turn.resumed"
    APPROVAL_REQUESTED = "approval.requested"
    APPROVAL_DECIDED = "approval.decided"


class Arrival(StrEnum):
    """What a posted message did on arrival: started the agent's turn, or joined its queue."""

    STARTED = "started"  # the message started a turn (with any messages that were still waiting)
    QUEUED = "queued"


@dataclass(frozen=True)
class Session:
    """Ids are per tenant: the same session id in two tenants is two sessions. The service that created
    a session (`owner_service`) is the only one that changes it or drives its turns."""

    session_id: str
    app_code: str
    members: Mapping[str, str]  # user id -> role
    agents: tuple[str, ...]
    status: SessionStatus
    revision: int = 0  # bumped by every engine update; a commit made from an older read is refused
    next_seq: int = 0  # the last event sequence given
    owner_service: str = ""

    @property
    def active(self) -> bool:
        return self.status is SessionStatus.ACTIVE

    def may_converse(self, user_id: str) -> bool:
        role = self.members.get(user_id)
        return role is not None and ROLE_RANK[role] >= ROLE_RANK[CONVERSING_ROLE]


@dataclass(frozen=True)
class QueuedMessage:
    message_id: str
    sender: str
    text: str
    lang: str | None
    queued_at_ms: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "message_id": self.message_id,
            "sender": self.sender,
            "text": self.text,
            "lang": self.lang,
            "queued_at_ms": self.queued_at_ms,
        }

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> QueuedMessage:
        return cls(raw["message_id"], raw["sender"], raw["text"], raw.get("lang"), raw["queued_at_ms"])


@dataclass(frozen=True)
class AgentTurns:
    """One agent of one session: its turn state and the messages pending for its next turn."""

    app_code: str
    session_id: str
    agent: str
    state: TurnState = TurnState.IDLE
    turn: Turn | None = None  # the running or suspended turn
    finished_turn_id: str | None = None  # the last turn finished (a repeated finish is answered, not refused)
    dispatched_turn_id: str | None = None  # the last turn handed to the engine's queue
    queue: tuple[QueuedMessage, ...] = ()
    approval_id: str | None = None  # the approval the suspended turn waits for (None: none, or suspended by hand)
    version: int = 0  # 0: never written

    @property
    def turn_id(self) -> str | None:
        return self.turn.turn_id if self.turn else None

    @property
    def pending(self) -> tuple[QueuedMessage, ...]:
        return self.queue

    @property
    def full(self) -> bool:
        return len(self.queue) >= QUEUE_LIMIT

    @property
    def undispatched(self) -> bool:
        """A turn started that the engine's queue has not been given yet."""
        return self.turn is not None and self.turn.turn_id != self.dispatched_turn_id

    def position_of(self, message_id: str) -> int | None:
        for index, message in enumerate(self.queue, start=1):
            if message.message_id == message_id:
                return index
        return None


@dataclass(frozen=True)
class Message:
    """A user's message to an agent as recorded (whatever became of it): who sent it is what cancel checks."""

    app_code: str
    session_id: str
    agent: str
    message_id: str
    sender: str
    text: str
    lang: str | None
    sent_at_ms: int


@dataclass(frozen=True)
class Turn:
    """A turn for the engine to run: what it reads, in which language, and which messages it answers."""

    app_code: str
    session_id: str
    agent: str
    turn_id: str
    text: str
    lang: str | None
    message_ids: tuple[str, ...]

    @classmethod
    def of(cls, turns: AgentTurns, turn_id: str, messages: Sequence[QueuedMessage]) -> Turn:
        return cls(
            turns.app_code,
            turns.session_id,
            turns.agent,
            turn_id,
            turn_text([m.text for m in messages]),
            turn_language([m.lang for m in messages]),
            tuple(m.message_id for m in messages),
        )

    def to_message(self) -> dict[str, Any]:
        """The engine's queue message (contract §4)."""
        return {
            "app_code": self.app_code,
            "session_id": self.session_id,
            "agent": self.agent,
            "turn_id": self.turn_id,
            "text": self.text,
            "lang": self.lang,
            "message_ids": list(self.message_ids),
        }

    @classmethod
    def from_message(cls, raw: Mapping[str, Any]) -> Turn:
        return cls(
            raw["app_code"],
            raw["session_id"],
            raw["agent"],
            raw["turn_id"],
            raw["text"],
            raw.get("lang"),
            tuple(raw["message_ids"]),
        )

    @property
    def group_id(self) -> str:
        """The FIFO message group: one per session and agent, so an agent's turns arrive in order."""
        return f"{self.app_code}/{self.session_id}/{self.agent}"


def turn_text(texts: Sequence[str]) -> str:
    """One message is itself; several are numbered in order under one line saying there are several."""
    if len(texts) == 1:
        return texts[0]
    lines = [f"{len(texts)} messages arrived while you were working; read them together, in order:"]
    for number, text in enumerate(texts, start=1):
        first, *rest = text.split("\n")
        lines.append(f"{number}. {first}")
        lines.extend(f"   {line}" for line in rest)
    return "\n".join(lines)


def turn_language(langs: Sequence[str | None]) -> str | None:
    """The language of the newest message (of the newest one that named a language)."""
    return next((lang for lang in reversed(langs) if lang), None)


@dataclass(frozen=True)
class SessionEvent:
    seq: int
    type: EventType
    at_ms: int
    actor: str  # the user who caused it, or "engine"
    data: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "type": str(self.type),
            "at_ms": self.at_ms,
            "actor": self.actor,
            "data": dict(self.data),
        }


@dataclass(frozen=True)
class Due:
    """What the janitor finds left undone in a session: an agent's turn not handed over, an approval's decision not
    handed over, or (neither named) a reopened session's frozen queues not delivered."""

    app_code: str
    session_id: str
    agent: str | None = None
    approval_id: str | None = None


class StaleRead(Exception):
    """The session or the agent changed since they were read: decide again."""


@dataclass(frozen=True)
class Entry:
    """An event log entry to append; the store gives it the session's next sequence."""

    type: EventType
    actor: str
    data: Mapping[str, Any]


@dataclass(frozen=True)
class Change:
    """What one decision writes, all or nothing. The session's revision and sequence and the agent's
    version, as read, are the conditions: the change lands only on the state it was decided from."""

    session: Session
    before: AgentTurns
    after: AgentTurns
    entries: tuple[Entry, ...]
    message: Message | None = None
    approval: Approval | None = None  # the approval as the change leaves it
    approval_before: Approval | None = None  # as read (None: the change records a new one)


class ApprovalStatus(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    EXPIRED = "expired"
    CANCELLED = "cancelled"


# An approval is decided once: by its person (approved, rejected), its expiry, or the engine (cancelled; also when
# the engine finishes the turn that waits for it).
APPROVAL_TRANSITIONS: dict[ApprovalStatus, frozenset[ApprovalStatus]] = {
    ApprovalStatus.PENDING: frozenset(set(ApprovalStatus) - {ApprovalStatus.PENDING}),
    **{status: frozenset() for status in ApprovalStatus if status is not ApprovalStatus.PENDING},
}


@dataclass(frozen=True)
class ApprovalButton:
    """One button of the approval's confirm: `action` is accept or reject."""

    action: str
    label: str
    style: str

    def to_dict(self) -> dict[str, str]:
        return {"action": self.action, "label": self.label, "style": self.style}


@dataclass(frozen=True)
class Approval:
    """An agent's question to one member, asked from a running turn, which waits (suspended) for the answer.
    Who is asked, the confirm that asks, and when it expires are decided once, when the engine's request is
    accepted; `fingerprint` is that request, by which a retry is told from a reuse of the id."""

    app_code: str
    session_id: str
    agent: str
    turn_id: str
    approval_id: str
    user_id: str
    text: str
    buttons: tuple[ApprovalButton, ...]
    confirm_id: str
    fingerprint: str
    requested_at_ms: int
    expire_at_ms: int
    status: ApprovalStatus = ApprovalStatus.PENDING
    decided_by: str = ""
    decided_at_ms: int = 0
    reason: str = ""  # the person's reason, with a rejection
    told: bool = False  # the decision was handed to the engine's queue
    version: int = 0  # 0: never written

    @property
    def pending(self) -> bool:
        return self.status is ApprovalStatus.PENDING

    @property
    def untold(self) -> bool:
        """Decided, and the engine's queue not given the decision yet."""
        return not self.pending and not self.told

    @property
    def named(self) -> dict[str, str]:
        """How the session's log names it: its agent, its turn and itself."""
        return {"agent": self.agent, "turn_id": self.turn_id, "approval_id": self.approval_id}

    @property
    def group_id(self) -> str:
        """The FIFO message group of the session's turns for this agent: the decision arrives in order with them."""
        return f"{self.app_code}/{self.session_id}/{self.agent}"

    def decision_message(self) -> dict[str, Any]:
        """The engine's queue message for the decision (contract §4, events/turns/approval-decided.schema.json)."""
        return {
            "type": "approval.decided",
            "app_code": self.app_code,
            "session_id": self.session_id,
            "agent": self.agent,
            "turn_id": self.turn_id,
            "approval_id": self.approval_id,
            "decision": str(self.status),
            "decided_by": self.decided_by,
            "decided_at_ms": self.decided_at_ms,
            "reason": self.reason,
        }
