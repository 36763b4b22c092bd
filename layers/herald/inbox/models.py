from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any
from urllib.parse import quote

RETENTION_MS = 90 * 86_400_000


class Kind(StrEnum):
    TASK_COMPLETED = "TASK_COMPLETED"
    TASK_FAILED = "TASK_FAILED"
    QUESTION_PENDING = "QUESTION_PENDING"
    APPROVAL_PENDING = "APPROVAL_PENDING"
    SUBAGENT_DONE = "SUBAGENT_DONE"


TASK_KINDS = frozenset({Kind.TASK_COMPLETED, Kind.TASK_FAILED})

# The preference switch that governs each kind (task_completed covers both task outcomes).
PREFERENCE_OF = {
    Kind.TASK_COMPLETED: "task_completed",
    Kind.TASK_FAILED: "task_completed",
    Kind.QUESTION_PENDING: "question_pending",
    Kind.APPROVAL_PENDING: "approval_pending",
    Kind.SUBAGENT_DONE: "subagent_done",
}
DEFAULT_PREFERENCES = {
    "task_completed": True,
    "question_pending": True,
    "approval_pending": True,
    "subagent_done": False,
    # The desktop client's master switch for system notifications (the inbox design's P2). Herald records
    # and counts notifications whatever it says; clients read it here and decide whether to raise them.
    "system_notify": True,
}


def dedup_key(producer: str, user_id: str, kind: Kind, session_id: str, tail: str) -> str:
    """The one builder of the dedup key: every writer and `resolve` call this, never their own string.

    The producing service is part of it, so one service never takes, answers or resolves another's notification;
    each part is percent-encoded (`:` is `%3A`), so no two distinct tuples make one key."""
    parts = (producer, user_id, str(kind), session_id, tail)
    return "by:" + ":".join(quote(part, safe="") for part in parts)


def legacy_dedup_key(user_id: str, kind: Kind, session_id: str, tail: str) -> str:
    """The key of a notification stored before producers were recorded (no producer; its parts not encoded).
    Such a notification is still found by it until its retention ends; nothing is written under it anymore."""
    return f"{user_id}:{kind}:{session_id}:{tail}"


@dataclass(frozen=True)
class Notification:
    app_code: str
    user_id: str
    notification_id: str
    kind: Kind
    title: str
    content: str
    session_id: str
    dedup_key: str
    created_at_ms: int
    payload: dict[str, Any] = field(default_factory=dict)
    is_read: bool = False
    read_at_ms: int = 0
    producer: str = ""  # the service that created it ("" when stored before producers were recorded)

    @property
    def expire_at_ms(self) -> int:
        return self.created_at_ms + RETENTION_MS


@dataclass(frozen=True)
class Recorded:
    notification_id: str
    created: bool
    skipped: str | None = None


def view(notification: Notification) -> dict[str, Any]:
    """The notification view of contract §2."""
    return {
        "notification_id": notification.notification_id,
        "kind": str(notification.kind),
        "title": notification.title,
        "content": notification.content,
        "session_id": notification.session_id,
        "payload": notification.payload,
        "is_read": notification.is_read,
        "read_at_ms": notification.read_at_ms,
        "created_at_ms": notification.created_at_ms,
    }
