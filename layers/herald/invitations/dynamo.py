"""DynamoDB adapter for invitations. One table, three kinds of item (`item_type`):

* `invitation` — `pk = INV#<app>#<invitation_id>`, the fact; its stream is the owner's outbox;
* `pending_lock` — `pk = PENDING#<app>#<inviter>#<target>#<type>`, at most one pending invitation per
  inviter, target and type; and `pk = SLOT#<app>#inviter|target#<user>#<n>`, the pending slots that cap
  how many invitations one inviter has out and one target has waiting; each replaced once the invitation
  it names is no longer pending;
* `role_grant` — `pk = ROLE#<app>#<user>#<role>`, written with `if_not_exists`, so a role is granted once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pynamodb.attributes import UnicodeAttribute, VersionAttribute
from pynamodb.exceptions import DeleteError
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action
from pynamodb.models import Model

from herald.invitations.models import Invitation, InvitationStatus, InvitationType
from herald.invitations.service import DuplicatePending, PendingCapReached, PendingCaps, StaleInvitation
from herald.tables import Cancelled, Database, IntAttribute, Transaction, condition_failed

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

ITEM_TYPE = "invitation"
CLAIM_TYPE = "pending_lock"
GRANT_TYPE = "role_grant"


class InvitationRow(Model):
    """InvitationsTable, an invitation: the owner's fact, its version guarding every transition."""

    pk = UnicodeAttribute(hash_key=True)  # INV#<app>#<invitation_id>
    item_type = UnicodeAttribute(default=ITEM_TYPE)
    app_code = UnicodeAttribute()
    invitation_id = UnicodeAttribute()
    invitation_type = UnicodeAttribute()
    status = UnicodeAttribute()
    inviter_user_id = UnicodeAttribute()
    target_user_id = UnicodeAttribute()
    agency_name = UnicodeAttribute(null=True)
    created_at_ms = IntAttribute()
    updated_at_ms = IntAttribute()
    expire_at_ms = IntAttribute()
    decided_at_ms = IntAttribute(null=True)
    reject_reason = UnicodeAttribute(null=True)
    version = VersionAttribute()

    def invitation(self) -> Invitation:
        return Invitation(
            app_code=self.app_code,
            invitation_id=self.invitation_id,
            invitation_type=InvitationType(self.invitation_type),
            status=InvitationStatus(self.status),
            inviter_user_id=self.inviter_user_id,
            target_user_id=self.target_user_id,
            agency_name=self.agency_name or "",
            created_at_ms=self.created_at_ms,
            updated_at_ms=self.updated_at_ms,
            expire_at_ms=self.expire_at_ms,
            version=int(self.version),
            decided_at_ms=self.decided_at_ms,
            reject_reason=self.reject_reason or "",
        )


class ClaimRow(Model):
    """InvitationsTable, a claim (the pair lock or a pending slot), held by the invitation it names."""

    pk = UnicodeAttribute(hash_key=True)  # PENDING#... or SLOT#...
    item_type = UnicodeAttribute(default=CLAIM_TYPE)
    invitation_id = UnicodeAttribute()


class GrantRow(Model):
    """InvitationsTable, a role granted by an accepted invitation."""

    pk = UnicodeAttribute(hash_key=True)  # ROLE#<app>#<user>#<role>
    item_type = UnicodeAttribute(default=GRANT_TYPE)
    app_code = UnicodeAttribute()
    user_id = UnicodeAttribute()
    role = UnicodeAttribute()
    granted_at_ms = IntAttribute()
    granted_by = UnicodeAttribute()


def invitation_key(app_code: str, invitation_id: str) -> str:
    return f"INV#{app_code}#{invitation_id}"


def _lock_key(invitation: Invitation) -> str:
    parts = (invitation.app_code, invitation.inviter_user_id, invitation.target_user_id, invitation.invitation_type)
    return "PENDING#" + "#".join(str(part) for part in parts)


def _slot_keys(app_code: str, who: str, user_id: str, cap: int) -> list[str]:
    """The pending slots of an inviter or a target: holding one is what makes an invitation count."""
    return [f"SLOT#{app_code}#{who}#{user_id}#{number}" for number in range(cap)]


def grant_key(app_code: str, user_id: str, role: str) -> str:
    return f"ROLE#{app_code}#{user_id}#{role}"


def invitation_from_image(image: dict[str, Any]) -> Invitation | None:
    """The invitation a stream image shows (None for a claim or a grant)."""
    if image.get("item_type", {}).get("S") != ITEM_TYPE:
        return None
    return InvitationRow.from_raw_data(image).invitation()


