"""An operator's commands against a deployed stack (on moto). They build Herald's services from the settings the
stack runs with (its HTTP function's environment), not from defaults: a job an operator skips expires after the
stack's retention. They print tables with local times for people and JSON lines with `--json`, and a listing
with nothing in it says so."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from herald_ops.cli import main

from herald.clock import now_ms
from herald.events.dynamo import DynamoEventStore
from herald.events.jobs import JobStatus
from herald.events.models import ExternalEvent, Lane
from herald.events.records import CallOutcome, provider_call
from herald.events.webhooks.dynamo import DynamoWebhookStore
from herald.events.webhooks.models import StatusWebhook
from herald.webhook_signing import new_secret
from tests.support.deployed import deployed_stack

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
    """A stack whose HTTP function runs with the stack's own retention; its events table's name."""
    with deployed_stack(STACK, {"HERALD_EVENTS_RETENTION_SECONDS": str(RETENTION_S)}) as environment:
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

    assert main(["events", "show", "scheduler:1", "--stack", STACK, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert (shown["status"], shown["outcome"]) == ("superseded", "superseded")
    assert shown["resolutions"][-1] | {"at_ms": 0} == {
        "action": "superseded",
        "by": "herald",
        "at_ms": 0,
        "revision": 2,
        "job_id": "scheduler:2",
        "event_id": "e1",
    }
    assert main(["events", "show", "scheduler:9", "--stack", STACK]) == 2
    assert "no job scheduler:9" in capsys.readouterr().err


def test_what_a_partner_sent_reaches_the_operators_terminal_escaped_in_show_and_resolve(
    deployed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """An event stored before intake refused control characters: its type erased a line, forged a status line and
    set the window title when printed raw."""
    hostile = {**EVENT, "event_type": "job\x1b[2K\rstatus    succeeded\x1b]0;owned\x07\nforged  yes"}
    store = DynamoEventStore(deployed)
    job = store.append(Lane("scheduler"), ExternalEvent.from_content("e1", hostile), now_ms)
    job = store.commit(job, job.claimed("attempt-1", now_ms() + 60_000), now_ms())
    store.commit(job, job.failed("Feishu refused it\x1b[31m", now_ms(), None), now_ms())
    capsys.readouterr()
    show, resolve = ["events", "show", "scheduler:1"], ["events", "resolve", "scheduler:1", "--skip", "--by", "al"]
    for command, as_json in ((show, True), (show, False), (resolve, False)):
        assert main([*command, "--stack", STACK, *(["--json"] if as_json else [])]) == 0
        printed = capsys.readouterr()
        assert "\x1b" not in printed.out + printed.err and "\x07" not in printed.out, command
        assert all(line.isprintable() for line in printed.out.splitlines()), printed.out
        assert not any(line.startswith("forged") for line in printed.out.splitlines())
        if as_json:
            assert json.loads(printed.out)["event_type"] == hostile["event_type"]
        else:
            assert "job\\x1b[2K\\rstatus" in printed.out


EMPTY_LISTINGS = {
    ("events", "blocked"): "Nothing is blocked",
    ("events", "unknown"): "No job is UNKNOWN",
    ("confirms", "stuck"): "No confirm is stuck",
    ("keys", "list"): "No service keys",
    ("owners", "list"): "No owner service has registered",
    ("tenants", "list"): "No tenant is registered",
}


@pytest.mark.parametrize("command", list(EMPTY_LISTINGS), ids=" ".join)
def test_a_listing_with_nothing_to_show_says_so(
    deployed: str, command: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*command, "--stack", STACK]) == 0
    printed = capsys.readouterr()
    assert printed.out.startswith(EMPTY_LISTINGS[command]), printed

    assert main([*command, "--stack", STACK, "--json"]) == 0
    printed = capsys.readouterr()
    assert printed.out == "" and printed.err.startswith(f"# {EMPTY_LISTINGS[command]}"), printed


def test_a_blocked_lane_is_shown_with_local_times_and_ages_and_as_json_with_epoch_milliseconds(
    deployed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    store = DynamoEventStore(deployed)
    job = store.append(Lane("scheduler"), ExternalEvent.from_content("e1", EVENT), now_ms)
    job = store.commit(job, job.claimed("attempt-1", now_ms() + 60_000), now_ms())
    store.commit(job, job.failed("Feishu refused it", now_ms(), None), now_ms())
    capsys.readouterr()

    assert main(["events", "blocked", "--stack", STACK]) == 0
    heading, row = capsys.readouterr().out.splitlines()
    assert heading.split() == ["lane", "job", "id", "status", "why", "blocked", "at", "waiting", "behind"]
    assert row.startswith("scheduler") and "scheduler:1" in row and "Feishu refused it" in row
    assert re.search(r"\d\d:\d\d:\d\d \(\d+ s ago\)", row) and not re.search(r"\d{10}", row), row

    assert main(["events", "blocked", "--stack", STACK, "--json"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    blocked = json.loads(line)
    assert (blocked["job_id"], blocked["status"]) == ("scheduler:1", "failed")
    assert abs(blocked["blocked_at_ms"] - now_ms()) < 60_000


def test_events_show_prints_each_call_to_feishu_as_a_timeline_line_and_as_records_in_json(
    deployed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    store = DynamoEventStore(deployed)
    job = store.append(Lane("scheduler"), ExternalEvent.from_content("e1", EVENT), now_ms, tenant="acme")
    job = store.commit(job, job.claimed("attempt-1", now_ms() + 60_000), now_ms())
    calls = [
        provider_call(now_ms(), "cli_acme", "send", CallOutcome.THROTTLED, code=99991400),
        provider_call(now_ms(), "cli_acme", "send", CallOutcome.UNANSWERED),
    ]
    store.commit(job, job.with_calls(calls).unknown("no answer", now_ms(), None, 0), now_ms())
    capsys.readouterr()
    assert main(["events", "show", "scheduler:1", "--stack", STACK, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["calls"] == calls and shown["tenant"] == "acme"
    assert main(["events", "show", "scheduler:1", "--stack", STACK]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = next(n for n, line in enumerate(lines) if line.startswith("calls "))
    assert lines[at].split() == ["calls", "2"]
    assert "operation=send, outcome=throttled, code=99991400" in lines[at + 1]
    assert "outcome=unanswered" in lines[at + 2] and lines[at + 2].lstrip().startswith("·")


def test_events_webhooks_lists_each_services_webhook_and_never_a_secret(
    deployed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = new_secret()
    hook = StatusWebhook(
        "scheduler", "acme", "https://ci.example.com/hooks", frozenset({JobStatus.FAILED}), secret, 1, 2
    )
    DynamoWebhookStore(deployed).put(hook)
    capsys.readouterr()
    assert main(["events", "webhooks", "--stack", STACK, "--json"]) == 0
    printed = capsys.readouterr().out
    assert json.loads(printed) == {**hook.view(), "previous_secret_until_ms": None} and secret not in printed
    assert main(["events", "webhooks", "--stack", STACK]) == 0
    table = capsys.readouterr().out
    assert "https://ci.example.com/hooks" in table and secret not in table
