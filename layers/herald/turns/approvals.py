"""Approvals (contract §4): an agent's running turn asks one member a question and waits, suspended, for the answer.

The turn queue owns the approval and its one decision. Asking is one commit (the turn suspended, the approval
recorded, `approval.requested` and `turn.suspended` logged); deciding is one commit (the approval decided, the turn
running again, `approval.decided` and `turn.resumed` logged), conditional on the approval still pending as read, so
of a click, the expiry and the engine's cancel exactly one decides. The confirm that puts the question in the
person's IM, and the inbox notification, are projections of the approval (`herald.confirms.approvals.business`); the
decision reaches the engine's queue through the table's stream (`TurnService.tell`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace

from herald.clock import Clock, now_ms
from herald.errors import Conflict, NotFound
from herald.ids import new_id
from herald.turns.models import Approval, ApprovalButton, ApprovalStatus, Change, TurnState
from herald.turns.ports import EngineCaller, TurnStore
from herald.turns.rules import (
    ENGINE,
    decide_approval,
    require_active,
    require_approver,
    require_current,
    suspend_for,
)
from herald.turns.service import TurnService

EXPIRY = "herald"  # who decides an approval that expired


@dataclass(frozen=True)
class ApprovalAsk:
    """The engine's request, as accepted."""

    approval_id: str
    user_id: str
    text: str
    buttons: tuple[ApprovalButton, ...]
    expire_in_s: int

    def approval(
        self, app_code: str, session_id: str, agent: str, turn_id: str, fingerprint: str, now_ms: int
    ) -> Approval:
        """The approval this request asks for, accepted now: its confirm's id is chosen here, once."""
        return Approval(
            app_code=app_code,
            session_id=session_id,
            agent=agent,
            turn_id=turn_id,
            approval_id=self.approval_id,
            user_id=self.user_id,
            text=self.text,
            buttons=self.buttons,
            confirm_id=new_id("cfm"),
            fingerprint=fingerprint,
            requested_at_ms=now_ms,
            expire_at_ms=now_ms + self.expire_in_s * 1000,
        )

    def fingerprint(self, agent: str, turn_id: str) -> str:
        """The request itself: the same id with the same request is a retry, with another one a reuse."""
        said = [agent, turn_id, self.approval_id, self.user_id, self.text, self.expire_in_s]
        said.append([button.to_dict() for button in self.buttons])
        return hashlib.sha256(json.dumps(said, separators=(",", ":")).encode()).hexdigest()


class Approvals:
    def __init__(self, turns: TurnService, store: TurnStore, clock: Clock = now_ms) -> None:
        self._turns = turns
        self._store = store
        self._clock = clock

    def request(self, engine: EngineCaller, session_id: str, agent: str, turn_id: str, ask: ApprovalAsk) -> Approval:
        """Ask; the same request again is answered with the approval as it stands (a retry after a lost answer
        finds its own commit), the same id with another request is refused."""
        fingerprint = ask.fingerprint(agent, turn_id)

        def decide() -> Approval:
            session, turns = self._turns.turn_of(engine, session_id, agent)
            existing = self._store.approval(engine.app_code, session_id, ask.approval_id)
            if existing is not None:
                if existing.fingerprint != fingerprint:
                    raise Conflict("this approval_id was used for another request", reason="approval_id_reused")
                return existing
            require_active(session)
            require_current(turns, turn_id)
            if turns.approval_id is not None:
                raise Conflict("the turn already waits for an approval", reason="approval_pending")
            if turns.state is not TurnState.RUNNING:
                raise Conflict(f"the turn is {turns.state}", reason="turn_not_running")
            require_approver(session, ask.user_id)
            approval = ask.approval(engine.app_code, session_id, agent, turn_id, fingerprint, self._clock())
            after, entries = suspend_for(turns, approval)
            self._turns.commit(Change(session, turns, after, entries, approval=approval))
            return replace(approval, version=1)

        return self._turns.decided(decide)

    def decide(
        self, app_code: str, session_id: str, approval_id: str, status: ApprovalStatus, by: str, reason: str = ""
    ) -> Approval:
        """The person's answer, or the expiry: recorded once. An approval decided already is returned as decided
        (the caller learns the one decision there is); an expiry asked for early changes nothing."""

        def decide() -> Approval:
            approval = self._store.approval(app_code, session_id, approval_id)
            if approval is None:
                raise NotFound("no such approval")
            if not approval.pending or (status is ApprovalStatus.EXPIRED and self._clock() < approval.expire_at_ms):
                return approval
            return self._record(approval, status, by, reason)

        return self._turns.decided(decide)

    def cancel(self, engine: EngineCaller, session_id: str, agent: str, turn_id: str, approval_id: str) -> Approval:
        """The engine withdraws its question: the turn runs on with `cancelled`. A repeat is answered the same."""

        def decide() -> Approval:
            self._turns.turn_of(engine, session_id, agent)
            approval = self._store.approval(engine.app_code, session_id, approval_id)
            if approval is None or (approval.agent, approval.turn_id) != (agent, turn_id):
                raise NotFound("no such approval")
            if approval.pending:
                return self._record(approval, ApprovalStatus.CANCELLED, ENGINE)
            if approval.status is ApprovalStatus.CANCELLED:
                return approval
            raise Conflict(f"the approval was {approval.status} already", reason=f"approval_{approval.status}")

        return self._turns.decided(decide)

    def stored(self, app_code: str, session_id: str, approval_id: str) -> Approval:
        """The approval as it stands (Herald's own reads: its confirm's repairs)."""
        approval = self._store.approval(app_code, session_id, approval_id)
        if approval is None:
            raise NotFound("no such approval")
        return approval

    def _record(self, approval: Approval, status: ApprovalStatus, by: str, reason: str = "") -> Approval:
        session = self._store.session(approval.app_code, approval.session_id)
        if session is None:
            raise NotFound("no such approval")
        turns = self._store.agent(approval.app_code, approval.session_id, approval.agent)
        deciding = decide_approval(turns, approval, status, by, self._clock(), reason)
        change = Change(
            session, turns, deciding.after, deciding.entries, approval=deciding.approval, approval_before=approval
        )
        self._turns.commit(change)
        return replace(deciding.approval, version=approval.version + 1)
