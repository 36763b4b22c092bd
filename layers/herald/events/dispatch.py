"""External events, delivery: strict order per lane, Feishu cards by revision (contract §3).

A lane is a service's whole order (the default), or one target of a service whose key orders by target
(`herald.events.models.Lane`). Order lives in DynamoDB, not in the queue. A queue message only says "this
lane has work": the dispatcher always takes the lane's lowest unfinished job (the head), so a duplicated,
late or redriven message can neither run a later job early nor run a finished one again.

A side effect is marked on the job before the first external write. Before the mark a failure is retried with
backoff (bounded, then the job fails; while its app is parked it waits, untried); after it, only the provider's
answer that it did not act sends the job back; anything else (no answer, a crash) leaves the job `unknown`, and
its lane waits. Herald settles an unknown job wherever Feishu's rules make a second try provably harmless (a send
again with its `uuid` inside Feishu's one-hour window, an update written again: docs/side-effects.md), a bounded
number of times; past the window, or on a refusal that proves nothing, the job waits for an operator."""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable

from herald import budgets
from herald.auth.models import DeliveryScope
from herald.circuits import waits_for_app
from herald.clock import Clock, now_ms
from herald.errors import DeliveryError
from herald.events.apps import FeishuApps, FeishuLink
from herald.events.card_calls import CardCalls
from herald.events.cards import CardDecision, CardWrite
from herald.events.drained import Drained, DrainResult, NotYet, PaceWait, Step, Written
from herald.events.jobs import Job, JobStatus, StaleJob
from herald.events.models import Lane
from herald.events.nudges import Nudge
from herald.events.policy import DispatchPolicy, superseded_run, wait_until_due
from herald.events.ports import Budget, DispatchStore, Shares, TargetPolicy
from herald.events.records import Outcome, ProviderCall, Resolution, resolution
from herald.limits.shares import EqualShares, Share

OPERATOR_DECIDES = "an operator decides"
COALESCE_WINDOW = 50  # how far behind a card's revision Herald looks for a newer one of the same card


