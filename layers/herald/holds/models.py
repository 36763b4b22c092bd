"""A held delivery: the queue message a worker took off its queue because its scope is paused, kept whole so a
resume puts it back as it was (in its message group, in the order it was held)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class HeldQueue(StrEnum):
    """Which queue a held message goes back to."""

    IM_PUSH = "im_push"
    EVENTS = "events"


@dataclass(frozen=True)
class Held:
    """`scope` is what is paused (`tenant#APP_CODE`, or an operator's `pause#...`); `key` orders and names the
    message within it: a lane is held once however many of its messages come (`lane#LANE`), a push once each
    (`push#SENT_MS#MESSAGE_ID`, in the order its queue received them)."""

    scope: str
    key: str
    queue: HeldQueue
    body: str
    group_id: str
    held_at_ms: int

    @staticmethod
    def tenant_scope(app_code: str) -> str:
        return f"tenant#{app_code}"

    @classmethod
    def push(cls, scope: str, body: str, group_id: str, message_id: str, sent_ms: int, now: int) -> Held:
        key = f"push#{sent_ms:013d}#{message_id}"
        return cls(scope, key, HeldQueue.IM_PUSH, body, group_id, now)

    @classmethod
    def lane(cls, scope: str, lane: str, body: str, now: int) -> Held:
        return cls(scope, f"lane#{lane}", HeldQueue.EVENTS, body, lane, now)

    @property
    def dedup_id(self) -> str:
        """A new deduplication id for its return: the message's own may still be inside SQS's five minutes."""
        return f"resumed-{self.held_at_ms}-{self.key}"


PAUSES_SCOPE = "pauses"  # where the operators' pauses are kept (one partition: every worker reads them all at once)


@dataclass(frozen=True)
class Pause:
    """An operator's pause: of external-event delivery, a service's lanes (`service#S`), one lane of a service
    that posts `order: target` (`lane#LANE`) or a tenant's every lane (`events-tenant#APP_CODE`); of a tenant's IM
    pushes (`tenant#APP_CODE`); with who paused it, when
    and why. While it lasts, intake goes on and a worker meeting what it pauses holds it under the pause's own
    scope, released by its resume."""

    key: str
    by: str
    note: str
    since_ms: int

    @staticmethod
    def key_of(service_id: str, lane: str = "") -> str:
        return f"lane#{lane}" if lane else f"service#{service_id}"

    @staticmethod
    def key_of_tenant(app_code: str) -> str:
        """A tenant's IM pushes (`confirms pause --tenant`)."""
        return f"tenant#{app_code}"

    @staticmethod
    def key_of_events_tenant(app_code: str) -> str:
        """A tenant's external events, every service's (`events pause --tenant`)."""
        return f"events-tenant#{app_code}"

    @staticmethod
    def scope_of(key: str) -> str:
        """Where the pause `key` keeps what it holds."""
        return f"pause#{key}"

    @property
    def scope(self) -> str:
        return self.scope_of(self.key)


def pause_keys_of(lane: str, service_id: str) -> tuple[str, str]:
    """The pauses that hold `lane` of `service_id`: its own, and its service's."""
    return Pause.key_of(service_id, lane), Pause.key_of(service_id)
