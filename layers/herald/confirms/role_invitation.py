"""The `role_invitation` business: confirms for host / agency / bd invitations.

The invitations context owns the decision; this module adapts it to the confirm port (act, fact,
expire) and projects the owner's outbox (its table stream) into confirms.
"""

from __future__ import annotations

from typing import Any

from herald.confirms.businesses import BusinessRefused
from herald.confirms.models import Action, Confirm, ConfirmDraft, OwnerFact, OwnerState
from herald.confirms.service import Confirms
from herald.errors import HeraldError, UpstreamError
from herald.invitations.models import Decision, Invitation, InvitationStatus, InvitationType
from herald.invitations.service import Invitations

BUSINESS_TYPE = "role_invitation"
SOURCE_NAME = "role_invitations"

_TEXT = {
    InvitationType.HOST: "User {inviter} invited you to become a host",
    InvitationType.AGENCY: "User {inviter} invited you to join {agency} as an agency",
    InvitationType.BD: "User {inviter} invited you to become a BD",
}


def fact_of(invitation: Invitation) -> OwnerFact:
    return OwnerFact(
        state=OwnerState(str(invitation.status)),
        decided_at_ms=invitation.decided_at_ms or invitation.updated_at_ms,
    )


def draft_for(invitation: Invitation) -> ConfirmDraft:
    text = _TEXT[invitation.invitation_type].format(inviter=invitation.inviter_user_id, agency=invitation.agency_name)
    return ConfirmDraft(
        app_code=invitation.app_code,
        business_type=BUSINESS_TYPE,
        business_subtype=str(invitation.invitation_type),
        business_id=invitation.invitation_id,
        sender_user_id=invitation.inviter_user_id,
        receiver_user_id=invitation.target_user_id,
        message_text=text,
        payload={"agency_name": invitation.agency_name} if invitation.agency_name else {},
        source_name=SOURCE_NAME,
        source_event_id=invitation.invitation_id,
        created_at_ms=invitation.created_at_ms,
        expire_at_ms=invitation.expire_at_ms,
    )


class RoleInvitationBusiness:
    business_type = BUSINESS_TYPE

    def __init__(self, invitations: Invitations) -> None:
        self._invitations = invitations

    def act(self, confirm: Confirm, action: Action, reason: str) -> OwnerFact:
        return self._ask(
            lambda: self._invitations.process(
                confirm.app_code, confirm.business_id, Decision(str(action)), confirm.receiver_user_id, reason
            )
        )

    def fact(self, confirm: Confirm) -> OwnerFact:
        return self._ask(lambda: self._invitations.fact(confirm.app_code, confirm.business_id))

    def expire(self, confirm: Confirm) -> OwnerFact:
        return self._ask(lambda: self._invitations.expire(confirm.app_code, confirm.business_id))

    @staticmethod
    def _ask(call: Any) -> OwnerFact:
        try:
            return fact_of(call())
        except HeraldError as exc:  # the owner refuses (no such invitation, not the target): never will
            raise BusinessRefused(exc.reason or "", exc.message) from exc
        except Exception as exc:  # the owner could not answer (its store failed): not a refusal, try later
            raise UpstreamError("the invitation service could not answer") from exc


def project_invitation_change(confirms: Confirms, before: Invitation | None, invitation: Invitation) -> None:
    """One change of an invitation (the owner's outbox): a new invitation gets its confirm; an invitation the
    owner decided by itself (cancelled, expired) moves its pending confirm along."""
    if invitation.status is InvitationStatus.PENDING:
        confirms.project(draft_for(invitation))  # idempotent: a repeated or missed record heals here
        return
    if before is not None and before.status is not invitation.status:
        confirms.owner_decided(invitation.app_code, SOURCE_NAME, invitation.invitation_id, fact_of(invitation))
