"""A provider app's circuit on a controlled clock: slots below the pool, parking after failures in a row, one
probe at a time, and work that waits for a parked app without spending its attempts."""

from __future__ import annotations

import pytest

from herald.circuits import Circuit, CircuitLimits, Parked, waits_for_app
from herald.errors import DeliveryError
from herald.events.drained import DrainResult
from herald.events.jobs import JobStatus
from tests.support.clock import FakeClock
from tests.support.dispatch_harness import Harness
from tests.support.fakes import InMemoryCircuitStore

LIMITS = CircuitLimits(calls_at_once=2, failures_to_park=3, first_park_ms=5_000, longest_park_ms=20_000)
LEASE_MS = 7_000


def _circuit(clock: FakeClock, store: InMemoryCircuitStore | None = None) -> Circuit:
    return Circuit(store or InMemoryCircuitStore(), "feishu:cli_a", LIMITS, clock)


def _fail(circuit: Circuit) -> None:
    with circuit.call(LEASE_MS) as failed:
        failed()


def _answer(circuit: Circuit) -> None:
    with circuit.call(LEASE_MS):
        pass


def test_calls_in_flight_are_held_to_the_apps_slots_across_instances_and_a_slot_frees_when_its_call_ends() -> None:
    clock, store = FakeClock(1_000_000), InMemoryCircuitStore()
    one, other = _circuit(clock, store), _circuit(clock, store)  # two instances of the same app
    with one.call(LEASE_MS), other.call(LEASE_MS):
        with pytest.raises(Parked) as refused:
            _answer(one)
        assert refused.value.wait_ms == LIMITS.busy_wait_ms and not refused.value.maybe_delivered
    _answer(one)  # both slots free again


def test_a_slot_left_by_a_worker_that_died_frees_when_its_lease_ends() -> None:
    clock = FakeClock(1_000_000)
    circuit = _circuit(clock)
    died = [circuit.call(LEASE_MS) for _ in range(2)]
    for call in died:
        call.__enter__()  # entered, never left: the worker died in the call
    with pytest.raises(Parked):
        _answer(circuit)
    clock.advance(LEASE_MS)
    _answer(circuit)
    assert len(died) == 2  # (held to the end: a context manager collected early would leave its slot)


def test_failures_in_a_row_park_the_app_then_one_probe_at_a_time_and_a_failed_probe_parks_it_twice_as_long() -> None:
    clock = FakeClock(1_000_000)
    circuit = _circuit(clock)
    _fail(circuit)
    _fail(circuit)
    assert circuit.parked_ms() == 0  # two failures do not park it
    _fail(circuit)
    assert circuit.parked_ms() == 5_000
    with pytest.raises(Parked) as parked:
        _answer(circuit)
    assert parked.value.wait_ms == 5_000
    clock.advance(5_000)
    with circuit.call(LEASE_MS) as probe_failed:  # half open: this call is the probe, and the only one
        with pytest.raises(Parked, match="probe"):
            _answer(circuit)
        probe_failed()
    assert circuit.parked_ms() == 10_000
    clock.advance(10_000)
    _fail(circuit)
    clock.advance(20_000)
    _fail(circuit)
    assert circuit.parked_ms() == LIMITS.longest_park_ms  # doubling stops at the longest park


def test_one_answer_closes_the_circuit_and_failures_start_counting_again() -> None:
    clock = FakeClock(1_000_000)
    circuit = _circuit(clock)
    for _ in range(3):
        _fail(circuit)
    clock.advance(5_000)
    _answer(circuit)  # the probe is answered
    _fail(circuit)
    _fail(circuit)
    assert circuit.parked_ms() == 0
    with circuit.call(LEASE_MS), circuit.call(LEASE_MS):
        pass  # all its slots again, not the probe's one


def test_calls_that_fail_while_the_app_is_parked_do_not_push_its_park_further() -> None:
    clock = FakeClock(1_000_000)
    circuit = _circuit(clock)
    started_before = circuit.call(LEASE_MS)
    late_failed = started_before.__enter__()  # in flight when the app starts to hang
    _fail(circuit)
    _fail(circuit)
    _fail(circuit)
    assert circuit.parked_ms() == 5_000
    clock.advance(1_000)
    late_failed()
    started_before.__exit__(None, None, None)  # its timeout comes while the app is parked
    assert circuit.parked_ms() == 4_000


