"""Herald's calls to Feishu under Feishu's limits: a worker waits for its call's tokens (on a clock the test
moves, so nothing sleeps), a rate-limit answer slows the bucket down (or holds it as long as Feishu asked) and
never counts as a failed attempt, and a wait longer than the worker's time hands the lane to a fresh message
after progress, or brings the message back when the moment comes, instead of failing it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pytest

from herald.events.apps import OneApp
from herald.events.dispatch import EventDispatcher
from herald.events.drained import NEW_WORK_PACE_SLEEP_MOST_MS, DrainResult
from herald.events.jobs import Job, JobStatus
from herald.events.models import Card, ExternalEvent
from herald.events.nudges import Nudge
from herald.events.pacing import FeishuLimits, FeishuPace
from herald.events.policy import DispatchPolicy
from herald.events.service import EventIntake
from herald.limits.governor import Bucket, Governor
from herald.limits.shares import Claim
from herald.providers.feishu import FeishuError
from tests.support.clock import FakeClock, most_in_any_window
from tests.support.fakes import AdmitAll, FixedTargets, InMemoryBucketStore, InMemoryJobStore, PartnerKey, step_of

ALLOWED = frozenset({"chat_id:oc_1", "chat_id:oc_2"})


class Feishu:
    """Answers after no time; records when each call came; refuses the next `refusals` calls by a rate limit."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.calls: list[tuple[int, str]] = []
        self.refusals: list[str] = []
        self.holds: dict[str, int] = {}  # chat -> when Feishu's frequency control lets it go again
        self.held: list[tuple[int, str]] = []  # calls refused during a hold

    app_id = "cli_stack"

    def tenant_access_token(self) -> str:
        return "token"

    def send_card(self, receive_id_type: str, receive_id: str, card: Card, uuid: str) -> str:
        if (left := self.holds.get(receive_id, 0) - self.clock.now) > 0:
            self.held.append((self.clock.now, receive_id))
            reset_s = -(-left // 1000)  # x-ogw-ratelimit-reset: whole seconds, rounded up
            raise FeishuError("Feishu error 99991400", retryable=True, code=99991400, throttled="app",
                              retry_after_ms=reset_s * 1000)  # fmt: skip
        if self.refusals:
            scope = self.refusals.pop(0)
            code = 230020 if scope == "chat" else 99991400
            raise FeishuError(f"Feishu error {code}", retryable=True, code=code, throttled=scope)
        self.calls.append((self.clock.now, receive_id))
        return f"om_{len(self.calls)}"

    def update_card(self, message_id: str, card: Card) -> None:
        self.calls.append((self.clock.now, message_id))


class Herald:
    def __init__(self) -> None:
        self.clock = FakeClock(1_800_000_000_000)
        self.store = InMemoryJobStore()
        self.feishu = Feishu(self.clock)
        self.nudges: list[Nudge] = []
        self.outcomes: list[str] = []
        self.pace_store = InMemoryBucketStore()
        self.pace = FeishuPace(Governor(self.pace_store, self.clock, self.clock.sleep), "cli_app", FeishuLimits())
        self.dispatcher = EventDispatcher(
            self.store,
            FixedTargets(ALLOWED),
            OneApp(self.feishu, self.pace),
            DispatchPolicy(reserve_ms=0, max_attempts=2),
            nudge=self.nudges.append,
            clock=self.clock,
            on_outcome=lambda job, outcome: self.outcomes.append(outcome),
        )
        self.intake = EventIntake(self.store, AdmitAll(), self.clock)

    def post(self, n: int, chat: str = "oc_1") -> None:
        data = {"title": f"e{n}", "status": "running", "target": {"receive_id": chat, "receive_id_type": "chat_id"}}
        self.intake.accept(
            PartnerKey("svc", ALLOWED), ExternalEvent.from_content(f"e{n}", {"event_type": "t", "data": data})
        )


@pytest.fixture
def herald() -> Herald:
    return Herald()


def drain_as_the_queue_does(herald: Herald) -> DrainResult:
    """Drain the lane; a drain that must wait (a worker sleeps a second at most for pace) has its message back
    when it asked, as the queue's hidden message would."""
    for _ in range(100):
        drained = herald.dispatcher.drain("svc", lambda: 600_000)
        if drained.result is not DrainResult.WAITING:
            return drained.result
        herald.clock.advance(drained.retry_in_ms)
    raise AssertionError("the lane never caught up")


def test_a_burst_to_one_chat_is_delivered_in_one_drain_at_the_chats_pace(herald: Herald) -> None:
    for n in range(20):
        herald.post(n)
    assert herald.dispatcher.drain("svc", lambda: 60_000).result is DrainResult.CAUGHT_UP
    times = [at for at, _ in herald.feishu.calls]
    assert len(times) == 20 and most_in_any_window(times) <= 5
    assert herald.clock.slept_ms >= 3_000  # 20 calls at 4.5 a second


def test_a_rate_limit_answer_slows_the_chat_and_never_fails_the_job(herald: Herald) -> None:
    herald.post(1)
    herald.feishu.refusals = ["chat"] * 5  # more refusals than the job's attempts (2)
    start = herald.clock.now
    assert drain_as_the_queue_does(herald) is DrainResult.CAUGHT_UP
    job = herald.store.job("svc", 1)
    assert job is not None and job.status is JobStatus.SUCCEEDED and job.attempts == 1
    assert herald.outcomes.count("throttled") == 5 and "failed" not in herald.outcomes
    assert herald.clock.now - start > 5 * 1000 / 4.5  # each refusal halved the chat's pace
    assert herald.clock.slept_ms <= 5 * 1_000  # a worker slept a second at most each time: the rest, in the queue


def test_a_wait_longer_than_the_workers_time_after_progress_hands_the_lane_to_a_fresh_message(herald: Herald) -> None:
    """Jobs ran in this drain: a fresh message carries on (a receive is not spent on a lane making progress)."""
    for n in range(6):
        herald.post(n)

    def budget() -> int:  # the worker's time runs short after three calls
        return 60_000 if len(herald.feishu.calls) < 3 else 50

    assert herald.dispatcher.drain("svc", budget).result is DrainResult.PAUSED
    done = herald.store.head("svc").done_seq
    (nudge,) = herald.nudges
    assert 0 < done < 6 and (nudge.lane, nudge.seq) == ("svc", done) and nudge.why.startswith("paced-")
    waiting = herald.store.job("svc", done + 1)
    assert waiting is not None and waiting.status is JobStatus.QUEUED and waiting.attempts == 0  # untouched
    assert herald.dispatcher.drain("svc", lambda: 60_000).result is DrainResult.CAUGHT_UP


def test_a_wait_longer_than_the_workers_time_with_nothing_done_returns_the_message_for_when_the_moment_comes(
    herald: Herald,
) -> None:
    """Issue 47: no worker sleeps for pace, nor spins: the message comes back when the call's moment does."""
    herald.post(1)
    herald.post(2)
    assert herald.dispatcher.drain("svc", lambda: 60_000).result is DrainResult.CAUGHT_UP
    herald.post(3)
    drained = herald.dispatcher.drain("svc", lambda: 50)  # its moment is 222 ms away
    assert drained.result is DrainResult.WAITING and 0 < drained.retry_in_ms <= 1000 / (5 * 0.9) + 1
    job = herald.store.job("svc", 3)
    assert job is not None and job.status is JobStatus.QUEUED and job.attempts == 0 and herald.nudges == []
    assert herald.dispatcher.drain("svc", lambda: 60_000).result is DrainResult.CAUGHT_UP


def test_a_hold_feishu_names_is_waited_out_with_one_refused_call_and_every_chat_goes_when_it_ends(
    herald: Herald,
) -> None:
    """Issue 47, item 3: Feishu holds one chat for 35 s and says so (`x-ogw-ratelimit-reset`). Herald makes one
    refused call, not one per halved pace; when the hold ends the app's chats are served at once."""
    start = herald.clock.now
    herald.feishu.holds["oc_1"] = start + 35_000
    herald.post(1, chat="oc_1")
    herald.post(2, chat="oc_2")
    assert drain_as_the_queue_does(herald) is DrainResult.CAUGHT_UP
    assert herald.feishu.held == [(start, "oc_1")]
    (held_at, _), (other_at, _) = herald.feishu.calls
    assert start + 35_000 <= held_at <= start + 35_000 + 250  # at the hold's end, not after a halved pace
    assert other_at - (start + 35_000) <= 2_000  # the app's other chat at once after it
    assert herald.outcomes.count("throttled") == 1 and "failed" not in herald.outcomes


def test_chats_of_one_app_share_the_apps_pace_but_not_each_others(herald: Herald) -> None:
    for n in range(10):
        herald.post(n, chat="oc_1" if n % 2 else "oc_2")
    herald.dispatcher.drain("svc", lambda: 60_000)
    per_chat = {chat: [at for at, c in herald.feishu.calls if c == chat] for chat in ("oc_1", "oc_2")}
    assert all(most_in_any_window(times) <= 5 for times in per_chat.values())
    assert most_in_any_window([at for at, _ in herald.feishu.calls]) > 5  # two chats go faster than one


def test_a_delivery_reserves_its_moment_in_every_bucket_at_once_after_its_claim_and_is_marked_while_it_waits() -> None:
    """Whatever runs between a bucket counting a call and Feishu receiving it lets calls bunch up on arrival:
    a delivery reserves its moment in the chat's and the app's buckets in one write, after its claim, and
    is marked while it waits for that moment: nothing but waking up comes between the moment and the call."""
    steps: list[str] = []
    herald = Herald()
    times: dict[str, list[int]] = {"mark": [], "call": []}

    class Buckets(InMemoryBucketStore):
        def write(self, buckets: Mapping[str, Bucket], expires_at_s: int) -> bool:
            steps.append("tokens " + " ".join(sorted("chat" if ":chat:" in name else name[-1] for name in buckets)))
            return super().write(buckets, expires_at_s)

    class Jobs(InMemoryJobStore):
        def commit(self, before: Job, after: Job, at_ms: int, **changes: Any) -> Job:
            steps.append(step := step_of(before, after))
            times.setdefault(step, []).append(herald.clock.now)
            return super().commit(before, after, at_ms, **changes)

    class Calls(Feishu):
        def send_card(self, receive_id_type: str, receive_id: str, card: Card, uuid: str) -> str:
            steps.append("call")
            times["call"].append(herald.clock.now)
            return super().send_card(receive_id_type, receive_id, card, uuid)

    herald.store = Jobs()
    herald.intake = EventIntake(herald.store, AdmitAll(), herald.clock)
    pace = FeishuPace(Governor(Buckets(), herald.clock, herald.clock.sleep), "cli_app", FeishuLimits())
    feishu, policy = Calls(herald.clock), DispatchPolicy(reserve_ms=0)
    herald.dispatcher = EventDispatcher(
        herald.store, FixedTargets(ALLOWED), OneApp(feishu, pace), policy, herald.nudges.append, herald.clock
    )
    herald.post(1)
    herald.post(2)  # the same chat: its call waits for the chat's next moment
    assert herald.dispatcher.drain("svc", lambda: 60_000).result is DrainResult.CAUGHT_UP
    assert steps == ["claim", "tokens chat m s", "mark", "call", "complete"] * 2
    first_call, second_mark, second_call = times["call"][0], times["mark"][1], times["call"][1]
    assert second_call - first_call >= 1000 / (5 * 0.9)  # the chat's pace
    assert second_mark < second_call  # marked before the wait, not between the moment and the call


def test_a_message_waiting_for_a_moment_seconds_away_comes_back_a_second_early_and_its_worker_sleeps_the_rest(
    herald: Herald,
) -> None:
    """SQS hides a message for whole seconds, rounded up: asked for the moment itself it would come back up to a
    second late (after a hold, every held card a second late)."""
    start = herald.clock.now
    herald.feishu.holds["oc_1"] = start + 35_000
    herald.post(1)
    drained = herald.dispatcher.drain("svc", lambda: 600_000)
    assert drained.result is DrainResult.WAITING and drained.retry_in_ms == 34_000
    herald.clock.advance(drained.retry_in_ms)
    slept = herald.clock.slept_ms
    assert herald.dispatcher.drain("svc", lambda: 600_000).result is DrainResult.CAUGHT_UP
    assert herald.clock.slept_ms - slept == 1_000 and [at for at, _ in herald.feishu.calls] == [start + 35_000]


def test_a_lane_over_its_part_of_a_shared_app_goes_back_to_its_queue_before_its_claim_writing_nothing(
    herald: Herald,
) -> None:
    """Issue 47, item 2: while another service asks for the same app with nine times its weight, this service's
    calls are ten of the app's intervals apart, and its other lanes took its next two moments; a drain before then
    is told so before it claims the job (no write, no stream record: a partner's backlog bouncing off its part
    costs reads only), saying so: how long its queue keeps it away is the handler's
    (tests/unit/test_waiting_lanes.py)."""
    gate = "feishu:cli_app:s"
    now = herald.clock.now
    herald.pace_store.buckets[gate] = Bucket(claims={"/other": Claim(9, 1, now + 10_000, now)})
    herald.post(1)
    herald.post(2)
    assert herald.dispatcher.drain("svc", lambda: 0).result is DrainResult.WAITING  # e1 sent; e2's moment is ahead
    assert len(herald.feishu.calls) == 1
    own = herald.pace_store.buckets[gate].claims["/svc"]
    herald.pace_store.buckets[gate] = replace(
        herald.pace_store.buckets[gate],
        claims={**herald.pace_store.buckets[gate].claims, "/svc": replace(own, due_ms=own.due_ms + 2 * 1250)},
    )  # its other lanes' calls took its next two moments
    second = herald.store.job("svc", 2)
    drained = herald.dispatcher.drain("svc", lambda: 600_000)
    assert drained.result is DrainResult.WAITING and "its part of Feishu app" in drained.reason
    assert drained.crowded and drained.first_back_ms == 3_000  # it stays away at least 3 s, longer each time
    assert 2 * 1250 < drained.retry_in_ms <= 3 * 1250  # its part's next free moment: thirty app intervals
    assert herald.store.job("svc", 2) == second  # not claimed: nothing written


def test_new_work_leaves_a_moment_the_waiting_queue_sleeps_for_and_on_its_next_look_writes_nothing(
    herald: Herald,
) -> None:
    """Issue 47, item 2 (d): the events queue's workers sleep at most NEW_WORK_PACE_SLEEP_MOST_MS for a call's moment
    (they are there for new work); a lane whose moment is further is crowded out (to the waiting queue, whose worker
    sleeps for it), and once this instance saw the app crowded, the next look before a claim says so writing nothing
    (a backlog's lanes had each written a claim and its undoing every time they came back)."""
    new_work = EventDispatcher(
        herald.store,
        FixedTargets(ALLOWED),
        OneApp(herald.feishu, herald.pace),
        DispatchPolicy(reserve_ms=0, max_attempts=2, pace_sleep_most_ms=NEW_WORK_PACE_SLEEP_MOST_MS),
        nudge=herald.nudges.append,
        clock=herald.clock,
    )
    herald.pace_store.buckets["feishu:cli_app:s"] = Bucket(due_ms=herald.clock.now + 800)  # the app's next: 800 ms
    herald.post(1)
    first = new_work.drain("svc", lambda: 600_000)
    assert first.result is DrainResult.WAITING and first.crowded and herald.feishu.calls == []
    before = herald.store.job("svc", 1)
    second = new_work.drain("svc", lambda: 600_000)
    assert second.crowded and herald.store.job("svc", 1) == before  # looked at before its claim: nothing written
    assert herald.clock.slept_ms == 0
    assert herald.dispatcher.drain("svc", lambda: 600_000).result is DrainResult.CAUGHT_UP  # the waiting queue's
    assert 0 < herald.clock.slept_ms <= 800 and len(herald.feishu.calls) == 1
