"""The `agent_approval` business: the confirm that puts an agent's approval in its person's IM.

The turn queue owns the approval and its one decision (`herald.turns.approvals`); this module adapts it to the
confirm port (act, fact, expire) and projects the approval (the turns table's stream, and the request itself before
it is answered) into its confirm and its `APPROVAL_PENDING` inbox notification, which is read once it is decided.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress

from herald.confirms.businesses import BusinessRefused
from herald.confirms.models import AGENT_APPROVAL, Action, Button, Confirm, ConfirmDraft, OwnerFact, OwnerState
from herald.confirms.service import Confirms
from herald.errors import HeraldError, NotFound, UpstreamError
from herald.inbox.models import Kind
from herald.inbox.service import Inbox, Incoming
from herald.turns.approvals import EXPIRY, Approvals
from herald.turns.models import Approval, ApprovalStatus

BUSINESS_TYPE = AGENT_APPROVAL
SOURCE_NAME = "agent_approvals"
PRODUCER = "herald"  # the inbox's producer of approval notifications: Herald itself
DECISION_OF = {Action.ACCEPT: ApprovalStatus.APPROVED, Action.REJECT: ApprovalStatus.REJECTED}
FACT_OF = {
    ApprovalStatus.PENDING: OwnerState.PENDING,
    ApprovalStatus.APPROVED: OwnerState.ACCEPTED,
    ApprovalStatus.REJECTED: OwnerState.REJECTED,
    ApprovalStatus.EXPIRED: OwnerState.EXPIRED,
    ApprovalStatus.CANCELLED: OwnerState.CANCELLED,
}


def business_id(approval: Approval) -> str:
    """An approval id is the engine's, unique in its session ('/' is in neither)."""
    return f"{approval.session_id}/{approval.approval_id}"


def approval_key(confirm: Confirm) -> tuple[str, str, str]:
    """(tenant, session, approval) the confirm asks about."""
    session_id, _, approval_id = confirm.business_id.partition("/")
    return confirm.app_code, session_id, approval_id


def fact_of(approval: Approval) -> OwnerFact:
    return OwnerFact(FACT_OF[approval.status], approval.decided_at_ms or None)


def draft_for(approval: Approval) -> ConfirmDraft:
    """The confirm comes from the agent (its IM account is the agent's name) to the member asked."""
    return ConfirmDraft(
        app_code=approval.app_code,
        business_type=BUSINESS_TYPE,
        business_subtype=approval.agent,
        business_id=business_id(approval),
        sender_user_id=approval.agent,
        receiver_user_id=approval.user_id,
        message_text=approval.text,
        source_name=SOURCE_NAME,
        source_event_id=business_id(approval),
        created_at_ms=approval.requested_at_ms,
        expire_at_ms=approval.expire_at_ms,
        payload={"session_id": approval.session_id, "agent": approval.agent, "turn_id": approval.turn_id},
        buttons=tuple(Button(Action(b.action), b.label, b.style) for b in approval.buttons),
        confirm_id=approval.confirm_id,
    )


class AgentApprovalBusiness:
    business_type = BUSINESS_TYPE

    def __init__(self, approvals: Approvals) -> None:
        self._approvals = approvals

    def act(self, confirm: Confirm, action: Action, reason: str) -> OwnerFact:
        decision = DECISION_OF[action]
        return self._ask(
            lambda: self._approvals.decide(*approval_key(confirm), decision, confirm.receiver_user_id, reason)
        )

    def fact(self, confirm: Confirm) -> OwnerFact:
        return self._ask(lambda: self._approvals.stored(*approval_key(confirm)))

    def expire(self, confirm: Confirm) -> OwnerFact:
        return self._ask(lambda: self._approvals.decide(*approval_key(confirm), ApprovalStatus.EXPIRED, EXPIRY))

    @staticmethod
    def _ask(call: Callable[[], Approval]) -> OwnerFact:
        try:
            return fact_of(call())
        except HeraldError as exc:  # no such approval: never will
            raise BusinessRefused(exc.reason or "", exc.message) from exc
        except Exception as exc:  # the turns table could not answer: not a refusal, try later
            raise UpstreamError("the approval could not be read") from exc


class ApprovalProjection:
    """What an approval shows the person: its confirm and inbox notification while pending; once decided, the
    confirm follows the decision (the buttons grey out) and the notification counts as read."""

    def __init__(self, confirms: Confirms, inbox: Inbox) -> None:
        self._confirms = confirms
        self._inbox = inbox

    def project(self, approval: Approval) -> None:
        """Idempotent: the request, a repeated stream record and the janitor may each run it."""
        if approval.pending:
            self._confirms.project(draft_for(approval))
            self._inbox.record(self._notification(approval))
            return
        self._confirms.owner_decided(approval.app_code, SOURCE_NAME, business_id(approval), fact_of(approval))
        with suppress(NotFound):  # never recorded (the person's preferences turned it off)
            self._inbox.resolve(
                approval.app_code,
                PRODUCER,
                approval.user_id,
                Kind.APPROVAL_PENDING,
                approval.session_id,
                _tail(approval),
            )

    @staticmethod
    def _notification(approval: Approval) -> Incoming:
        return Incoming(
            app_code=approval.app_code,
            producer=PRODUCER,
            user_id=approval.user_id,
            kind=Kind.APPROVAL_PENDING,
            session_id=approval.session_id,
            tail=_tail(approval),
            title=f"{approval.agent} asks for your approval",
            content=approval.text,
            payload={
                "agent": approval.agent,
                "turn_id": approval.turn_id,
                "approval_id": approval.approval_id,
                "confirm_id": approval.confirm_id,
                "expire_at_ms": approval.expire_at_ms,
            },
        )


def _tail(approval: Approval) -> str:
    return f"{approval.agent}.{approval.approval_id}"
