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

from botocore.exceptions import ClientError

from herald.dynamo import cancelled_on, from_item, to_attr, to_item
from herald.dynamo_table import DynamoTable
from herald.invitations.models import Invitation, InvitationStatus, InvitationType
from herald.invitations.service import DuplicatePending, PendingCapReached, PendingCaps, StaleInvitation

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef

ITEM_TYPE = "invitation"


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


def invitation_from_item(item: dict[str, Any]) -> Invitation:
    return Invitation(
        app_code=item["app_code"],
        invitation_id=item["invitation_id"],
        invitation_type=InvitationType(item["invitation_type"]),
        status=InvitationStatus(item["status"]),
        inviter_user_id=item["inviter_user_id"],
        target_user_id=item["target_user_id"],
        agency_name=item.get("agency_name", ""),
        created_at_ms=item["created_at_ms"],
        updated_at_ms=item["updated_at_ms"],
        expire_at_ms=item["expire_at_ms"],
        version=item["version"],
        decided_at_ms=item.get("decided_at_ms"),
        reject_reason=item.get("reject_reason", ""),
    )


class DynamoInvitationStore(DynamoTable):
    def create(self, invitation: Invitation, caps: PendingCaps) -> None:
        """The invitation, with three kinds of claim in the same transaction: the pair lock (one pending
        invitation per inviter, target and type) and one of the inviter's and one of the target's pending
        slots. A claim held by an invitation no longer pending (or past its expiry) is taken over, so
        the caps hold exactly however many creates race."""
        item = to_item(
            {
                "pk": invitation_key(invitation.app_code, invitation.invitation_id),
                "item_type": ITEM_TYPE,
                "app_code": invitation.app_code,
                "invitation_id": invitation.invitation_id,
                "invitation_type": str(invitation.invitation_type),
                "status": str(invitation.status),
                "inviter_user_id": invitation.inviter_user_id,
                "target_user_id": invitation.target_user_id,
                "agency_name": invitation.agency_name,
                "created_at_ms": invitation.created_at_ms,
                "updated_at_ms": invitation.updated_at_ms,
                "expire_at_ms": invitation.expire_at_ms,
                "version": invitation.version,
            }
        )
        now = invitation.created_at_ms
        app = invitation.app_code
        for _ in range(8):
            lock = self._claim_free([_lock_key(invitation)], invitation, now)
            if lock is None:
                raise DuplicatePending(invitation.invitation_id)
            if lock == "ours":
                return  # our own first attempt went through (a retried call)
            slots = []
            for who, user_id, cap in (
                ("inviter", invitation.inviter_user_id, caps.per_inviter),
                ("target", invitation.target_user_id, caps.per_target),
            ):
                slot = self._claim_free(_slot_keys(app, who, user_id, cap), invitation, now)
                if slot is None:
                    raise PendingCapReached(who)
                slots.append(slot)
            try:
                self._transact(
                    [
                        {
                            "Put": {
                                "TableName": self._table,
                                "Item": item,
                                "ConditionExpression": "attribute_not_exists(pk)",
                            }
                        },
                        *(claim for claim in (lock, *slots) if isinstance(claim, dict)),
                    ]
                )
                return
            except ClientError as exc:
                if not any(cancelled_on(exc, index) for index in range(1, 4)):
                    raise
                # Another create took a claim since it was read: read the claims again.
        raise PendingCapReached("inviter")

    def _claim_free(self, keys: list[str], invitation: Invitation, now: int) -> TransactWriteItemTypeDef | str | None:
        """A Put claiming the first of `keys` that is free (absent, or held by an invitation that no longer
        waits), conditioned on it being as read; "ours" when this invitation already holds one; None when
        every key is held by a live pending invitation."""
        holders = self._holders(keys)
        if invitation.invitation_id in holders.values():
            return "ours"
        live = self._live_pending(set(holders.values()), invitation.app_code, now)
        for key in keys:
            holder = holders.get(key)
            if holder in live:
                continue
            condition = "attribute_not_exists(pk)" if holder is None else "invitation_id = :held"
            put: dict[str, Any] = {
                "TableName": self._table,
                "Item": to_item({"pk": key, "item_type": "pending_lock", "invitation_id": invitation.invitation_id}),
                "ConditionExpression": condition,
            }
            if holder is not None:
                put["ExpressionAttributeValues"] = {":held": to_attr(holder)}
            return {"Put": put}  # type: ignore[return-value]
        return None

    def _holders(self, keys: list[str]) -> dict[str, str]:
        """Which invitation holds each claim key (absent keys are free)."""
        response = self._ddb.batch_get_item(
            RequestItems={self._table: {"Keys": [{"pk": {"S": key}} for key in keys], "ConsistentRead": True}}
        )
        items = [from_item(raw) for raw in response.get("Responses", {}).get(self._table, [])]
        return {item["pk"]: item["invitation_id"] for item in items}

    def _live_pending(self, invitation_ids: set[str], app_code: str, now: int) -> set[str]:
        if not invitation_ids:
            return set()
        response = self._ddb.batch_get_item(
            RequestItems={
                self._table: {
                    "Keys": [{"pk": {"S": invitation_key(app_code, i)}} for i in sorted(invitation_ids)],
                    "ConsistentRead": True,
                }
            }
        )
        held = [invitation_from_item(from_item(raw)) for raw in response.get("Responses", {}).get(self._table, [])]
        return {i.invitation_id for i in held if i.status is InvitationStatus.PENDING and i.expire_at_ms > now}

    def get(self, app_code: str, invitation_id: str) -> Invitation | None:
        item = self._get_pk(invitation_key(app_code, invitation_id))
        return invitation_from_item(item) if item and item.get("item_type") == ITEM_TYPE else None

    def transition(self, current: Invitation, new_status: InvitationStatus, now: int, reason: str = "") -> Invitation:
        decided = new_status in (InvitationStatus.ACCEPTED, InvitationStatus.REJECTED)
        update: TransactWriteItemTypeDef = {
            "Update": {
                "TableName": self._table,
                "Key": {"pk": {"S": invitation_key(current.app_code, current.invitation_id)}},
                "UpdateExpression": "SET #s = :new, updated_at_ms = :now, version = :next"
                + (", decided_at_ms = :now" if decided else "")
                + (", reject_reason = :reason" if reason else ""),
                "ConditionExpression": "#s = :pending AND version = :version",
                "ExpressionAttributeNames": {"#s": "status"},
                "ExpressionAttributeValues": {
                    ":new": {"S": str(new_status)},
                    ":now": to_attr(now),
                    ":next": to_attr(current.version + 1),
                    ":pending": {"S": str(InvitationStatus.PENDING)},
                    ":version": to_attr(current.version),
                    **({":reason": to_attr(reason)} if reason else {}),
                },
            }
        }
        items = [update]
        if new_status is InvitationStatus.ACCEPTED:
            items.append(self._grant(current, now))
        try:
            self._transact(items)
        except ClientError as exc:
            if cancelled_on(exc, 0):
                raise StaleInvitation(current.invitation_id) from exc
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

    def _grant(self, invitation: Invitation, now: int) -> TransactWriteItemTypeDef:
        return {
            "Update": {
                "TableName": self._table,
                "Key": {
                    "pk": {
                        "S": grant_key(invitation.app_code, invitation.target_user_id, str(invitation.invitation_type))
                    }
                },
                "UpdateExpression": "SET item_type = :t, app_code = :a, user_id = :u, #r = :r, "
                "granted_at_ms = if_not_exists(granted_at_ms, :now), granted_by = if_not_exists(granted_by, :inv)",
                "ExpressionAttributeNames": {"#r": "role"},
                "ExpressionAttributeValues": {
                    ":t": {"S": "role_grant"},
                    ":a": {"S": invitation.app_code},
                    ":u": {"S": invitation.target_user_id},
                    ":r": {"S": str(invitation.invitation_type)},
                    ":now": to_attr(now),
                    ":inv": {"S": invitation.invitation_id},
                },
            }
        }

    def _release_lock(self, invitation: Invitation) -> None:
        """Best effort: a lock left behind names a decided invitation and is taken over on the next create."""
        try:
            self._ddb.delete_item(
                TableName=self._table,
                Key={"pk": {"S": _lock_key(invitation)}},
                ConditionExpression="invitation_id = :id",
                ExpressionAttributeValues={":id": {"S": invitation.invitation_id}},
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
