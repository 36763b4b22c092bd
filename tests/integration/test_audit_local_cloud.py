"""Issue 48, item 4, on the local cloud (DynamoDB Local + fauxqs where configured): every herald-ops verb that
changes anything writes exactly one audit record, whatever its outcome; a plan writes none. The verbs are found by
walking the command tree, so a verb added later without a record (or without a sample run here) fails."""

from __future__ import annotations

import json
from typing import Any

import pytest
from herald_ops.cli import main

from tests.functional.test_audit_log import audited_verbs
from tests.support.local_cloud import LocalCloudProcess

pytestmark = pytest.mark.integration

# One run of each audited verb, in an order where each finds what it needs ("{key_id}": the key made above it).
SAMPLE_RUNS: list[tuple[str, list[str]]] = [
    ("keys create", ["--service", "audited-svc", "--cap", "/events/external"]),
    ("keys rotate", ["{key_id}"]),
    ("keys revoke", ["{key_id}"]),
    ("tenants set", ["audited-app", "--display-name", "Audited"]),
    ("tenants disable", ["audited-app"]),
    ("tenants enable", ["audited-app"]),
    ("events pause", ["--service", "audited-svc", "--note", "walk"]),
    ("events resume", ["--service", "audited-svc"]),
    ("events resolve", ["no-such-job", "--skip"]),
    ("confirms pause", ["--tenant", "audited-app"]),
    ("confirms resume", ["--tenant", "audited-app"]),
    ("confirms repair", ["cf_no_such_confirm"]),
    ("owners disable", ["audited_type"]),
    ("owners enable", ["audited_type"]),
    ("owners release", ["audited_type", "--confirm", "audited_type"]),
    ("owners transfer", ["audited_type", "--to", "other-svc"]),
    ("dlq redrive", ["TurnsDeadLetters", "--execute", "--max", "1"]),
    ("dlq purge", ["TurnsDeadLetters", "--yes"]),
]


def ops(cloud: LocalCloudProcess, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[dict[str, Any]]]:
    capsys.readouterr()
    code = main([*args, "--state-file", str(cloud.state_file), "--json"])
    out = capsys.readouterr().out
    return code, [json.loads(line) for line in out.splitlines() if line.strip().startswith("{")]


def records(cloud: LocalCloudProcess, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    code, found = ops(cloud, capsys, "audit", "--limit", "1000")
    assert code == 0
    return found


def test_every_verb_that_changes_anything_writes_exactly_one_audit_record(
    cloud: LocalCloudProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    assert {verb for verb, _ in SAMPLE_RUNS} == audited_verbs()  # a new verb needs its run here
    key_id = ""
    for verb, arguments in SAMPLE_RUNS:
        before = {r["record_id"] for r in records(cloud, capsys)}
        capsys.readouterr()
        given = [argument.format(key_id=key_id) for argument in arguments]
        code = main([*verb.split(), *given, "--state-file", str(cloud.state_file)])
        shown = capsys.readouterr()
        if verb == "keys create":
            key_id = str(ops(cloud, capsys, "keys", "list", "--service", "audited-svc")[1][0]["key_id"])
        new = [r for r in records(cloud, capsys) if r["record_id"] not in before]
        assert len(new) == 1, (verb, new)
        (record,) = new
        outcome = str(record["outcome"])
        assert record["verb"] == verb and outcome.startswith("ok" if code == 0 else "refused: "), (shown.err, record)
        assert record["actor"] and record["finished_at_ms"] is not None


def test_a_plan_changes_nothing_and_writes_no_record(
    cloud: LocalCloudProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    before = len(records(cloud, capsys))
    assert ops(cloud, capsys, "dlq", "redrive", "TurnsDeadLetters")[0] == 0
    assert len(records(cloud, capsys)) == before
