from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class ConfirmStatus(StrEnum):
    PENDING = "pending"
    PROCESSING = "processing"
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    CANCELLED = "cancelled"
    EXPIRED = "expired"
    FAILED = "failed"

    @property
    def terminal(self) -> bool:
        return self not in (ConfirmStatus.PENDING, ConfirmStatus.PROCESSING)


class Action(StrEnum):
    ACCEPT = "accept"
    REJECT = "reject"


RESULT_OF = {Action.ACCEPT: ConfirmStatus.ACCEPTED, Action.REJECT: ConfirmStatus.REJECTED}
ACTION_OF = {status: action for action, status in RESULT_OF.items()}

# The state machine. Accepted/rejected straight from pending, and cancelled/expired from processing, happen
# only when a confirm is repaired from its owner's fact (the owner decided by another path).
ALLOWED: dict[ConfirmStatus, frozenset[ConfirmStatus]] = {
    ConfirmStatus.PENDING: frozenset(
        {
            ConfirmStatus.PROCESSING,
            ConfirmStatus.CANCELLED,
            ConfirmStatus.EXPIRED,
            ConfirmStatus.ACCEPTED,
            ConfirmStatus.REJECTED,
        }
    ),
    ConfirmStatus.PROCESSING: frozenset(
        {
            ConfirmStatus.PROCESSING,  # a new lease after the old one ran out
            ConfirmStatus.ACCEPTED,
            ConfirmStatus.REJECTED,
            ConfirmStatus.FAILED,
            ConfirmStatus.CANCELLED,
            ConfirmStatus.EXPIRED,
        }
    ),
    **{status: frozenset() for status in ConfirmStatus if status.terminal},
}

BUTTON_STYLES = ("primary", "secondary", "danger")


@dataclass(frozen=True)
class Button:
    """One action a confirm offers, as the app draws it (the IM payload's `actions`)."""

    action: Action
    label: str
    style: str

    def to_dict(self) -> dict[str, str]:
        return {"action": str(self.action), "label": self.label, "style": self.style}


DEFAULT_BUTTONS = (Button(Action.REJECT, "Reject", "secondary"), Button(Action.ACCEPT, "Accept", "primary"))
# Businesses whose sender is an agent, not a person: its name is only the IM account the question comes from, and a
# user whose id happens to be that name is no party to the confirm (only the receiver is).
AGENT_APPROVAL = "agent_approval"
AGENT_SENT = frozenset({AGENT_APPROVAL})


@dataclass(frozen=True)
class Confirm:
    app_code: str
    confirm_id: str
    business_type: str
    business_subtype: str
    business_id: str
    sender_user_id: str
    receiver_user_id: str
    status: ConfirmStatus
    message_text: str
    source_name: str
    source_event_id: str
    created_at_ms: int
    updated_at_ms: int
    expire_at_ms: int
    version: int
    buttons: tuple[Button, ...] = DEFAULT_BUTTONS
    payload: dict[str, Any] = field(default_factory=dict)
    processing_action: str = ""
    processing_command_id: str = ""
    processing_reason: str = ""  # the receiver's reason for the claimed action (a reject's), for a repair
    locked_by: str = ""
    lock_until_ms: int = 0
    processed_action: str = ""
    processed_command_id: str = ""
    processed_by_user_id: str = ""
    processed_at_ms: int = 0
    failure_reason: str = ""

    def holds_lock(self, lock: str) -> bool:
        """Whether this confirm is being processed under `lock` (a claim knows its own write by its lock)."""
        return self.status is ConfirmStatus.PROCESSING and bool(lock) and self.locked_by == lock

    def party(self, user_id: str) -> bool:
        if self.business_type in AGENT_SENT:
            return user_id == self.receiver_user_id
        return user_id in (self.sender_user_id, self.receiver_user_id)

    def offers(self, action: Action) -> bool:
        return any(button.action is action for button in self.buttons)

    def evolve(self, **changes: Any) -> Confirm:
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class ConfirmDraft:
    """What a business asks for: everything but the confirm's own id and state."""

    app_code: str
    business_type: str
    business_subtype: str
    business_id: str
    sender_user_id: str
    receiver_user_id: str
    message_text: str
    source_name: str
    source_event_id: str
    created_at_ms: int
    expire_at_ms: int
    payload: dict[str, Any] = field(default_factory=dict)
    buttons: tuple[Button, ...] = DEFAULT_BUTTONS
    confirm_id: str = ""  # chosen by the business when it answers with it before the confirm exists (else new)


class OwnerState(StrEnum):
    PENDING = "pending"
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    CANCELLED = "cancelled"
    EXPIRED = "expired"


@dataclass(frozen=True)
class OwnerFact:
    """The business owner's truth about the thing a confirm asks about."""

    state: OwnerState
    decided_at_ms: int | None = None

    @property
    def confirm_status(self) -> ConfirmStatus | None:
        """The terminal confirm status this fact implies (None while the owner is undecided)."""
        return None if self.state is OwnerState.PENDING else ConfirmStatus(str(self.state))


def view(confirm: Confirm) -> dict[str, Any]:
    """The confirm view of contract §1."""
    return {
        "confirm_id": confirm.confirm_id,
        "business_type": confirm.business_type,
        "business_subtype": confirm.business_subtype,
        "business_id": confirm.business_id,
        "sender_user_id": confirm.sender_user_id,
        "receiver_user_id": confirm.receiver_user_id,
        "status": str(confirm.status),
        "processed_action": confirm.processed_action,
        "processed_at_ms": confirm.processed_at_ms,
        "created_at_ms": confirm.created_at_ms,
        "expire_at_ms": confirm.expire_at_ms,
    }


@dataclass(frozen=True)
class CustomMessage:
    """An IM custom message: what a confirm push sends (the adapter writes it in the provider's format)."""

    from_account: str
    to_account: str
    msg_random: int  # chosen once per message and kept for its retries: the provider's dedup key
    data: dict[str, Any]
    desc: str
    ext: str
    sync_other_machine: bool = True  # the sender's own devices get it too
    send_msg_control: tuple[str, ...] = ()  # e.g. ("NoUnread", "NoLastMsg") for state updates


@dataclass(frozen=True)
class SendResult:
    """The provider's receipt for a sent message."""

    msg_key: str
    msg_time: int


class StaleConfirm(Exception):
    """The confirm changed since it was read (a lost conditional write)."""


class BusinessTaken(Exception):
    """Another confirm (from another source event) already asks about this business id."""


@dataclass(frozen=True)
class Delivery:
    app_code: str
    confirm_id: str
    key: str
    msg_random: int
    status: str  # pending | sent | failed
    attempts: int = 0
    sent_at_ms: int = 0
    last_error: str = ""
    last_error_at_ms: int = 0
    msg_key: str = ""
    sending_since_ms: int = 0  # set before a call to Tencent, cleared by its recorded outcome
