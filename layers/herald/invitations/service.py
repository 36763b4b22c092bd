"""The invitation owner's rules: create, read, cancel, and decide (`process`) idempotently.

Accepting grants the role exactly once: the status change and the grant are one transaction conditioned
on the invitation still being pending, so a repeated or concurrent accept finds it decided and grants
nothing. A pending invitation past its expiry is expired when it is next touched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

from herald.clock import Clock, now_ms
from herald.errors import Conflict, InvalidArgument, NotFound, PermissionDenied
from herald.ids import new_id
from herald.invitations.models import DECIDED, Decision, Invitation, InvitationStatus, InvitationType

USER_ID = re.compile(r"^[0-9]{1,20}$")
INVITATION_ID = re.compile(r"^inv_[0-9a-f]{32}$")
MAX_AGENCY_NAME = 64
# An agency's name is shown to the target in its chat as plain text: letters (any script), digits, spaces
# and a little punctuation; nothing that reads as a link, an address or markup.
AGENCY_NAME = re.compile(r"[^\W_]+(?:[ &'.,()-][^\W_]*)*")


class StaleInvitation(Exception):
    """The invitation changed since it was read (a lost conditional write)."""


class DuplicatePending(Exception):
    """The inviter already has a pending invitation of this type for this target."""


class PendingCapReached(Exception):
    """The inviter has too many invitations out, or the target too many waiting (`who`)."""

    def __init__(self, who: str) -> None:
        super().__init__(who)
        self.who = who


@dataclass(frozen=True)
class PendingCaps:
    per_inviter: int
    per_target: int


class InvitationStore(Protocol):
    def create(self, invitation: Invitation, caps: PendingCaps) -> None:
        """Insert; DuplicatePending when an equal one is pending, PendingCapReached over a cap."""
        ...

    def get(self, app_code: str, invitation_id: str) -> Invitation | None: ...

    def transition(self, current: Invitation, new_status: InvitationStatus, now: int, reason: str = "") -> Invitation:
        """Move a pending invitation on (granting the role on acceptance); StaleInvitation if it moved."""
        ...


def validate_invitation_id(invitation_id: str) -> str:
    if not INVITATION_ID.fullmatch(invitation_id):
        raise InvalidArgument("invitation_id is malformed")
    return invitation_id


def _checked(inviter_user_id: str, invitation_type: InvitationType, target_user_id: str, agency_name: str) -> str:
    """What an inviter asked for, refused where it can never be an invitation; the agency name as kept."""
    if not USER_ID.fullmatch(target_user_id):
        raise InvalidArgument("target_user_id must be a numeric user id")
    if target_user_id == inviter_user_id:
        raise InvalidArgument("cannot invite yourself")
    agency_name = agency_name.strip()
    if len(agency_name) > MAX_AGENCY_NAME:
        raise InvalidArgument(f"agency_name is longer than {MAX_AGENCY_NAME} characters")
    if agency_name and not AGENCY_NAME.fullmatch(agency_name):
        raise InvalidArgument(
            "agency_name may hold letters, digits, spaces and & ' . , ( ) - only", reason="agency_name_not_plain"
        )
    if invitation_type is InvitationType.AGENCY and not agency_name:
        raise InvalidArgument("agency_name is required for an agency invitation")
    return agency_name


class Invitations:
    def __init__(self, store: InvitationStore, ttl_ms: int, caps: PendingCaps, clock: Clock = now_ms) -> None:
        self._store = store
        self._ttl_ms = ttl_ms
        self._caps = caps
        self._clock = clock

    def create(
        self,
        app_code: str,
        inviter_user_id: str,
        invitation_type: InvitationType,
        target_user_id: str,
        agency_name: str,
    ) -> Invitation:
        agency_name = _checked(inviter_user_id, invitation_type, target_user_id, agency_name)
        now = self._clock()
        invitation = Invitation(
            app_code=app_code,
            invitation_id=new_id("inv"),
            invitation_type=invitation_type,
            status=InvitationStatus.PENDING,
            inviter_user_id=inviter_user_id,
            target_user_id=target_user_id,
            agency_name=agency_name,
            created_at_ms=now,
            updated_at_ms=now,
            expire_at_ms=now + self._ttl_ms,
            version=1,
        )
        try:
            self._store.create(invitation, self._caps)
        except DuplicatePending as exc:
            raise Conflict(
                "a pending invitation of this type to this user exists", reason="invitation_pending"
            ) from exc
        except PendingCapReached as exc:
            if exc.who == "inviter":
                raise Conflict(
                    f"you have {self._caps.per_inviter} invitations waiting for an answer already",
                    reason="too_many_pending_invitations",
                ) from exc
            raise Conflict(
                "this user has too many invitations waiting for an answer", reason="target_has_too_many_invitations"
            ) from exc
        return invitation

    def get_for(self, app_code: str, invitation_id: str, user_id: str) -> Invitation:
        """Only the inviter and the target see an invitation; to anyone else it does not exist."""
        invitation = self._current(app_code, validate_invitation_id(invitation_id))
        if invitation is None or not invitation.party(user_id):
            raise NotFound("no such invitation")
        return invitation

    def cancel(self, app_code: str, invitation_id: str, user_id: str) -> Invitation:
        invitation = self.get_for(app_code, invitation_id, user_id)
        if invitation.inviter_user_id != user_id:
            raise PermissionDenied("only the inviter may cancel an invitation")
        if invitation.status is not InvitationStatus.PENDING:
            raise Conflict(f"invitation is {invitation.status}", reason=f"invitation_{invitation.status}")
        try:
            return self._store.transition(invitation, InvitationStatus.CANCELLED, self._clock())
        except StaleInvitation as exc:
            latest = self.fact(app_code, invitation_id)
            raise Conflict(f"invitation is {latest.status}", reason=f"invitation_{latest.status}") from exc

    def fact(self, app_code: str, invitation_id: str) -> Invitation:
        """The current truth (expiring it first if its time has passed)."""
        invitation = self._current(app_code, invitation_id)
        if invitation is None:
            raise NotFound("no such invitation")
        return invitation

    def process(
        self, app_code: str, invitation_id: str, decision: Decision, actor_user_id: str, reason: str = ""
    ) -> Invitation:
        """Decide for the target. Idempotent: an already decided invitation is returned as it is."""
        invitation = self.fact(app_code, invitation_id)
        if invitation.target_user_id != actor_user_id:
            raise PermissionDenied("only the invited user may decide")
        while invitation.status is InvitationStatus.PENDING:
            try:
                return self._store.transition(invitation, DECIDED[decision], self._clock(), reason)
            except StaleInvitation:
                invitation = self.fact(app_code, invitation_id)
        return invitation

    def expire(self, app_code: str, invitation_id: str) -> Invitation:
        """Expire a pending invitation now (its confirm expired); a decided one is returned unchanged."""
        invitation = self.fact(app_code, invitation_id)
        while invitation.status is InvitationStatus.PENDING:
            try:
                return self._store.transition(invitation, InvitationStatus.EXPIRED, self._clock())
            except StaleInvitation:
                invitation = self.fact(app_code, invitation_id)
        return invitation

    def _current(self, app_code: str, invitation_id: str) -> Invitation | None:
        invitation = self._store.get(app_code, invitation_id)
        if (
            invitation is not None
            and invitation.status is InvitationStatus.PENDING
            and self._clock() >= invitation.expire_at_ms
        ):
            try:
                return self._store.transition(invitation, InvitationStatus.EXPIRED, self._clock())
            except StaleInvitation:
                return self._store.get(app_code, invitation_id)
        return invitation
