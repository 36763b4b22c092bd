"""Inbox rules, independent of DynamoDB and HTTP.

First write wins: a notification with a known dedup key is never rewritten (its `created_at_ms` and read
state stay). The unread count is a counter kept in the same transaction as every change of an item's read
state, so it is exact after every write and costs one read whatever the user's history; items past their
90-day retention are hidden from lists and count before DynamoDB's TTL removes them.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from herald.auth.models import Principal
from herald.clock import Clock, now_ms
from herald.errors import InvalidArgument, NotFound
from herald.inbox.models import (
    DEFAULT_PREFERENCES,
    PREFERENCE_OF,
    RETENTION_MS,
    TASK_KINDS,
    Kind,
    Notification,
    Recorded,
    dedup_key,
    legacy_dedup_key,
)

NOTIFICATION_ID = re.compile(r"^ntf_[0-9]{13}[0-9a-f]{8}$")
FIELD = re.compile(r"^[A-Za-z0-9_.:@-]{1,128}$")  # an agent session's id may hold '@'
USER_ID = re.compile(r"^[0-9]{1,20}$")
SKIPPED_SESSION_TYPES = frozenset({"SUBAGENT", "SIDE_TASK"})
BOT_CHANNELS = frozenset({"weixin", "feishu"})
SUBAGENT_STATUSES = frozenset({"COMPLETED", "FAILED", "CANCELLED"})
MAX_PAGE = 100


class InboxStore(Protocol):
    def insert(self, notification: Notification) -> str | None:
        """Insert with its dedup key; the existing notification's id if the key was taken (nothing written)."""
        ...

    def by_dedup(self, app_code: str, key: str) -> Notification | None: ...

    def get(self, app_code: str, user_id: str, notification_id: str) -> Notification | None: ...

    def mark_read(self, notification: Notification, now: int) -> bool: ...

    def mark_all_read(self, app_code: str, user_id: str, up_to_ms: int, now: int) -> int: ...

    def delete(self, notification: Notification) -> bool: ...

    def counter(self, app_code: str, user_id: str) -> tuple[int, int]:
        """The committed (unread, version) of the user's count."""
        ...

    def unread_older_than(self, app_code: str, user_id: str, created_before_ms: int) -> int: ...

    def page(
        self, app_code: str, user_id: str, unread_only: bool, since_ms: int, limit: int, page_token: str
    ) -> tuple[list[Notification], str]:
        """Newest first, from the page `page_token` names (opaque; "" for the first); with the next page's
        token ("" after the last)."""
        ...

    def preferences(self, app_code: str, user_id: str) -> dict[str, bool]: ...

    def set_preferences(self, app_code: str, user_id: str, changes: Mapping[str, bool]) -> None: ...

    def forget_removed(self, notification: Notification) -> None:
        """Account for an unread notification the table removed by itself (TTL); idempotent."""
        ...


@dataclass(frozen=True)
class Incoming:
    """What a producer sends (contract §2), plus the fields the exclusions are decided on, and who sent it (the
    service its key belongs to, decided once when the request is accepted)."""

    app_code: str
    producer: str
    user_id: str | None
    kind: Kind
    session_id: str
    tail: str
    title: str
    content: str
    payload: dict[str, Any]
    session_type: str = "NORMAL"
    channel: str = ""
    phase: str = ""


def new_notification_id(created_at_ms: int) -> str:
    """Sorts by creation time (the table orders a user's items by it)."""
    return f"ntf_{created_at_ms:013d}{secrets.token_hex(4)}"


