"""A partner's status webhook (contract §3): the endpoint Herald posts to when one of the service's events reaches a
status it asked for, signed as Standard Webhooks (as owner callbacks are), and the notice each post carries.

One webhook per service and tenant: an event's notice goes to the webhook of the tenant it was accepted for. A
notice is decided once, from the stored change that made it (the table's stream), and carries the event as the
partner reads it at that moment, so a retry posts the same body under the same `webhook-id`."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from herald.events.jobs import Job, JobStatus
from herald.events.status import event_fate
from herald.webhook_signing import live_secrets

# The statuses a webhook may ask for (every status an event stops or settles in), and those it gets by default.
WEBHOOK_STATUSES = frozenset(
    {
        JobStatus.SUCCEEDED,
        JobStatus.SUPERSEDED,
        JobStatus.REJECTED,
        JobStatus.SKIPPED,
        JobStatus.FAILED,
        JobStatus.UNKNOWN,
    }
)
DEFAULT_STATUSES = frozenset({JobStatus.FAILED, JobStatus.UNKNOWN, JobStatus.REJECTED})
NOTICE_VERSION = 1


@dataclass(frozen=True)
class StatusWebhook:
    service_id: str
    tenant: str  # the tenant whose events it is told of ("": events accepted for the stack's apps)
    url: str
    statuses: frozenset[JobStatus]
    secret: str
    created_at_ms: int
    updated_at_ms: int
    previous_secret: str = ""
    previous_secret_until_ms: int = 0

    def secrets_at(self, now_ms: int) -> tuple[str, ...]:
        return live_secrets(self.secret, self.previous_secret, self.previous_secret_until_ms, now_ms)

    def view(self) -> dict[str, Any]:
        """The webhook as its partner and operators see it: never a secret."""
        return {
            "service_id": self.service_id,
            "tenant": self.tenant,
            "url": self.url,
            "statuses": sorted(str(status) for status in self.statuses),
            "created_at_ms": self.created_at_ms,
            "updated_at_ms": self.updated_at_ms,
            "previous_secret_until_ms": self.previous_secret_until_ms or None,
        }

    def __repr__(self) -> str:  # the secrets never reach a log line
        return f"StatusWebhook({self.service_id}/{self.tenant or '-'} -> {self.url})"


@dataclass(frozen=True)
class StatusNotice:
    """One post to make: the event `data` reached `status` (the service's, accepted for `tenant`)."""

    service_id: str
    tenant: str
    status: JobStatus
    webhook_id: str
    at_ms: int
    data: dict[str, Any]

    def body(self) -> bytes:
        stamp = datetime.fromtimestamp(self.at_ms / 1000, UTC).isoformat(timespec="milliseconds")
        document = {"type": f"event.{self.status}", "timestamp": stamp.replace("+00:00", "Z"), "data": self.data}
        return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()

    def to_message(self) -> dict[str, Any]:
        return {
            "v": NOTICE_VERSION,
            "service_id": self.service_id,
            "tenant": self.tenant,
            "status": str(self.status),
            "webhook_id": self.webhook_id,
            "at_ms": self.at_ms,
            "data": self.data,
        }

    @classmethod
    def from_message(cls, message: dict[str, Any]) -> StatusNotice:
        """A notice as queued; ValueError for one this worker cannot read."""
        if message.get("v") != NOTICE_VERSION:
            raise ValueError(f"a status notice of version {message.get('v')!r}: this worker reads {NOTICE_VERSION}")
        try:
            return cls(
                service_id=str(message["service_id"]),
                tenant=str(message["tenant"]),
                status=JobStatus(message["status"]),
                webhook_id=str(message["webhook_id"]),
                at_ms=int(message["at_ms"]),
                data=dict(message["data"]),
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"a status notice lacks {exc}") from exc


def notice_for(before: Job | None, after: Job | None, at_ms: int) -> StatusNotice | None:
    """The notice one stored change of a job calls for: it reached a status a webhook may ask for, at the time it
    did (`at_ms` when the job does not say: a change seen now). An unknown job
    taken back to unknown by Herald's own tries at settling it is told of once, when it first became unknown."""
    if after is None or after.status not in WEBHOOK_STATUSES:
        return None
    if before is not None and before.status is after.status and before.generation == after.generation:
        return None
    if after.status is JobStatus.UNKNOWN and after.settle_tries:
        return None
    identity = f"{after.service_id}\n{after.job_id}\n{after.status}\n{after.generation}"
    webhook_id = "evt_" + hashlib.sha256(identity.encode()).hexdigest()[:40]
    reached_at = after.finished_at_ms or after.blocked_at_ms or at_ms
    return StatusNotice(after.service_id, after.tenant or "", after.status, webhook_id, reached_at, event_fate(after))
