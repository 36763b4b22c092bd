"""An operator's command builds Herald's services from the settings the deployed stack runs with (its HTTP
function's environment), not from defaults: a job an operator skips expires after the stack's retention."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
import yaml
from herald_ops.cli import main
from moto import mock_aws

from herald.clock import now_ms
from herald.events.dynamo import DynamoEventStore
from herald.events.models import ExternalEvent, Lane
from herald_dev import moto_patches
from tests.support.aws import create_stack

STACK = "herald-prod"
RETENTION_S = 3 * 86_400  # the stack's own, not the default 7 days
EVENT: dict[str, Any] = {
    "event_type": "job.finished",
    "data": {
        "title": "nightly",
        "status": "failed",
        "summary": "",
        "target": {"receive_id": "oc_1", "receive_id_type": "chat_id"},
    },
}


@pytest.fixture
def deployed() -> Iterator[str]:
    """The tables of template.yaml, and a stack whose HTTP function runs with their names and its retention."""
    moto_patches.install()
    with mock_aws():
        tables = create_stack("prod")
        environment = {
            name: tables.resolve(value)
            for name, value in tables.function_properties("HttpApiFunction")["Environment"]["Variables"].items()
        }
        environment["HERALD_EVENTS_RETENTION_SECONDS"] = str(RETENTION_S)
        template = {
            "Resources": {
                "Role": {
                    "Type": "AWS::IAM::Role",
                    "Properties": {"AssumeRolePolicyDocument": {"Version": "2012-10-17", "Statement": []}},
                },
                "HttpApiFunction": {
                    "Type": "AWS::Lambda::Function",
                    "Properties": {
                        "Runtime": "python3.11",
                        "Handler": "app.handler",
                        "Role": {"Fn::GetAtt": ["Role", "Arn"]},
                        "Code": {"ZipFile": "def handler(event, context): pass"},
                        "Environment": {"Variables": {k: str(v) for k, v in environment.items() if v != ""}},
                    },
                },
            }
        }
        boto3.client("cloudformation").create_stack(StackName=STACK, TemplateBody=yaml.safe_dump(template))
        yield environment["HERALD_EVENTS_TABLE"]


def test_an_operators_resolution_follows_the_deployed_stacks_retention(deployed: str) -> None:
    store = DynamoEventStore(deployed)
    job = store.append(Lane("scheduler"), ExternalEvent.from_content("e1", EVENT), now_ms)
    job = store.commit(job, job.claimed("attempt-1", now_ms() + 60_000), now_ms())
    store.commit(job, job.failed("Feishu refused it", now_ms(), None), now_ms())

    before = now_ms()
    assert main(["events", "resolve", "scheduler:1", "--skip", "--by", "alice", "--stack", STACK]) == 0

    item = boto3.client("dynamodb").get_item(
        TableName=deployed, Key={"pk": {"S": "SVC#scheduler"}, "sk": {"S": "JOB#000000000001"}}
    )["Item"]
    expires_at_s = int(item["expires_at"]["N"])
    assert item["status"]["S"] == "skipped"
    assert before // 1000 + RETENTION_S - 5 <= expires_at_s <= now_ms() // 1000 + RETENTION_S + 5


def test_an_operator_sees_a_superseded_revision_and_the_revision_sent_instead(
    deployed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    store = DynamoEventStore(deployed)
    revisions = [{**EVENT, "data": {**EVENT["data"], "event_id": "build-7", "revision": r}} for r in (1, 2)]
    old, new = (
        store.append(Lane("scheduler"), ExternalEvent.from_content(f"e{n}", event), now_ms)
        for n, event in enumerate(revisions)
    )
    store.commit(old, old.superseded(new, now_ms(), now_ms() + 60_000), now_ms(), advance=True)
    capsys.readouterr()

    assert main(["events", "show", "scheduler:1", "--stack", STACK]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert (shown["status"], shown["outcome"]) == ("superseded", "superseded")
    assert shown["resolutions"][-1] | {"at_ms": 0} == {
        "action": "superseded",
        "by": "herald",
        "at_ms": 0,
        "revision": 2,
        "job_id": "scheduler:2",
    }
    assert main(["events", "show", "scheduler:9", "--stack", STACK]) == 2
    assert "no job scheduler:9" in capsys.readouterr().err
