"""How Herald runs a lane's jobs over time: leases, retries and their backoff, Feishu's one-hour uuid window for
settling a send again, retention; and which superseded revisions at a lane's head are passed over at once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from herald import budgets
from herald.clock import utc_text
from herald.events.drained import NotYet
from herald.events.jobs import Job, JobStatus

MAX_BACKOFF_MS = 300_000
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
    # A lane over its service's part of a shared app comes back no sooner than this, plus up to a second at random:
    # its service's other lanes ask too, one of them takes the part's next moment, and messages coming back every
    # second would keep other services' work behind them in the queue.
    over_part_retry_ms: int = 3_000

    def over_part_retry(self, wait_ms: int, spread_ms: int) -> int:
        return max(wait_ms, self.over_part_retry_ms) + spread_ms

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
    """NotYet while the job is not for this worker yet: its retry's or settling's time, another's lease."""
    waits = {
        JobStatus.UNKNOWN: (job.next_settle_at_ms, "is being settled; next try later"),
        JobStatus.RUNNING: (job.lock_until_ms, "is held by another worker"),
        JobStatus.QUEUED: (job.next_attempt_at_ms, "waits for its retry"),
    }
    until, why = waits.get(job.status, (0, ""))
    if until > now:
        raise NotYet(f"job {job.job_id} {why}", until - now, job.tenant)
