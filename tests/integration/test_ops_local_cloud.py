"""Operators on the local cloud: a poison IM push lands in its DLQ; once the cause is gone, `herald-ops dlq
redrive` delivers it once, in order with its group, and a redrive interrupted half way and resumed later
sends nothing twice."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from herald_ops.dlq import DeadLetterQueue, Journal, Redrive, dead_letter_queues
from herald_ops.template import StackTemplate

from tests.integration.test_confirms_local_cloud import Client, im_messages, new_user
from tests.support.local_cloud import REPO, LocalCloudProcess
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration


def herald(cloud: LocalCloudProcess, *args: str) -> list[dict[str, Any]]:
    command = [sys.executable, "-m", "herald_ops.cli", "dlq", *args, "--state-file", str(cloud.state_file), "--json"]
    result = subprocess.run(command, check=False, capture_output=True, text=True, cwd=REPO, timeout=120)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def im_dlq(cloud: LocalCloudProcess) -> DeadLetterQueue:
    template = StackTemplate.from_file(REPO / "template.yaml", parameter_overrides={"Stage": "local"})
    urls = {logical_id: str(attributes["Ref"]) for logical_id, attributes in cloud.state["resources"].items()}
    (dlq,) = [q for q in dead_letter_queues(template, urls) if q.logical_id == "ImPushDeadLetters"]
    return dlq


class DiesAfterFirstSend:
    """The operator's laptop dies right after the first message reached the queue, before recording it."""

    def __init__(self, sqs: Any) -> None:
        self._sqs = sqs

    def __getattr__(self, name: str) -> Any:
        call = getattr(self._sqs, name)
        if name != "send_message":
            return call

        def send_then_die(**params: Any) -> Any:
            call(**params)
            raise KeyboardInterrupt

        return send_then_die


def test_poison_push_is_dead_lettered_then_redriven_once_in_group_order_after_an_interrupted_run(
    cloud: LocalCloudProcess, tmp_path: Path
) -> None:
    inviter, target = Client(cloud, new_user()), Client(cloud, new_user())
    faults = [{"error_code": 20003, "info": "invalid To_Account"}] * 2
    httpx.post(f"{cloud.fake_url('tencent_im')}/__fake/faults", json=faults)  # both pushes will be refused
    invitation = inviter.invite(target.user)
    dlq = im_dlq(cloud)
    sqs = cloud.client("sqs")

    # SQS hands out up to ten messages of one group in a receive (as moto, corrected, does); fauxqs hands out
    # one, so a peek there shows a group's first message and counts the rest in the depth.
    shown_per_group = 1 if cloud.sqs_endpoint else 10

    def dead_lettered(count: int) -> list[dict[str, Any]]:
        peeked = herald(cloud, "peek", "ImPushDeadLetters", "--max", "50", "--wait", "1")
        mine = [m for m in peeked if target.user in m["group"]]
        assert len(mine) == min(count, shown_per_group), mine
        return mine

    def dlq_depth() -> int:
        return int({row["dlq"]: row["depth"] for row in herald(cloud, "list")}["ImPushDeadLetters"])

    (confirm_push,) = eventually(lambda: dead_lettered(1))
    assert "20003" in confirm_push["failure_reason"]
    confirm_id = json.loads(confirm_push["body"])["confirm_id"]
    assert inviter.invitation(invitation["invitation_id"])  # the owner's record is unaffected
    depth_before = dlq_depth()
    assert target.act(confirm_id, "accept").status_code == 200  # its update push is refused too

    def update_dead_lettered() -> None:
        assert dlq_depth() == depth_before + 1

    eventually(update_dead_lettered)
    pushes = dead_lettered(2)
    expected = [("im_confirm", "pending"), ("im_confirm_update", "accepted")]
    assert [(json.loads(p["body"])["kind"], json.loads(p["body"])["status"]) for p in pushes] == expected[: len(pushes)]
    listed = {row["dlq"]: row for row in herald(cloud, "list")}
    assert listed["ImPushDeadLetters"]["source"] == "ImPushQueue"
    assert im_messages(cloud, target.user) == []

    plan = herald(cloud, "redrive", "ImPushDeadLetters")[0]
    assert plan["dry_run"] is True and plan["to"] == "ImPushQueue"
    assert dlq_depth() == depth_before + 1 and dead_lettered(2)  # the plan moved nothing

    # The cause is gone (the fake's faults are used up). A redrive dies after its first send ...
    journal = tmp_path / "redrive.json"
    with pytest.raises(KeyboardInterrupt):
        Redrive(DiesAfterFirstSend(sqs), dlq, Journal.open(journal), rate_per_s=0, visibility_s=2).run(100)
    assert list(Journal.open(journal).entries.values()) == ["sending"]

    # ... and is resumed later with the same journal: the first push is not sent again.
    def redriven() -> None:
        report = herald(cloud, "redrive", "ImPushDeadLetters", "--execute", "--journal", str(journal), "--rate", "50")
        assert report[0]["to"] == "ImPushQueue"
        depth = {row["dlq"]: row["depth"] for row in herald(cloud, "list")}["ImPushDeadLetters"]
        assert depth == 0  # counting messages still held by the interrupted run

    eventually(redriven, timeout=30)

    def delivered_once_in_order() -> None:
        kinds = [(m["data"]["type"], m["data"].get("status")) for m in im_messages(cloud, target.user)]
        assert kinds == [("im_confirm", "pending"), ("im_confirm_update", "accepted")], kinds

    eventually(delivered_once_in_order)
    assert Journal.open(journal).entries == {}


def test_purge_asks_first_and_stream_failures_are_not_redriven(cloud: LocalCloudProcess) -> None:
    sqs = cloud.client("sqs")
    url = cloud.resource("TurnsDeadLetters")
    sqs.send_message(QueueUrl=url, MessageBody="{}", MessageGroupId="s/a", MessageDeduplicationId="poison")
    base = [sys.executable, "-m", "herald_ops.cli", "dlq"]
    state = ["--state-file", str(cloud.state_file), "--json"]
    refused = subprocess.run(
        [*base, "purge", "TurnsDeadLetters", *state],
        input="no\n",
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert refused.returncode == 2 and "nothing deleted" in refused.stderr
    assert {row["dlq"]: row["depth"] for row in herald(cloud, "list")}["TurnsDeadLetters"] == 1
    assert herald(cloud, "purge", "TurnsDeadLetters", "--yes") == [{"dlq": "TurnsDeadLetters", "purged": True}]
    assert {row["dlq"]: row["depth"] for row in herald(cloud, "list")}["TurnsDeadLetters"] == 0
    not_a_queue = subprocess.run(
        [*base, "redrive", "StreamFailures", "--execute", *state], capture_output=True, text=True, cwd=REPO, check=False
    )
    assert not_a_queue.returncode == 2 and "stream failures" in not_a_queue.stderr
