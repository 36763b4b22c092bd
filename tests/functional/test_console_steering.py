"""Issue 48 in the console, on a deployed stack on moto: the Operate panel pauses and resumes, lists pauses, finds
ids and lists the audit log; each of its acts is recorded as the console's, a refused one with why; a bad pause
is a 400 that writes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.functional.test_console_app import console
from tests.support.deployed import deployed_stack


@pytest.fixture
def page(tmp_path: Path) -> Iterator[TestClient]:
    with deployed_stack("herald-prod"):
        yield console("herald-prod", tmp_path / "none.json")


def test_the_console_pauses_lists_and_resumes_and_each_act_is_on_the_record(page: TestClient) -> None:
    paused = page.post("/console/pauses", json={"what": "events", "service": "deploys", "note": "chat move"})
    assert paused.status_code == 200, paused.text
    assert (paused.json()["paused"], paused.json()["by"]) == ("service#deploys", "console")
    assert page.post("/console/pauses", json={"what": "pushes", "tenant": "acme"}).status_code == 200
    assert [p["paused"] for p in page.get("/console/pauses").json()] == ["service#deploys", "tenant#acme"]
    assert page.post("/console/pauses/resume", json={"key": "service#deploys"}).json() == {
        "resumed": "service#deploys",
        "released": 0,
    }
    assert page.post("/console/pauses/resume", json={"key": "service#deploys"}).status_code == 404
    records = page.get("/console/audit").json()
    assert [(r["actor"], r["verb"], r["target"], r["outcome"]) for r in records] == [
        ("console", "console: resume", "service#deploys", "refused: nothing is paused as service#deploys"),
        ("console", "console: resume", "service#deploys", "ok"),
        ("console", "console: pause", "tenant#acme", "ok"),
        ("console", "console: pause", "service#deploys", "ok"),
    ]
    assert [r["target"] for r in page.get("/console/audit", params={"verb": "pause"}).json()] == [
        "tenant#acme",
        "service#deploys",
    ]


@pytest.mark.parametrize(
    "body",
    [
        {"what": "events"},
        {"what": "events", "service": "deploys", "tenant": "acme"},
        {"what": "events", "service": "a/b"},
        {"what": "events", "tenant": "acme", "target": "chat_id:oc_1"},
        {"what": "pushes", "tenant": "NOT A TENANT"},
        {"what": "everything", "tenant": "acme"},
        {"what": "events", "service": "s" * 65},
    ],
)
def test_a_pause_the_console_cannot_name_is_a_400_and_writes_nothing(page: TestClient, body: dict[str, str]) -> None:
    assert page.post("/console/pauses", json=body).status_code == 400
    assert page.get("/console/pauses").json() == [] and page.get("/console/audit").json() == []


def test_the_search_box_says_nothing_is_known_by_an_id_nobody_issued_and_refuses_an_empty_one(
    page: TestClient,
) -> None:
    assert page.get("/console/find", params={"id": "cfm_nobody"}).json() == []
    assert page.get("/console/find", params={"id": ""}).status_code == 400
    assert page.post("/console/events/resolve-many", json={"service": "deploys", "action": "skip"}).json() == {
        "plan": []
    }


def test_a_selection_of_blocked_jobs_is_planned_then_resolved_on_the_console_as_one_audited_act(
    tmp_path: Path,
) -> None:
    from herald.clock import now_ms
    from herald.events.dynamo import DynamoEventStore
    from herald.events.models import ExternalEvent, Lane

    with deployed_stack("herald-prod") as environment:
        store = DynamoEventStore(environment["HERALD_EVENTS_TABLE"])
        for chat in ("oc_a", "oc_b", "oc_c"):
            target = {"receive_id": chat, "receive_id_type": "chat_id"}
            event = {"event_type": "job.done", "data": {"title": chat, "status": "ok", "target": target}}
            job = store.append(Lane("deploys", f"chat_id:{chat}"), ExternalEvent.from_content(chat, event), now_ms)
            running = store.commit(job, job.claimed("attempt-1", now_ms() + 20_000), now_ms())
            store.commit(running, running.failed("230002: the bot is not in the chat", now_ms(), None), now_ms())
        page = console("herald-prod", tmp_path / "none.json")
        chosen = ["deploys/chat_id:oc_a:1", "deploys/chat_id:oc_c:1"]
        body = {"service": "deploys", "action": "skip", "job_ids": chosen}
        planned = page.post("/console/events/resolve-many", json=body).json()["plan"]
        assert [row["job_id"] for row in planned] == chosen and page.get("/console/audit").json() == []
        done = page.post("/console/events/resolve-many", json={**body, "execute": True}).json()
        assert done["resolved"] == 2 and [row["outcome"] for row in done["plan"]] == ["skipped", "skipped"]
        left = page.post("/console/events/resolve-many", json={"service": "deploys", "action": "skip"}).json()["plan"]
        assert [row["job_id"] for row in left] == ["deploys/chat_id:oc_b:1"]  # the one not chosen still blocks
        (record,) = page.get("/console/audit").json()
        assert (record["verb"], record["target"], record["arguments"]["jobs"]) == (
            "console: events resolve",
            "deploys",
            ",".join(chosen),
        )


def test_the_operators_name_the_page_keeps_is_recorded_with_an_act_and_a_control_character_in_it_is_a_400(
    page: TestClient,
) -> None:
    named = page.post("/console/pauses", json={"what": "events", "service": "deploys", "by": "Ana"})
    assert named.status_code == 200 and named.json()["by"] == "Ana"
    (record,) = page.get("/console/audit").json()
    assert record["actor"] == "console (Ana)"
    forged = page.post("/console/pauses/resume", json={"key": "service#deploys", "by": "Ana\x1b[2J\rroot"})
    assert forged.status_code == 400
    assert [p["paused"] for p in page.get("/console/pauses").json()] == ["service#deploys"]  # still paused
