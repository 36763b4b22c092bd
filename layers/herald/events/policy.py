"""How Herald runs a lane's jobs over time: leases, retries and their backoff, Feishu's one-hour uuid window for
settling a send again, retention; and which superseded revisions at a lane's head are passed over at once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from herald import budgets
from herald.clock import utc_text
from herald.events.drained import PACE_SLEEP_MOST_MS, NotYet, PaceWait
from herald.events.jobs import Job, JobStatus

MAX_BACKOFF_MS = 300_000
# A lane whose head job another worker holds is looked at again this soon, not at the holder's lease end (60 s):
# its message hidden that long held back everything behind it in the lane's FIFO group, the holder's own
# continuation too. A holder that died is still waited for until its lease ends.
HELD_LOOK_AGAIN_MS = 2_000
# Feishu im/v1/messages create: "requests holding the same uuid succeed in sending at most one message
# within 1 hour" (持有相同uuid的请求1小时内至多成功发送一条消息).
FEISHU_UUID_WINDOW_MS = 3_600_000
UUID_WINDOW_MARGIN_MS = 300_000  # Herald's clock and Feishu's may disagree by this much


SUPERSEDED_AT_ONCE = 24  # jobs passed over in one transaction: two items each and the cursor, under its 100


def superseded_run(head: Job, behind: Sequence[Job], now: int, expires_at_ms: int) -> list[tuple[Job, Job]]:
    """The lane's head and the jobs right behind it (consecutive, at most SUPERSEDED_AT_ONCE) that a newer
    revision of their card, waiting behind each, replaces: each with its superseded self. It stops at the first
    job to be sent, so passing over the run keeps the lane's order."""
    queue = [head, *behind]
    run: list[tuple[Job, Job]] = []
    for index, job in enumerate(queue[:SUPERSEDED_AT_ONCE]):
        if index and job.seq != queue[index - 1].seq + 1:
            break
        newer = job.newest_revision_in(queue[index + 1 :])
        if newer is None:
            break
        run.append((job, job.superseded(newer, now, expires_at_ms)))
    return run


CROWDED_GROWTH = 1.5


@dataclass(frozen=True)
class DispatchPolicy:
    lease_ms: int = budgets.EVENTS_LEASE_MS
    max_attempts: int = budgets.EVENTS_MAX_ATTEMPTS
    retry_base_ms: int = 2_000
    reserve_ms: int = budgets.EVENTS_RESERVE_MS
    retention_ms: int = 7 * 86_400_000
    unknown_ttl_ms: int = 0  # 0: blocked jobs stay until an operator handles them
    settle_attempts: int = 6  # tries at settling an unknown job, before an operator decides
    send_dedup_window_ms: int = FEISHU_UUID_WINDOW_MS - UUID_WINDOW_MARGIN_MS
    pace_sleep_most_ms: int = PACE_SLEEP_MOST_MS  # a worker sleeps for its call's moment at most this long
    # A lane over its service's part of a shared app stays away at least this long (its other lanes ask too, one of
    # them takes the part's next moment), half as long again each time, at most the most (or its wait, if longer).
    over_part_first_back_ms: int = 3_000
    crowded_retry_most_ms: int = 20_000

    def pace_budget(self, remaining_ms: int) -> int:
        """How long a worker may sleep for its call's moment, with `remaining_ms` of its invocation left."""
        return min(self.pace_sleep_most_ms, remaining_ms - self.reserve_ms)

    def crowded_out(self, job: Job, wait_ms: int, over_part_of: str = "") -> NotYet:
        """The job's lane goes back to its queue, crowded out: its call has no moment of its app for `wait_ms`, or
        its service is over its part of the shared app `over_part_of` for that long."""
        if over_part_of:
            reason = f"job {job.job_id} waits for its part of Feishu app {over_part_of}"
            return NotYet(reason, wait_ms, job.tenant, crowded=True, first_back_ms=self.over_part_first_back_ms)
        reason = f"job {job.job_id} waits {wait_ms} ms for Feishu's pace"
        return NotYet(reason, PaceWait(wait_ms).back_in_ms, job.tenant, crowded=True)  # back for its moment

    def crowded_retry(self, wait_ms: int, first_back_ms: int, receives: int, spread_ms: int) -> int:
        """When a lane over its part comes back, its message received `receives` times: half as late again each
        time, spread (`spread_ms`) so that a backlog's lanes do not come back together."""
        grown = first_back_ms * CROWDED_GROWTH ** max(0, receives - 1)
        return int(max(wait_ms, min(grown, self.crowded_retry_most_ms))) + spread_ms

    def backoff_ms(self, attempts: int) -> int:
        return int(min(self.retry_base_ms * 2 ** max(0, attempts - 1), MAX_BACKOFF_MS))

    def blocked_expiry(self, now: int) -> int | None:
        return now + self.unknown_ttl_ms if self.unknown_ttl_ms > 0 else None

    def resend_window_closed(self, job: Job, now: int) -> str:
        """Why a resend could no longer be deduplicated by Feishu before it ends ("" while it can)."""
        if not job.first_marked_at_ms:
            return "no record of when it was first sent: a resend could deliver a second card"
        closes = job.first_marked_at_ms + self.send_dedup_window_ms
        if now + self.reserve_ms <= closes:
            return ""
        return (
            f"first sent at {utc_text(job.first_marked_at_ms)}; Feishu's one-hour uuid window (less "
            f"{UUID_WINDOW_MARGIN_MS // 60_000} min for clocks) closes at {utc_text(closes)}: a resend could deliver a "
            "second card"
        )


def wait_until_due(job: Job, now: int) -> None:
    """NotYet while the job is not for this worker yet: its retry's or settling's time, another's lease (looked at
    again soon: see HELD_LOOK_AGAIN_MS)."""
    waits = {
        JobStatus.UNKNOWN: (job.next_settle_at_ms, "is being settled; next try later"),
        JobStatus.RUNNING: (min(job.lock_until_ms, now + HELD_LOOK_AGAIN_MS), "is held by another worker"),
        JobStatus.QUEUED: (job.next_attempt_at_ms, "waits for its retry"),
    }
    until, why = waits.get(job.status, (0, ""))
    if until > now:
        raise NotYet(f"job {job.job_id} {why}", until - now, job.tenant)
