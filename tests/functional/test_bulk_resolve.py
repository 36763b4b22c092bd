"""Issue 48, item 2, on moto: `herald-ops events resolve --service S ... (--requeue | --skip)` plans which blocked
jobs it takes and what each becomes, changes nothing without `--execute`, and then does exactly what it planned,
lane by lane, in one audited act."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from herald_ops.cli import main
from herald_ops.stack import DEFAULT_TEMPLATE, Stack

from herald.auth.service_keys import ServiceKeys
from herald.container import current
from herald_dev.fakes.feishu import FakeFeishu
from tests.functional.test_events import Partner, job_statuses
from tests.support.events import EventsPipeline

TARGETS = ["chat_id:oc_a", "chat_id:oc_b", "chat_id:oc_c"]


@pytest.fixture
def operator(monkeypatch: pytest.MonkeyPatch, events: EventsPipeline, tmp_path: Path) -> None:
    """herald-ops acting on this test's stack (its container), as the local user `ana`."""
    stack = Stack(None, None, None, tmp_path / "local.json", DEFAULT_TEMPLATE)
    stack.__dict__.update(container=current(), actor="ana")
    for module in ("herald_ops.commands.events", "herald_ops.commands.audit"):
        monkeypatch.setattr(f"{module}.stack_of", lambda **_: stack)


@pytest.fixture
def three_lanes_unknown(api: TestClient, service_keys: ServiceKeys, feishu: FakeFeishu, events: EventsPipeline) -> None:
    """A partner ordering by target; each lane's first card arrived but was answered 500: UNKNOWN, blocking."""
    partner = Partner(api, service_keys, "deploys", TARGETS, order="target")
    feishu.queue_faults(*[{"op": "send", "after_send": True}] * 3)
    for n, target in enumerate(TARGETS):
        kind, receive_id = target.split(":")
        partner.accept(f"d{n}", title=f"to {receive_id}", target={"receive_id": receive_id, "receive_id_type": kind})
    events.drain()
    assert [job_statuses(f"deploys/{target}") for target in TARGETS] == [["unknown"]] * 3


def resolve(capsys: pytest.CaptureFixture[str], *args: str, code: int = 0) -> list[dict[str, Any]]:
    capsys.readouterr()
    assert main(["events", "resolve", *args, "--json"]) == code
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]


def audit_records() -> list[Any]:
    from herald.audit.wiring import audit_log

    return audit_log(current()).listed()


def test_a_bulk_resolution_plans_first_and_then_does_exactly_what_it_planned(
    operator: None, three_lanes_unknown: None, capsys: pytest.CaptureFixture[str]
) -> None:
    planned = resolve(capsys, "--service", "deploys", "--status", "unknown", "--skip", "--note", "outage 12:00")
    assert [(row["lane"], row["becomes"]) for row in planned] == [(f"deploys/{t}", "skipped") for t in TARGETS]
    assert [job_statuses(f"deploys/{target}") for target in TARGETS] == [["unknown"]] * 3  # nothing changed
    assert audit_records() == []  # a plan is not an act
    done = resolve(capsys, "--service", "deploys", "--status", "unknown", "--skip", "--execute", "--note", "outage")
    assert [row["job_id"] for row in done] == [row["job_id"] for row in planned]
    assert {row["outcome"] for row in done} == {"skipped"}
    assert [job_statuses(f"deploys/{target}") for target in TARGETS] == [["skipped"]] * 3
    (record,) = audit_records()
    assert (record.actor, record.verb, record.target) == ("ana", "events resolve", "deploys")
    assert record.outcome == "ok resolved=3 planned=3" and record.arguments["status"] == "unknown"


def test_a_bulk_resolution_narrows_to_one_target_and_to_what_was_blocked_since_a_time(
    operator: None, three_lanes_unknown: None, capsys: pytest.CaptureFixture[str]
) -> None:
    one = resolve(capsys, "--service", "deploys", "--target", "chat_id:oc_b", "--all-blocked", "--requeue")
    assert [(row["lane"], row["becomes"]) for row in one] == [("deploys/chat_id:oc_b", "queued")]
    assert resolve(capsys, "--service", "deploys", "--all-blocked", "--skip", "--since", "2999-01-01") == []
    assert resolve(capsys, "--service", "deploys", "--status", "failed", "--skip") == []  # they are unknown


def test_a_bulk_resolution_without_a_scope_or_with_a_job_too_is_a_usage_error_and_changes_nothing(
    operator: None, three_lanes_unknown: None, capsys: pytest.CaptureFixture[str]
) -> None:
    resolve(capsys, "--service", "deploys", "--skip", "--execute", code=2)  # neither --status nor --all-blocked
    resolve(capsys, "--service", "deploys", "--status", "unknown", "--all-blocked", "--skip", code=2)
    resolve(capsys, "deploys/chat_id:oc_a:1", "--service", "deploys", "--skip", code=2)
    resolve(capsys, "--status", "unknown", "--skip", code=2)  # no service
    resolve(capsys, "--service", "deploys", "--status", "unknown", "--sent", "om_1", "--execute", code=2)
    assert [job_statuses(f"deploys/{target}") for target in TARGETS] == [["unknown"]] * 3