class Inbox:
    def __init__(self, store: InboxStore, clock: Clock = now_ms) -> None:
        self._store = store
        self._clock = clock

    # ------------------------------------------------------------------ producers
    def record(self, incoming: Incoming) -> Recorded:
        skipped = self._exclusion(incoming)
        if skipped:
            return Recorded(notification_id="", created=False, skipped=skipped)
        user_id = str(incoming.user_id)
        prefs = self._store.preferences(incoming.app_code, user_id)
        if not prefs[PREFERENCE_OF[incoming.kind]]:
            return Recorded(notification_id="", created=False, skipped="preference")
        earlier = self._store.by_dedup(
            incoming.app_code, legacy_dedup_key(user_id, incoming.kind, incoming.session_id, incoming.tail)
        )
        if earlier is not None:
            return Recorded(notification_id=earlier.notification_id, created=False)
        now = self._clock()
        notification = Notification(
            app_code=incoming.app_code,
            user_id=user_id,
            notification_id=new_notification_id(now),
            kind=incoming.kind,
            title=incoming.title,
            content=incoming.content,
            session_id=incoming.session_id,
            dedup_key=dedup_key(incoming.producer, user_id, incoming.kind, incoming.session_id, incoming.tail),
            created_at_ms=now,
            payload=incoming.payload,
            producer=incoming.producer,
        )
        existing = self._store.insert(notification)
        if existing is not None:
            return Recorded(notification_id=existing, created=False)
        return Recorded(notification_id=notification.notification_id, created=True)

    @staticmethod
    def _exclusion(incoming: Incoming) -> str | None:
        """The inbox's exclusions, decided on what the producer sent (why a notification is not recorded)."""
        if not incoming.user_id:
            return "unknown_user"
        if not USER_ID.fullmatch(incoming.user_id):
            raise InvalidArgument("user_id must be a numeric user id")
        for name in ("session_id", "tail"):
            if not FIELD.fullmatch(getattr(incoming, name)):
                raise InvalidArgument(f"{name} must be 1-128 characters of A-Z a-z 0-9 _ . : @ -")
        if incoming.channel.lower() in BOT_CHANNELS:
            return "bot_channel"
        if incoming.kind in TASK_KINDS:
            if incoming.session_type.upper() in SKIPPED_SESSION_TYPES:
                return "session_type"
            phase = incoming.phase.upper()
            if phase == "CANCELLED":
                return "cancelled"
            expected = "COMPLETED" if incoming.kind is Kind.TASK_COMPLETED else "FAILED"
            if phase and phase != expected:
                raise InvalidArgument(f"phase {phase} does not match kind {incoming.kind}")
        if incoming.kind is Kind.SUBAGENT_DONE and incoming.payload.get("status") not in SUBAGENT_STATUSES:
            raise InvalidArgument("SUBAGENT_DONE needs payload.status COMPLETED, FAILED or CANCELLED")
        return None

    def resolve(self, app_code: str, producer: str, user_id: str, kind: Kind, session_id: str, tail: str) -> bool:
        """The question was answered or the approval decided: the producer's item counts as read (False: it was
        read already). Another service's notification is NotFound, exactly as one that does not exist."""
        notification = self._store.by_dedup(app_code, dedup_key(producer, user_id, kind, session_id, tail))
        if notification is None:
            notification = self._store.by_dedup(app_code, legacy_dedup_key(user_id, kind, session_id, tail))
        if notification is None or notification.created_at_ms < self._since():
            raise NotFound("no such notification")
        if notification.is_read:
            return False
        return self._store.mark_read(notification, self._clock())

    # ------------------------------------------------------------------ the user
    def unread_count(self, app_code: str, user_id: str) -> int:
        return self.versioned_count(app_code, user_id)[0]

    def versioned_count(self, app_code: str, user_id: str) -> tuple[int, int]:
        """The visible unread count and its version: the counter, less the unread items past retention
        that TTL has not removed yet."""
        counted, version = self._store.counter(app_code, user_id)
        past_retention = self._store.unread_older_than(app_code, user_id, self._since())
        return max(0, counted - past_retention), version

    def page(
        self, principal: Principal, unread_only: bool, page_size: int, page_token: str
    ) -> tuple[list[Notification], str]:
        if not 1 <= page_size <= MAX_PAGE:
            raise InvalidArgument(f"page_size must be between 1 and {MAX_PAGE}")
        return self._store.page(
            principal.app_code, principal.user_id, unread_only, self._since(), page_size, page_token
        )

    def read(self, principal: Principal, notification_id: str) -> int:
        notification = self._owned(principal, notification_id)
        if not notification.is_read:
            self._store.mark_read(notification, self._clock())
        return self.unread_count(principal.app_code, principal.user_id)

    def read_all(self, principal: Principal) -> int:
        """Everything unread when the call started is read; items arriving meanwhile stay unread."""
        now = self._clock()
        self._store.mark_all_read(principal.app_code, principal.user_id, up_to_ms=now, now=now)
        return self.unread_count(principal.app_code, principal.user_id)

    def delete(self, principal: Principal, notification_id: str) -> int:
        self._store.delete(self._owned(principal, notification_id))
        return self.unread_count(principal.app_code, principal.user_id)

    def preferences(self, principal: Principal) -> dict[str, bool]:
        return self._store.preferences(principal.app_code, principal.user_id)

    def set_preferences(self, principal: Principal, changes: Mapping[str, bool]) -> dict[str, bool]:
        unknown = set(changes) - set(DEFAULT_PREFERENCES)
        if unknown:
            raise InvalidArgument(f"unknown preferences: {', '.join(sorted(unknown))}")
        self._store.set_preferences(principal.app_code, principal.user_id, changes)
        return self._store.preferences(principal.app_code, principal.user_id)

    def forget_removed(self, notification: Notification) -> None:
        """The table removed a notification by itself (its TTL): an unread one leaves the count."""
        self._store.forget_removed(notification)

    def _owned(self, principal: Principal, notification_id: str) -> Notification:
        """Another user's (or tenant's) notification does not exist for the caller."""
        if not NOTIFICATION_ID.fullmatch(notification_id):
            raise InvalidArgument("notification id is malformed")
        notification = self._store.get(principal.app_code, principal.user_id, notification_id)
        if notification is None or notification.created_at_ms < self._since():
            raise NotFound("no such notification")
        return notification

    def _since(self) -> int:
        return self._clock() - RETENTION_MS
