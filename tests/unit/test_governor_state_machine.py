"""Issue 50, item 4: the outbound governor driven by Hypothesis: three instances share one bucket store (as Lambda
instances share DynamoDB) and take calls through a chat's and an app's gates with random budgets; a call's last
step may run late; another instance may reserve between one's read and its write; a write may land with its answer
lost (the retry then meets its own new version); the provider may refuse a call and name its wait; time passes.
After every step: the calls let through never exceed any gate's limit in any sliding second."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from herald.limits.governor import Bucket, BucketLimit, Gate, Governor
from tests.support.clock import FakeClock, most_in_any_window
from tests.support.fakes import InMemoryBucketStore

APP = Gate("feishu:app", BucketLimit(8))
CHATS = [Gate(f"feishu:chat:oc_{n}", BucketLimit(5)) for n in range(2)]


class FaultyBuckets(InMemoryBucketStore):
    """Buckets whose next write may have another instance's reservation land first, or land with its answer lost."""

    def __init__(self) -> None:
        super().__init__()
        self.before_write: list[Callable[[], object]] = []
        self.lose_next_answer = False

    def write(self, buckets: Mapping[str, Bucket], expires_at_s: int) -> bool:
        while self.before_write:
            self.before_write.pop(0)()
        landed = super().write(buckets, expires_at_s)
        if landed and self.lose_next_answer:
            self.lose_next_answer = False
            return False  # the SDK's resend met the version this very write left: a condition failure
        return landed


class GovernorMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock(1_800_000_000_000)
        self.store = FaultyBuckets()
        self.instances = [Governor(self.store, self.clock, sleep=self._sleep) for _ in range(3)]
        self.went: dict[str, list[int]] = {gate.name: [] for gate in (APP, *CHATS)}

    def _sleep(self, seconds: float) -> None:
        self.clock.advance(max(1, round(seconds * 1000)))

    def _call(self, instance: int, chat: int, budget_ms: int, late_ms: int) -> None:
        gates = [CHATS[chat], APP]
        if self.instances[instance].take(gates, lambda: budget_ms, lambda: self.clock.advance(late_ms)) == 0:
            for gate in gates:
                self.went[gate.name].append(self.clock.now)

    @rule(
        instance=st.integers(0, 2),
        chat=st.integers(0, 1),
        budget_ms=st.sampled_from([0, 200, 2_000]),
        late_ms=st.sampled_from([0, 0, 5, 150]),
    )
    def a_call(self, instance: int, chat: int, budget_ms: int, late_ms: int) -> None:
        self._call(instance, chat, budget_ms, late_ms)

    @rule(instance=st.integers(0, 2), other=st.integers(1, 2), chats=st.tuples(st.integers(0, 1), st.integers(0, 1)))
    def a_call_raced_between_its_read_and_write(self, instance: int, other: int, chats: tuple[int, int]) -> None:
        """By another instance: one instance's threads reserve one at a time (its lock), never racing each other."""
        racing = (instance + other) % 3
        self.store.before_write.append(lambda: self._call(racing, chats[1], 2_000, 0))
        self._call(instance, chats[0], 2_000, 0)
        self.store.before_write.clear()

    @rule(instance=st.integers(0, 2), chat=st.integers(0, 1))
    def a_call_whose_writes_answer_is_lost(self, instance: int, chat: int) -> None:
        self.store.lose_next_answer = True
        self._call(instance, chat, 2_000, 0)
        self.store.lose_next_answer = False

    @rule(instance=st.integers(0, 2), gate=st.sampled_from([APP, *CHATS]), wait_ms=st.sampled_from([0, 1_000, 5_000]))
    def the_provider_refuses_a_call(self, instance: int, gate: Gate, wait_ms: int) -> None:
        self.instances[instance].refused(gate, retry_after_ms=wait_ms)

    @rule(ms=st.sampled_from([10, 100, 1_000, 10_000]))
    def time_passes(self, ms: int) -> None:
        self.clock.advance(ms)

    @invariant()
    def no_gate_is_over_its_limit_in_any_second(self) -> None:
        for gate in (APP, *CHATS):
            times = self.went[gate.name]
            assert not times or most_in_any_window(times, 1000) <= gate.limit.calls, (gate.name, times)


GovernorMachine.TestCase.settings = settings(
    max_examples=120, stateful_step_count=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_the_governor_is_never_over_a_limit_whatever_the_interleaving = GovernorMachine.TestCase
