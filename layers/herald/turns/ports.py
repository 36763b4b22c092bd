"""The turn queue's ports: the store of sessions, agents' turns and their event log, the engine's queue of turns,
and who the engine is when it calls."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from herald.turns.models import AgentTurns, Approval, Change, Due, Message, Session, SessionEvent, SessionStatus, Turn


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

    def approval(self, app_code: str, session_id: str, approval_id: str) -> Approval | None: ...

    def commit(self, change: Change, at_ms: int) -> list[SessionEvent]: ...

    def events(self, app_code: str, session_id: str, after_seq: int, limit: int) -> list[SessionEvent]: ...

    def mark_dispatched(self, turn: Turn) -> None: ...

    def mark_told(self, approval: Approval) -> None:
        """The approval's decision was handed to the engine's queue (a no-op unless it is still as read)."""
        ...

    def due(self, before_ms: int, limit: int) -> list[Due]: ...

    def delivered_reopened(self, app_code: str, session_id: str) -> None: ...


class TurnQueue(Protocol):
    """The engine's queue of turns to run (one FIFO group per session and agent)."""

    def publish(self, turn: Turn) -> None: ...

    def tell(self, approval: Approval) -> None:
        """An approval's decision, in the same message group as the agent's turns."""
        ...
