"""The external-event job's state machine (JOB_TRANSITIONS), walked as a diagram."""

from __future__ import annotations

from herald.events.jobs import JOB_TRANSITIONS, JobStatus


def reachable_from(start: JobStatus) -> set[JobStatus]:
    seen, frontier = {start}, [start]
    while frontier:
        for following in JOB_TRANSITIONS[frontier.pop()]:
            if following not in seen:
                seen.add(following)
                frontier.append(following)
    return seen


def test_every_status_is_reachable_from_a_new_job() -> None:
    assert reachable_from(JobStatus.QUEUED) == set(JobStatus)


def test_only_finished_jobs_go_nowhere() -> None:
    assert {status for status, moves in JOB_TRANSITIONS.items() if not moves} == {
        status for status in JobStatus if status.completed
    }


def test_a_blocked_job_goes_back_to_the_queue_or_ends_and_only_an_unknown_one_may_count_as_sent() -> None:
    for status in (JobStatus.FAILED, JobStatus.UNKNOWN):
        assert JobStatus.QUEUED in JOB_TRANSITIONS[status]
    assert JobStatus.SUCCEEDED in JOB_TRANSITIONS[JobStatus.UNKNOWN]
    assert JobStatus.SUCCEEDED not in JOB_TRANSITIONS[JobStatus.FAILED]


def test_only_an_unknown_job_is_taken_back_to_running_to_be_settled_a_failed_one_never() -> None:
    assert JobStatus.RUNNING in JOB_TRANSITIONS[JobStatus.UNKNOWN]
    assert JobStatus.RUNNING not in JOB_TRANSITIONS[JobStatus.FAILED]


def test_every_job_reaches_the_end_from_wherever_it_is() -> None:
    finished = {status for status in JobStatus if status.completed}
    assert all(reachable_from(status) & finished for status in JobStatus)
