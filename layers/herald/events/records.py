"""What an external-event job records of how it went: its outcome, each provider call it made, and each
resolution (an operator's, Herald's own settling of an unknown job, or a newer revision that replaced it), each
built in one place."""

from __future__ import annotations

from enum import StrEnum
from typing import TypedDict


class Outcome(StrEnum):
    """How a job ended, as recorded on it (and counted as the metric `ExternalEvent_<outcome>`)."""

    NONE = ""
    SENT = "sent"
    UPDATED = "updated"
    CONTINUED = "continued"  # sent as a new card continuing one Feishu no longer edits (`continued_from`)
    STALE_REVISION = "stale_revision"  # a newer revision already shows: nothing written
    SAME_REVISION = "same_revision"  # this very revision already shows: nothing written
    TARGET_NOT_ALLOWED = "target_not_allowed"
    SUPERSEDED = "superseded"
    RESOLVED_SENT = "resolved_sent"
    RESOLVED_REQUEUE = "resolved_requeue"
    RESOLVED_SKIP = "resolved_skip"

    @classmethod
    def resolved(cls, action: str) -> Outcome:
        return cls(f"resolved_{action}")


# Who moved a job on besides its attempts, when, and why: an operator's resolution, Herald's own settling of an
# unknown job, or a newer revision of its card that replaced it. Stored as a map on the job, keys as here.
Resolution = TypedDict(
    "Resolution",
    {
        "action": str,
        "by": str,
        "at_ms": int,
        "from": str,
        "note": str,
        "message_id": str,
        "revision": int,
        "job_id": str,
        "event_id": str,
    },
    total=False,
)


def resolution(
    action: str,
    by: str,
    at_ms: int,
    *,
    was: str | None = None,
    note: str | None = None,
    message_id: str = "",
    replaced_by: tuple[int, str, str] | None = None,
) -> Resolution:
    """The one builder of a resolution: only the fields it has are recorded (`was`: the job's status before it;
    `replaced_by`: the revision, job id and event id of the newer revision that superseded it)."""
    record = Resolution(action=action, by=by, at_ms=at_ms)
    if was is not None:
        record["from"] = str(was)
    if note is not None:
        record["note"] = note
    if message_id:
        record["message_id"] = message_id
    if replaced_by is not None:
        record["revision"], record["job_id"], record["event_id"] = replaced_by
    return record


class CallOutcome(StrEnum):
    """How one provider call of a job ended."""

    DONE = "done"
    REFUSED = "refused"  # Feishu answered that it did not act (its code says why)
    THROTTLED = "throttled"  # refused by a rate limit: not a failure, tried again later
    UNANSWERED = "unanswered"  # no answer that settles it: Feishu may have acted
    INTERRUPTED = "interrupted"  # the worker stopped while the call was in flight


# One call a job made to Feishu: when, through which app, a send or an update, how it ended, Feishu's code (0: none),
# and the message it went to. Stored as a map on the job, keys as here; `herald-ops events show`, the console and the
# status API show them as the job's timeline.
class ProviderCall(TypedDict):
    at_ms: int
    app_id: str
    operation: str
    outcome: str
    code: int
    message_id: str


def provider_call(
    at_ms: int, app_id: str, operation: str, outcome: CallOutcome, *, code: int | None = None, message_id: str = ""
) -> ProviderCall:
    return ProviderCall(
        at_ms=at_ms, app_id=app_id, operation=operation, outcome=str(outcome), code=code or 0, message_id=message_id
    )
