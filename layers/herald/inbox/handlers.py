"""The inbox table's stream: every change of a user's counter is pushed to all of that user's
connections, in version order (a user's counter is one key, so its records arrive in order). What is
pushed is the committed counter read back, never the record's image: a redelivered record (Lambda delivers
stream records at least once) can repeat a version but never invent one. An unread
notification removed by TTL is taken off the count (once: a tombstone guards the decrement)."""

from __future__ import annotations

from typing import Any

from herald.inbox.dynamo import COUNTER, is_notification, notification_from_item
from herald.inbox.wiring import inbox
from herald.realtime.wiring import realtime


def on_inbox_change(old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
    if new is not None and new.get("sk") == COUNTER:
        version = new.get("version")
        if version is None or (old is not None and old.get("version") == version):
            return  # not a count change: nothing new to push
        _, app_code, user_id = str(new["pk"]).split("#", 2)
        unread, current = inbox().versioned_count(app_code, user_id)
        realtime().push_to_user(app_code, user_id, {"type": "inbox_updated", "unreadCount": unread, "version": current})
    elif new is None and old is not None and is_notification(old):
        inbox().forget_removed(notification_from_item(old))
