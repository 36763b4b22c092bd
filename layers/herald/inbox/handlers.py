"""The inbox table's stream: every change of a user's counter is pushed to all of that user's
connections, in version order (a user's counter is one key, so its records arrive in order). What is
pushed is the committed counter read back, never the record's image: a redelivered record (Lambda delivers
stream records at least once) can repeat a version but never invent one. An unread
notification removed by TTL is taken off the count (once: a tombstone guards the decrement)."""

from __future__ import annotations

from herald.dynamo import Image
from herald.inbox.dynamo import counter_version, removed_notification
from herald.inbox.wiring import inbox
from herald.realtime.wiring import realtime


def on_inbox_change(old: Image | None, new: Image | None) -> None:
    if new is not None:
        version = counter_version(new)
        if version is None or (old is not None and counter_version(old) == version):
            return  # not a count change: nothing new to push
        _, app_code, user_id = new["pk"]["S"].split("#", 2)
        unread, current = inbox().versioned_count(app_code, user_id)
        realtime().push_to_user(app_code, user_id, {"type": "inbox_updated", "unreadCount": unread, "version": current})
        return
    removed = removed_notification(old) if old is not None else None
    if removed is not None:
        inbox().forget_removed(removed)
