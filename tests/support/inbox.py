"""Inbox test data that the API cannot make: notifications created in the past."""

from __future__ import annotations

from typing import Any

from herald.clock import now_ms
from herald.inbox.dynamo import DynamoInboxStore
from herald.inbox.models import RETENTION_MS, Kind, Notification, dedup_key
from herald.inbox.service import new_notification_id
from tests.support.local_cloud import LocalCloudProcess


def insert_past_retention(store: DynamoInboxStore, user_id: str, *, seconds_past: int = 60) -> Notification:
    """An unread notification created just over 90 days ago, stored as the write path stores one."""
    created = now_ms() - RETENTION_MS - seconds_past * 1000
    notification = Notification(
        app_code="lalu",
        user_id=user_id,
        notification_id=new_notification_id(created),
        kind=Kind.APPROVAL_PENDING,
        title="ancient",
        content="",
        session_id="s-old",
        dedup_key=dedup_key("engine", user_id, Kind.APPROVAL_PENDING, "s-old", "t"),
        producer="engine",
        created_at_ms=created,
    )
    store.insert(notification)
    return notification


def connections_of(cloud: LocalCloudProcess, user_id: str) -> list[dict[str, Any]]:
    """A user's WebSocket connections as the push fan-out finds them (the ConnectionsTable index by user)."""
    found: list[dict[str, Any]] = cloud.client("dynamodb").query(
        TableName=cloud.resource("ConnectionsTable"),
        IndexName="by_user",
        KeyConditionExpression="user_key = :user",
        ExpressionAttributeValues={":user": {"S": f"lalu#{user_id}"}},
    )["Items"]
    return found