class EventDispatcher:
    """Runs one lane's jobs, head first, until it is caught up, blocked, or must wait.

    A drain out of time after finishing jobs publishes a continuation nudge (`nudge`) and ends well, rather
    than sending its message back: a long backlog would spend its receive count while making progress."""

    def __init__(
        self,
        store: DispatchStore,
        targets: TargetPolicy,
        apps: FeishuApps,
        policy: DispatchPolicy,
        nudge: Callable[[Nudge], None],
        clock: Clock = now_ms,
        on_outcome: Callable[[Job, str], None] | None = None,
        shares: Shares | None = None,
    ) -> None:
        self._store = store
        self._shares = shares or EqualShares()
        self._targets = targets
        self._apps = apps
        self._calls = threading.local()  # the provider calls of the attempt in flight on this thread
        self._cards = CardCalls(store, apps, clock, lambda call: self._pending_calls().append(call))
        self._policy = policy
        self._nudge = nudge
        self._clock = clock
        self._on_outcome = on_outcome or (lambda job, outcome: None)

    def drain(self, lane: str, remaining_ms: Callable[[], int]) -> Drained:
        # The service's keys read once a drain: where it may send (a narrowing applies from the next), its weight.
        scope = self._targets.delivery_scope(Lane.parse(lane).service_id)
        try:
            return Drained(self._run(lane, remaining_ms, scope))
        except NotYet as out:
            return Drained(DrainResult.WAITING, out.delay_ms, str(out), out.tenant, out.crowded, out.first_back_ms)
        except budgets.OutOfTime as out:
            return Drained(DrainResult.OUT_OF_TIME, reason=str(out))

    def _run(self, lane: str, remaining_ms: Callable[[], int], scope: DeliveryScope) -> DrainResult:
        """The lane's jobs, head first, until it is caught up, blocked or paused (NotYet: it must wait)."""
        head = self._store.head(lane)
        cursor = started_at = head.done_seq
        while (job := self._next_unfinished(lane, cursor)) is not None:
            cursor = job.seq - 1
            if job.awaiting_operator:
                return DrainResult.BLOCKED
            now = self._clock()
            wait_until_due(job, now)
            if job.status is JobStatus.RUNNING and job.marked_at_ms:
                self._left_behind(
                    job, "interrupted after its side effect was marked (its worker died or ran out of time)"
                )
                continue  # read it again: to be settled now, or left to an operator
            if job.seq >= head.next_seq and job.may_be_superseded:
                head = self._store.head(lane)  # jobs arrived since the drain began: a newer revision may be one
            if head.next_seq > job.seq and (passed := self._superseded(job)):
                cursor = passed
                continue
            left = remaining_ms()
            if left < self._policy.reserve_ms:
                return self._pause(lane, cursor, started_at, left)
            step = self._attempt(job, scope, remaining_ms)
            if isinstance(step, PaceWait):
                if cursor == started_at:  # nothing done yet: the message comes back for the moment
                    raise self._policy.crowded_out(job, step.ms)
                self._nudge(Nudge(lane, cursor, f"paced-{now}"))  # a fresh message waits on, in order
                return DrainResult.PAUSED
            if step is Step.BLOCKS:
                return DrainResult.BLOCKED
            if step is Step.FINISHED:
                cursor = job.seq
        return DrainResult.CAUGHT_UP

    def _attempt(self, job: Job, scope: DeliveryScope, remaining_ms: Callable[[], int]) -> Step | PaceWait:
        """Claim the head job and try it. A settling try takes its pace before its claim (which marks it); a
        delivery reserves its call's moment after its claim and is marked while it waits for it."""
        self._pending_calls().clear()  # an attempt records only its own calls
        settling = job.status is JobStatus.UNKNOWN
        tenant_app = self._apps.current(job.tenant, job.service_id)  # before the claim: a paused tenant waits
        if wait := tenant_app.circuit.wait_ms():  # before the claim: an attempt its app refuses writes nothing
            raise NotYet(f"job {job.job_id} waits for Feishu app {tenant_app.app_id} (its circuit)", wait, job.tenant)
        share = self._shares.of(job.tenant, job.service_id, scope.weight)  # once an attempt: its tenant's weight read
        look = tenant_app.pace.look(job.event.target, self._policy.pace_budget(remaining_ms()), share)
        if look.wait_ms:  # crowded out (its app's moments taken, or over its part): back before its claim
            raise self._policy.crowded_out(job, look.wait_ms, tenant_app.app_id if look.over_part else "")
        if (
            settling
            and job.event.target.key in scope.targets
            and (wait := self._paced(tenant_app, job, share, remaining_ms))
        ):
            return PaceWait(wait)
        claimed = self._claim(job, self._clock())
        if claimed is None:  # another worker (or an operator) moved it first
            return Step.AGAIN
        if settling:
            return self._settle(claimed, scope.targets, tenant_app)
        return self._deliver(claimed, scope.targets, share, remaining_ms, tenant_app)

    def _next_unfinished(self, lane: str, done: int) -> Job | None:
        """The lane's lowest unfinished job after `done` (None when caught up). The cursor moves past jobs
        an operator finished and past blocked jobs removed by their configured TTL."""
        while True:
            seq = done + 1
            job = self._store.job(lane, seq)
            if job is None:
                head = self._store.head(lane)
                if head.next_seq < seq:
                    return None
                # A job commits with the counter, so it may have arrived between the two reads: read it again.
                job = self._store.job(lane, seq)
                if job is None:
                    if head.done_seq < seq:
                        self._store.advance(lane, done, seq)
                    done = max(seq, head.done_seq)
                    continue
            if not job.status.completed:
                return job
            self._store.advance(lane, done, seq)
            done = seq

    def _superseded(self, job: Job) -> int:
        """A queued card revision with a newer one of its card waiting behind it is not sent (the newer is, in
        its turn): it and the run of such jobs right behind it are recorded superseded in one write. Returns the
        cursor's new place, or 0: the head is to be sent (or moved meanwhile)."""
        now = self._clock()
        waiting = self._store.waiting(job.lane.key, job.seq, COALESCE_WINDOW) if job.may_be_superseded else []
        try:
            if run := superseded_run(job, waiting, now, now + self._policy.retention_ms):
                self._store.supersede(run, now)
        except StaleJob:  # only a lane's head moves the jobs behind it: another worker passed over this one first
            return 0
        for passed, _ in run:
            self._on_outcome(passed, "superseded")
        return run[-1][0].seq if run else 0

    def _paced(
        self,
        app: FeishuLink,
        job: Job,
        share: Share | None,
        remaining_ms: Callable[[], int],
        meanwhile: Callable[[], object] = lambda: None,
    ) -> int:
        """The call's moment reserved in `app`'s pace, `meanwhile` run, the moment come (waited for while the time
        allowed, a second at most: a worker does not sleep for pace): 0; or the ms it is away (then `meanwhile`
        did not run)."""
        return app.pace.wait(job.event.target, lambda: self._policy.pace_budget(remaining_ms()), meanwhile, share)

    def _pending_calls(self) -> list[ProviderCall]:
        if not hasattr(self._calls, "pending"):
            self._calls.pending = []
        return self._calls.pending  # type: ignore[no-any-return]

    def _commit(
        self, before: Job, after: Job, at_ms: int, *, card: CardWrite | None = None, advance: bool = False
    ) -> Job:
        """A step of the job, with the provider calls made since its last (its record of them)."""
        pending = self._pending_calls()
        try:
            return self._store.commit(before, after.with_calls(pending), at_ms, card=card, advance=advance)
        finally:
            pending.clear()

    def _mark(self, job: Job, marked: list[Job]) -> None:
        at = self._clock()
        marked.append(self._commit(job, job.marked(at), at))

    def _pause(self, lane: str, done: int, started_at: int, left: int) -> DrainResult:
        if done == started_at:
            raise budgets.OutOfTime(f"{left} ms left, {self._policy.reserve_ms} ms needed to claim a job")
        self._nudge(Nudge(lane, done, "continue"))
        return DrainResult.PAUSED

    def _claim(self, job: Job, now: int) -> Job | None:
        """The attempt's first write (a settling try's also marks it); None if the job moved on first."""
        attempt, lease = secrets.token_hex(8), now + self._policy.lease_ms
        claimed = job.settling(attempt, lease, now) if job.status is JobStatus.UNKNOWN else job.claimed(attempt, lease)
        try:
            return self._commit(job, claimed, now)
        except StaleJob:
            return None

    def _deliver(
        self, job: Job, allowed: frozenset[str], share: Share | None, remaining_ms: Budget, tenant_app: FeishuLink
    ) -> Step | PaceWait:
        """One attempt of the head job: AGAIN when Feishu's rate limit refused it (back in the queue, its attempt
        given back); PaceWait when its call's moment is further away than the worker's time."""
        if job.event.target.key not in allowed:
            return self._complete(job, JobStatus.REJECTED, Outcome.TARGET_NOT_ALLOWED, "", None)
        plan = self._cards.plan(job, tenant_app)
        current, decision = plan.current, plan.decision
        if decision in (CardDecision.STALE, CardDecision.SAME):
            shown = current.message_id if current else ""
            return self._complete(job, JobStatus.SUCCEEDED, Outcome(str(decision)), shown, None)
        if decision is CardDecision.CONFLICT:
            return self._fail(job, job.conflict)
        try:
            plan.first_call.messenger.tenant_access_token()  # before the mark: a token failure touches nothing
        except DeliveryError as exc:
            return self._not_done(job, exc, plan.first_call)
        marked: list[Job] = []  # while its moment is waited for: only waking up comes between it and the call
        if wait := self._paced(plan.first_call, job, share, remaining_ms, lambda: self._mark(job, marked)):  # untried
            self._commit(job, job.throttled("waits for Feishu's pace (Herald's own limits)"), self._clock())
            return PaceWait(wait)
        job = marked[0]
        try:
            written = self._cards.write(job, plan)
        except DeliveryError as exc:
            if exc.maybe_delivered:
                return self._unknown_after_answer(job, f"{decision.call} not answered as done: {exc}", decision)
            if exc.throttled:
                self._throttled(plan.first_call, job, exc)
                return Step.AGAIN
            return self._not_done(job, exc, plan.first_call)
        except Exception as exc:
            self._left_behind(job, f"interrupted after its side effect was marked: {exc!r}", decision)
            raise
        mapping = self._cards.mapping(job, written, plan)
        return self._complete(job, JobStatus.SUCCEEDED, written.outcome, written.message_id, mapping, written=written)

    def _settle(self, job: Job, allowed: frozenset[str], tenant_app: FeishuLink) -> Step:
        """One try at settling an unknown job, taken back to running (its lane is blocked behind it, so
        its card's mapping is as its first attempt left it): FINISHED when it is settled, else it is unknown
        again, to be tried later (NotYet) or left to an operator."""
        if job.event.target.key not in allowed:
            return self._unknown_for_operator(job, "its target is no longer allowed for the service: not tried again")
        plan = self._cards.plan(job, tenant_app)
        current, decision = plan.current, plan.decision
        if decision in (CardDecision.STALE, CardDecision.SAME):
            message_id = current.message_id if current else ""
            shown = Written(message_id, Outcome(str(decision)))
            return self._settled(job, shown, None, "the card already shows this revision")
        if decision is CardDecision.CONFLICT:
            return self._unknown_for_operator(job, job.conflict)
        if decision.sends and (closed := self._policy.resend_window_closed(job, self._clock())):
            return self._unknown_for_operator(job, f"not sent again: {closed}")
        try:
            plan.first_call.messenger.tenant_access_token()
        except DeliveryError as exc:
            return self._unknown_after_answer(job, f"token request failed, nothing tried: {exc}", decision)
        try:
            written = self._cards.write(job, plan)
        except DeliveryError as exc:
            if exc.throttled:
                plan.first_call.pace.refused(job.event.target, exc.throttled, exc.retry_after_ms)
            reason = f"{decision.call} tried again: {exc}"
            if not exc.retryable and not exc.maybe_delivered:  # a clear "no" that says nothing of the first
                return self._unknown_for_operator(job, reason)
            return self._unknown_after_answer(job, reason, decision)
        except Exception as exc:
            self._left_behind(job, f"interrupted while being settled: {exc!r}", decision)
            raise
        message_id = written.message_id
        if written.outcome is Outcome.UPDATED:
            how = f"revision {job.event.revision} written to message {message_id} again; Feishu answered done"
        else:
            how = f"sent again with uuid {job.feishu_uuid} inside Feishu's window; Feishu answered {message_id}"
        return self._settled(job, written, self._cards.mapping(job, written, plan), how)

    def _settled(self, job: Job, written: Written, card: CardWrite | None, evidence: str) -> Step:
        """Settled by Herald: recorded on the job like an operator's resolution, by `herald`, with the evidence."""
        message_id = written.message_id
        settled_by = resolution(
            "settled", "herald", self._clock(), was=JobStatus.UNKNOWN, note=evidence, message_id=message_id
        )
        settled = self._complete(job, JobStatus.SUCCEEDED, written.outcome, message_id, card, settled_by, written)
        if settled is Step.FINISHED:
            self._on_outcome(job, "settled")
        return settled

    def _left_behind(self, job: Job, reason: str, decision: CardDecision | None = None) -> None:
        """Unknown after a crash or a timeout: Herald tries to settle it at once, where it can."""
        self._record_unknown(job, reason, *self._next_settle(job, self._clock(), decision))

    def _unknown_after_answer(self, job: Job, reason: str, decision: CardDecision) -> Step:
        """Unknown after an answer that settled nothing: tried again after a backoff grown by its tries (a later
        try comes back with this message: NotYet), or left to an operator (BLOCKS)."""
        settle_at = self._clock() + self._policy.backoff_ms(job.settle_tries + 1)
        if settle_at := self._record_unknown(job, reason, *self._next_settle(job, settle_at, decision)):
            raise NotYet(
                f"job {job.job_id} is unknown; Herald tries to settle it again", settle_at - self._clock(), job.tenant
            )
        return Step.BLOCKS

    def _unknown_for_operator(self, job: Job, reason: str) -> Step:
        """Unknown, and nothing Herald could try would prove what happened."""
        self._record_unknown(job, reason, 0, OPERATOR_DECIDES)
        return Step.BLOCKS

    def _next_settle(self, job: Job, at: int, decision: CardDecision | None) -> tuple[int, str]:
        """When Herald tries to settle the job next (`at`), or 0 and why not: out of tries, or a resend would
        fall outside Feishu's uuid window (`decision`, the side effect it was, is read when not given)."""
        if job.settle_tries >= self._policy.settle_attempts:
            return 0, f"not settled after {job.settle_tries} tries: {OPERATOR_DECIDES}"
        sends = (decision or self._cards.plan(job, self._apps.current(job.tenant, job.service_id)).decision).sends
        if sends and (closed := self._policy.resend_window_closed(job, at)):
            return 0, f"{closed}; {OPERATOR_DECIDES}"
        return max(1, at), ""

    def _record_unknown(self, job: Job, reason: str, settle_at: int, why_not: str) -> int:
        now = self._clock()
        evidence = reason if settle_at else f"{reason}; {why_not}"
        self._commit(job, job.unknown(evidence, now, self._policy.blocked_expiry(now), settle_at), now)
        self._on_outcome(job, str(JobStatus.UNKNOWN))
        return settle_at

    def _not_done(self, job: Job, exc: DeliveryError, app: FeishuLink) -> Step:
        """The provider did not act: retry with backoff while it may succeed and attempts remain. While its app is
        parked (its circuit: this failure may have parked it) the job waits for the app, its attempt given back."""
        if wait := waits_for_app(exc, app.circuit):
            self._commit(job, job.throttled(f"waits for Feishu app {app.app_id}: {exc}"), self._clock())
            raise NotYet(f"job {job.job_id} waits for Feishu app {app.app_id}: {exc}", wait, job.tenant)
        if not exc.retryable:
            return self._fail(job, str(exc))
        if job.attempts >= self._policy.max_attempts:
            return self._fail(job, f"gave up after {job.attempts} attempts: {exc}")
        now, backoff = self._clock(), self._policy.backoff_ms(job.attempts)
        self._commit(job, job.retried(str(exc), now + backoff), now)
        self._on_outcome(job, "retry")
        raise NotYet(f"job {job.job_id} failed before delivery: {exc}", backoff, job.tenant)

    def _throttled(self, app: FeishuLink, job: Job, exc: DeliveryError) -> None:
        app.pace.refused(job.event.target, exc.throttled, exc.retry_after_ms)
        self._commit(job, job.throttled(str(exc)), self._clock())
        self._on_outcome(job, "throttled")

    def _fail(self, job: Job, reason: str) -> Step:
        now = self._clock()
        self._commit(job, job.failed(reason, now, self._policy.blocked_expiry(now)), now)
        self._on_outcome(job, str(JobStatus.FAILED))
        return Step.BLOCKS

    def _complete(
        self,
        job: Job,
        status: JobStatus,
        outcome: Outcome,
        message_id: str,
        card: CardWrite | None,
        settled_by: Resolution | None = None,
        written: Written | None = None,
    ) -> Step:
        now = self._clock()
        continued_from = written.continued_from if written else ""
        expires = now + self._policy.retention_ms
        done = job.completed(status, outcome, message_id, now, expires, settled_by, continued_from=continued_from)
        try:
            self._commit(job, done, now, card=card, advance=True)
        except StaleJob:
            if card is None:
                raise
            # The card mapping moved under us (only a writer outside this queue can do that): the message
            # went out, but what the card now shows is not known here.
            return self._unknown_for_operator(job, f"delivered as {message_id}; the card mapping changed meanwhile")
        self._on_outcome(job, outcome)
        return Step.FINISHED
