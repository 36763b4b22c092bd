"""Role invitation routes (contract §1, owner)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import ConfigDict, Field

from herald.invitations.models import Invitation, InvitationType
from herald.invitations.wiring import invitations
from herald.limits.wiring import invitee_limit, rate_limiter
from herald.web.envelope import APP, APP_AUDIENCE, ApiModel, Envelope, errors, ok
from herald.web.security import CurrentPrincipal

router = APIRouter(prefix="/api/v1/role-invitations", tags=[APP_AUDIENCE])


class CreateInvitation(ApiModel):
    model_config = ConfigDict(extra="forbid")

    invitation_type: InvitationType
    target_user_id: str = Field(min_length=1, max_length=20)
    agency_name: str = Field(default="", max_length=64)


class InvitationView(ApiModel):
    invitation_id: str
    invitation_type: str
    status: str
    inviter_user_id: str
    target_user_id: str
    agency_name: str
    created_at_ms: int
    expire_at_ms: int


def _view(invitation: Invitation) -> InvitationView:
    fields: dict[str, Any] = {name: getattr(invitation, name) for name in InvitationView.model_fields}
    return InvitationView(
        **{**fields, "invitation_type": str(invitation.invitation_type), "status": str(invitation.status)}
    )


@router.post("", responses=errors(*APP, "INVALID_ARGUMENT", "CONFLICT"), response_model=Envelope[InvitationView])
def create_invitation(
    request: Request, body: CreateInvitation, principal: CurrentPrincipal
) -> Envelope[InvitationView]:
    rate_limiter().check(invitee_limit(), f"{principal.app_code}#{body.target_user_id}")
    invitation = invitations().create(
        principal.app_code, principal.user_id, body.invitation_type, body.target_user_id, body.agency_name
    )
    return ok(request, _view(invitation))


@router.get(
    "/{invitation_id}", responses=errors(*APP, "INVALID_ARGUMENT", "NOT_FOUND"), response_model=Envelope[InvitationView]
)
def get_invitation(request: Request, invitation_id: str, principal: CurrentPrincipal) -> Envelope[InvitationView]:
    return ok(request, _view(invitations().get_for(principal.app_code, invitation_id, principal.user_id)))


@router.post(
    "/{invitation_id}/cancel",
    responses=errors(*APP, "INVALID_ARGUMENT", "PERMISSION_DENIED", "NOT_FOUND", "CONFLICT"),
    response_model=Envelope[InvitationView],
)
def cancel_invitation(request: Request, invitation_id: str, principal: CurrentPrincipal) -> Envelope[InvitationView]:
    return ok(request, _view(invitations().cancel(principal.app_code, invitation_id, principal.user_id)))