def test_work_waits_for_an_app_parked_by_its_own_failure_or_refused_by_the_circuit_but_not_for_its_own_error() -> None:
    clock = FakeClock(1_000_000)
    circuit = _circuit(clock)
    assert waits_for_app(Parked("every slot in flight", 1_000), circuit) == 1_000
    timeout = DeliveryError("token request failed: read timed out", retryable=True)
    assert waits_for_app(timeout, circuit) == 0  # the app is not parked: the work's own failure, counted
    for _ in range(3):
        _fail(circuit)
    assert waits_for_app(timeout, circuit) == 5_000
    refused = DeliveryError("Feishu error 230002: the bot is not in the chat", retryable=False)
    assert waits_for_app(refused, circuit) == 0
    throttled = DeliveryError("99991400", retryable=True, throttled="app")
    assert waits_for_app(throttled, circuit) == 0  # a rate limit is the pace's, not the circuit's


def test_a_job_whose_app_refuses_the_call_waits_untried_and_keeps_its_attempts() -> None:
    harness = Harness()
    harness.post("e1", "one")
    harness.feishu.token_errors.append(Parked("feishu:cli_stack is not called now: parked", 5_000))
    drained = harness.drained()
    assert drained.result is DrainResult.WAITING and drained.retry_in_ms == 5_000
    job = harness.job()
    assert job.status is JobStatus.QUEUED and job.attempts == 0
    assert harness.feishu.calls == []


def test_the_failure_that_parks_the_app_gives_the_jobs_attempt_back_so_an_outage_fails_no_job() -> None:
    harness = Harness()
    harness.post("e1", "one")
    for _ in range(harness.policy.max_attempts * 3):  # far more failures than a job's attempts
        harness.feishu.token_errors.append(DeliveryError("token request failed: read timed out", retryable=True))
    for _ in range(2):
        _fail(harness.circuit)
    results = []
    for _ in range(harness.policy.max_attempts * 3):
        _fail(harness.circuit)  # the app's calls keep failing (other workers' too): parked, probe fails, parked
        drained = harness.drained()
        results.append(drained.result)
        harness.clock.advance(drained.retry_in_ms)
    assert set(results) == {DrainResult.WAITING}
    job = harness.job()
    assert job.status is JobStatus.QUEUED and job.attempts == 0, job
    harness.clock.advance(LIMITS.longest_park_ms * 4)
    _answer(harness.circuit)  # the app answers again
    harness.feishu.token_errors.clear()
    assert harness.drain() is DrainResult.CAUGHT_UP
    assert harness.job().status is JobStatus.SUCCEEDED and harness.feishu.calls == ["send one"]


def test_a_settling_try_is_not_spent_while_the_app_is_parked() -> None:
    harness = Harness()
    harness.post("e1", "one")
    harness.feishu.next = ["hang"]  # sent, never answered: unknown
    retry_in = harness.waits()
    assert harness.job().status is JobStatus.UNKNOWN and harness.job().settle_tries == 0
    for _ in range(3):
        _fail(harness.circuit)
    harness.clock.advance(retry_in)
    drained = harness.drained()
    assert drained.result is DrainResult.WAITING and drained.retry_in_ms == harness.circuit.parked_ms()
    assert harness.job().settle_tries == 0 and harness.feishu.calls == ["send one"]
    harness.clock.advance(drained.retry_in_ms)
    _answer(harness.circuit)
    assert harness.drain() is DrainResult.CAUGHT_UP
    assert harness.job().status is JobStatus.SUCCEEDED and len(harness.feishu.messages) == 1


def test_work_refused_by_slots_held_by_slow_calls_waits_until_the_first_of_them_ends_not_a_second_at_a_time() -> None:
    clock = FakeClock(1_000_000)
    circuit = _circuit(clock)
    hanging = [circuit.call(LEASE_MS) for _ in range(2)]
    for call in hanging:
        call.__enter__()
    assert circuit.wait_ms() == LIMITS.busy_wait_ms  # just started: a healthy app's slots free within moments
    clock.advance(2_000)
    assert circuit.wait_ms() == LIMITS.first_park_ms  # slow: not before the first of them can time out (5 s)
    clock.advance(2_000)
    assert circuit.wait_ms() == LEASE_MS - 4_000
    assert len(hanging) == 2
