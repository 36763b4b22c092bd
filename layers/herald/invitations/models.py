from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class InvitationType(StrEnum):
    HOST = "host"
    AGENCY = "agency"
    BD = "bd"


class InvitationStatus(StrEnum):
    PENDING = "pending"
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    CANCELLED = "cancelled"
    EXPIRED = "expired"

    @property
    def terminal(self) -> bool:
        return self is not InvitationStatus.PENDING


class Decision(StrEnum):
    ACCEPT = "accept"
    REJECT = "reject"


DECIDED = {Decision.ACCEPT: InvitationStatus.ACCEPTED, Decision.REJECT: InvitationStatus.REJECTED}


@dataclass(frozen=True)
class Invitation:
    app_code: str
    invitation_id: str
    invitation_type: InvitationType
    status: InvitationStatus
    inviter_user_id: str
    target_user_id: str
    agency_name: str
    created_at_ms: int
    updated_at_ms: int
    expire_at_ms: int
    version: int
    decided_at_ms: int | None = None
    reject_reason: str = ""

    def party(self, user_id: str) -> bool:
        return user_id in (self.inviter_user_id, self.target_user_id)
