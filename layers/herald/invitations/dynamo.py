"""DynamoDB adapter for invitations. One table, three kinds of item (`item_type`):

* `invitation` — `pk = INV#<app>#<invitation_id>`, the fact; its stream is the owner's outbox;
* `pending_lock` — `pk = PENDING#<app>#<inviter>#<target>#<type>`, at most one pending invitation per
  inviter, target and type; replaced once the invitation it names is no longer pending;
* `role_grant` — `pk = ROLE#<app>#<user>#<role>`, written with `if_not_exists`, so a role is granted once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from herald.dynamo import cancelled_on, to_attr, to_item
from herald.dynamo_table import DynamoTable
from herald.invitations.models import Invitation, InvitationStatus, InvitationType
from herald.invitations.service import DuplicatePending, StaleInvitation

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef

ITEM_TYPE = "invitation"


def invitation_key(app_code: str, invitation_id: str) -> str:
    return f"INV#{app_code}#{invitation_id}"


def _lock_key(invitation: Invitation) -> str:
    parts = (invitation.app_code, invitation.inviter_user_id, invitation.target_user_id, invitation.invitation_type)
    return "PENDING#" + "#".join(str(part) for part in parts)


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
    def create(self, invitation: Invitation) -> None:
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
        lock_key = _lock_key(invitation)
        lock_condition = "attribute_not_exists(pk)"
        values: dict[str, Any] = {}
        for _ in range(3):
            lock: TransactWriteItemTypeDef = {
                "Put": {
                    "TableName": self._table,
                    "Item": to_item(
                        {
                            "pk": lock_key,
                            "item_type": "pending_lock",
                            "invitation_id": invitation.invitation_id,
                        }
                    ),
                    "ConditionExpression": lock_condition,
                    **({"ExpressionAttributeValues": values} if values else {}),  # type: ignore[typeddict-item]
                }
            }
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
                        lock,
                    ]
                )
                return
            except ClientError as exc:
                if not cancelled_on(exc, 1):
                    raise
            holder = self._get_pk(lock_key)
            holder_id = holder["invitation_id"] if holder else None
            if holder_id == invitation.invitation_id:
                return  # our own first attempt went through (a retried call)
            held = self.get(invitation.app_code, holder_id) if holder_id else None
            live = (
                held is not None
                and held.status is InvitationStatus.PENDING
                and held.expire_at_ms > invitation.created_at_ms
            )
            if live:
                raise DuplicatePending(holder_id)
            # The lock names an invitation that is decided or past its expiry: take it over.
            lock_condition = "attribute_not_exists(pk) OR invitation_id = :held"
            values = {":held": to_attr(holder_id)}
        raise DuplicatePending(invitation.invitation_id)

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