class DynamoInvitationStore:
    def __init__(self, table_name: str, client: DynamoDBClient | None = None) -> None:
        self._database = Database(client)
        self._rows = self._database.bind(InvitationRow, table_name)
        self._claims = self._database.bind(ClaimRow, table_name)
        self._grants = self._database.bind(GrantRow, table_name)

    def create(self, invitation: Invitation, caps: PendingCaps) -> None:
        """The invitation, with three kinds of claim in the same transaction: the pair lock (one pending
        invitation per inviter, target and type) and one of the inviter's and one of the target's pending
        slots. A claim held by an invitation no longer pending (or past its expiry) is taken over, so
        the caps hold exactly however many creates race."""
        row = self._rows(
            pk=invitation_key(invitation.app_code, invitation.invitation_id),
            app_code=invitation.app_code,
            invitation_id=invitation.invitation_id,
            invitation_type=str(invitation.invitation_type),
            status=str(invitation.status),
            inviter_user_id=invitation.inviter_user_id,
            target_user_id=invitation.target_user_id,
            agency_name=invitation.agency_name,
            created_at_ms=invitation.created_at_ms,
            updated_at_ms=invitation.updated_at_ms,
            expire_at_ms=invitation.expire_at_ms,
        )
        now = invitation.created_at_ms
        app = invitation.app_code
        for _ in range(8):
            lock = self._claim_free([_lock_key(invitation)], invitation, now)
            if lock is None:
                raise DuplicatePending(invitation.invitation_id)
            if isinstance(lock, str):
                return  # our own first attempt went through (a retried call)
            claims: list[tuple[ClaimRow, Condition]] = [lock]
            for who, user_id, cap in (
                ("inviter", invitation.inviter_user_id, caps.per_inviter),
                ("target", invitation.target_user_id, caps.per_target),
            ):
                slot = self._claim_free(_slot_keys(app, who, user_id, cap), invitation, now)
                if slot is None:
                    raise PendingCapReached(who)
                if not isinstance(slot, str):  # a slot already ours needs no claim
                    claims.append(slot)

            def write(transaction: Transaction, claims: list[tuple[ClaimRow, Condition]] = claims) -> None:
                transaction.put(row, self._rows.pk.does_not_exist(), label="invitation")
                for claim, condition in claims:
                    transaction.put(claim, condition, label="claim")

            try:
                self._database.transact(write)
                return
            except Cancelled as cancelled:
                if "claim" not in cancelled.failed:
                    raise
                # Another create took a claim since it was read: read the claims again.
        raise PendingCapReached("inviter")

    def _claim_free(self, keys: list[str], invitation: Invitation, now: int) -> tuple[ClaimRow, Condition] | str | None:
        """(row, condition) claiming the first of `keys` that is free (absent, or held by an invitation that
        no longer waits), conditioned on it being as read; "ours" when this invitation already holds one;
        None when every key is held by a live pending invitation."""
        holders = {row.pk: str(row.invitation_id) for row in self._rows.batch_get(keys, consistent_read=True)}
        if invitation.invitation_id in holders.values():
            return "ours"
        live = self._live_pending(set(holders.values()), invitation.app_code, now)
        for key in keys:
            holder = holders.get(key)
            if holder in live:
                continue
            claim = self._claims(pk=key, invitation_id=invitation.invitation_id)
            condition = self._claims.pk.does_not_exist() if holder is None else self._claims.invitation_id == holder
            return claim, condition
        return None

    def _live_pending(self, invitation_ids: set[str], app_code: str, now: int) -> set[str]:
        keys = [invitation_key(app_code, i) for i in sorted(invitation_ids)]
        held = [row.invitation() for row in self._rows.batch_get(keys, consistent_read=True)]
        return {i.invitation_id for i in held if i.status is InvitationStatus.PENDING and i.expire_at_ms > now}

    def get(self, app_code: str, invitation_id: str) -> Invitation | None:
        try:
            row = self._rows.get(invitation_key(app_code, invitation_id), consistent_read=True)
        except self._rows.DoesNotExist:
            return None
        return row.invitation()

    def transition(self, current: Invitation, new_status: InvitationStatus, now: int, reason: str = "") -> Invitation:
        decided = new_status in (InvitationStatus.ACCEPTED, InvitationStatus.REJECTED)
        row = self._rows(pk=invitation_key(current.app_code, current.invitation_id), version=current.version)
        actions: list[Action] = [self._rows.status.set(str(new_status)), self._rows.updated_at_ms.set(now)]
        if decided:
            actions.append(self._rows.decided_at_ms.set(now))
        if reason:
            actions.append(self._rows.reject_reason.set(reason))

        def write(transaction: Transaction) -> None:
            pending = self._rows.status == str(InvitationStatus.PENDING)
            transaction.update(row, actions, pending, label="invitation")  # and the version read
            if new_status is InvitationStatus.ACCEPTED:
                transaction.update(*self._grant(current, now))

        try:
            self._database.transact(write)
        except Cancelled as cancelled:
            if "invitation" in cancelled.failed:
                raise StaleInvitation(current.invitation_id) from cancelled
            raise
        self._release_lock(current)
        return Invitation(
            **{
                **current.__dict__,
                "status": new_status,
                "updated_at_ms": now,
                "version": current.version + 1,
                "decided_at_ms": now if decided else current.decided_at_ms,
                "reject_reason": reason or current.reject_reason,
            }
        )

    def _grant(self, invitation: Invitation, now: int) -> tuple[GrantRow, list[Action]]:
        """The role grant's row and actions: granted once, by the first invitation accepted."""
        role = str(invitation.invitation_type)
        grants = self._grants
        return grants(pk=grant_key(invitation.app_code, invitation.target_user_id, role)), [
            grants.item_type.set(GRANT_TYPE),
            grants.app_code.set(invitation.app_code),
            grants.user_id.set(invitation.target_user_id),
            grants.role.set(role),
            grants.granted_at_ms.set(grants.granted_at_ms | now),
            grants.granted_by.set(grants.granted_by | invitation.invitation_id),
        ]

    def _release_lock(self, invitation: Invitation) -> None:
        """Best effort: a lock left behind names a decided invitation and is taken over on the next create."""
        try:
            self._claims(pk=_lock_key(invitation)).delete(
                condition=self._claims.invitation_id == invitation.invitation_id
            )
        except DeleteError as error:
            if not condition_failed(error):
                raise
