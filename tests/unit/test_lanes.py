"""Lanes as values: how a lane, a job id and a dispatch message name one, and the FIFO ids SQS takes."""

from __future__ import annotations

import pytest

from herald.events.jobs import Job
from herald.events.models import ExternalEvent, Lane, Target, parse_job_id
from herald.events.nudges import DISPATCH_VERSION, Nudge, nudges_for
from herald.fifo import fifo_id

OPS = Target("chat_id", "oc_ops")


def job(by_target: bool, target: Target = OPS) -> Job:
    event = ExternalEvent("e1", "job.progress", "t", "running", "", target)
    return Job("progress", 7, event, event.content_hash, 1_000, by_target=by_target)


def test_a_jobs_lane_is_its_service_unless_the_service_orders_by_target() -> None:
    assert job(False).lane == Lane("progress") and job(False).job_id == "progress:7"
    assert job(True).lane == Lane("progress", "chat_id:oc_ops") and job(True).job_id == "progress/chat_id:oc_ops:7"


@pytest.mark.parametrize("job_id", ["progress:7", "progress/chat_id:oc_ops:7", "progress/email:a@b.example:7"])
def test_a_job_id_names_its_lane_and_sequence(job_id: str) -> None:
    lane, seq = parse_job_id(job_id)
    assert f"{lane}:{seq}" == job_id and Lane.parse(lane).key == lane


@pytest.mark.parametrize(
    "job_id",
    ["progress", ":7", "progress/:7", "/chat_id:oc_ops:7", "progress/oc_ops:7", "progress:-1", "x" * 301 + ":1"],
)
def test_a_malformed_job_id_is_refused(job_id: str) -> None:
    with pytest.raises(ValueError):
        parse_job_id(job_id)


def test_a_new_job_and_a_resolved_one_nudge_their_own_lane() -> None:
    (new,) = nudges_for(None, job(True))
    message = {"v": DISPATCH_VERSION, "lane": new.lane, "seq": 7, "why": "new"}
    assert (new.lane, new.to_message()) == ("progress/chat_id:oc_ops", message)


@pytest.mark.parametrize(
    ("message", "lane"),
    [
        ({"lane": "progress/chat_id:oc_ops", "seq": 1}, "progress/chat_id:oc_ops"),
        ({"v": 1, "lane": "progress", "seq": 1, "why": "new"}, "progress"),
        ({"service_id": "scheduler"}, "scheduler"),
    ],
)
def test_a_dispatch_message_names_its_lane_even_one_published_before_lanes(
    message: dict[str, object], lane: str
) -> None:
    assert Nudge.lane_of(message) == lane


@pytest.mark.parametrize(
    "message",
    [{}, {"lane": 7}, {"lane": "progress/"}, {"service_id": ""}, {"v": 2, "lane": "progress"}, {"v": "1", "lane": "p"}],
)
def test_a_malformed_dispatch_message_is_refused(message: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        Nudge.lane_of(message)


def test_a_fifo_id_sqs_would_refuse_becomes_a_stable_digest_and_one_it_takes_is_kept() -> None:
    lane = "progress/email:" + "a" * 150 + "@example.com"
    assert fifo_id("progress/chat_id:oc_ops") == "progress/chat_id:oc_ops"
    assert fifo_id(lane) == fifo_id(lane) != fifo_id(lane + "x") and len(fifo_id(lane)) <= 128
    assert fifo_id("progress/open_id:ou_é") != "progress/open_id:ou_é"  # not ASCII: SQS would refuse it
    assert fifo_id("a b") != "a b"  # nor a space
