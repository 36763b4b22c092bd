"""Issue 48, item 4, on moto: each herald-ops verb that changes anything leaves one audit record (who, the verb,
its target, its arguments but never a secret, its outcome), `herald-ops audit` lists them, and nothing changes a
record: its outcome is given once, and no function's role names the table."""

from __future__ import annotations

import json
from collections.abc import Iterator

import boto3
import click
import pytest
from herald_ops.cli import cli, main
from herald_ops.commands.audit import KIND
from herald_ops.stack import DEFAULT_STATE, DEFAULT_TEMPLATE, Stack
from herald_ops.template import StackTemplate

from herald.audit.dynamo import DynamoAuditStore
from herald.audit.models import BEGUN
from herald.audit.service import AuditLog
from tests.support.aws import REPO
from tests.support.deployed import deployed_stack
from tests.support.deployed import ops as deployed_ops

STACK = "herald-prod"


def leaf_commands(group: click.Group, path: str = "") -> Iterator[tuple[str, click.Command]]:
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from leaf_commands(command, f"{path}{name} ")
        else:
            yield f"{path}{name}", command


def audited_verbs() -> set[str]:
    return {path for path, command in leaf_commands(cli) if getattr(command.callback, KIND, None) == "audited"}


def test_every_herald_ops_verb_is_either_audited_or_declared_to_change_nothing() -> None:
    kinds = {path: getattr(command.callback, KIND, None) for path, command in leaf_commands(cli)}
    assert {path for path, kind in kinds.items() if kind not in ("audited", "reads")} == set()
    assert {"events resolve", "keys revoke", "dlq purge", "tenants disable", "confirms repair"} <= audited_verbs()
    assert {"events show", "keys list", "audit", "dlq peek"} <= {p for p, k in kinds.items() if k == "reads"}


@pytest.fixture
def deployed() -> Iterator[None]:
    with deployed_stack(STACK):
        yield


def ops(capsys: pytest.CaptureFixture[str], *args: str, code: int = 0) -> list[dict[str, object]]:
    return deployed_ops(capsys, STACK, *args, code=code)


def test_a_verb_on_a_deployed_stack_is_recorded_once_with_the_callers_arn_and_never_the_key(
    deployed: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["keys", "create", "--service", "billing", "--cap", "/events/external", "--stack", STACK]) == 0
    key = capsys.readouterr().out.strip()
    (record,) = ops(capsys, "audit")
    arn = boto3.client("sts").get_caller_identity()["Arn"]
    assert (record["actor"], record["verb"], record["target"]) == (arn, "keys create", "billing")
    assert record["arguments"] == {"cap": "/events/external", "service": "billing", "order": "service", "weight": "1"}
    assert str(record["outcome"]).startswith("ok key_id=") and key not in json.dumps(record)


def test_a_refused_verb_is_recorded_with_why_and_listings_filter_by_verb_and_actor(
    deployed: None, capsys: pytest.CaptureFixture[str]
) -> None:
    ops(capsys, "events", "resume", "--service", "ghost", code=2)
    ops(capsys, "events", "pause", "--service", "scheduler", "--note", "migration")
    ops(capsys, "events", "paused")  # a read: no record
    paused, resumed = ops(capsys, "audit")  # newest first
    assert (paused["verb"], paused["target"], paused["outcome"]) == ("events pause", "scheduler", "ok")
    assert (resumed["verb"], resumed["outcome"]) == ("events resume", "refused: nothing is paused as service#ghost")
    assert [r["verb"] for r in ops(capsys, "audit", "--verb", "pause")] == ["events pause"]
    assert ops(capsys, "audit", "--actor", "nobody-like-this") == []
    assert [r["verb"] for r in ops(capsys, "audit", "--since", "2000-01-01")] == ["events pause", "events resume"]
    assert main(["audit", "--since", "last tuesday", "--stack", STACK]) == 2


def test_a_records_outcome_is_given_once_and_a_record_cannot_be_written_over(deployed: None) -> None:
    settings = Stack(STACK, None, None, DEFAULT_STATE, DEFAULT_TEMPLATE).settings
    store = DynamoAuditStore(settings.audit_table, boto3.client("dynamodb"))
    log = AuditLog(store)
    record = log.begin("ana", "keys revoke", "k1", {})
    log.finish(record, "ok")
    assert not store.finish(record.finished("refused: rewritten", 1))
    assert [r.outcome for r in log.listed()] == ["ok"]
    with pytest.raises(Exception, match="ConditionalCheckFailed"):
        store.add(record.finished(BEGUN, 0))


def test_no_functions_role_names_the_audit_table_so_none_can_add_change_or_delete_a_record() -> None:
    """The functions know the table's name (one settings object); their policies never grant it."""
    template = StackTemplate.from_file(REPO / "template.yaml", parameter_overrides={"Stage": "test"})
    granted = [
        json.dumps(resource["Properties"].get("Policies", []))
        for resource in template.of_type("AWS::Serverless::Function").values()
    ] + [json.dumps(resource["Properties"]) for resource in template.of_type("AWS::IAM::Role").values()]
    assert len(granted) > 5 and not any("AuditTable" in policies for policies in granted)
