"""Partners read what became of their events (issue 46, item 4) with the key they post with:
`GET /events/external/{event_id}` and `GET /events/external?status=&page_size=&page_token=`. Every status a job
can reach is shown as it is reached; another service's event reads exactly like one that does not exist."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from herald.auth.service_keys import ServiceKeys
from herald.clock import now_ms
from herald.events.wiring import event_store, operations
from herald_dev.fakes.feishu import FakeFeishu
from tests.functional.test_events import TARGET, Partner
from tests.support.container import reconfigure
from tests.support.events import EventsPipeline

OTHER_CHAT = {"receive_id": "oc_other", "receive_id_type": "chat_id"}


class Reader(Partner):
    def fate(self, event_id: str) -> dict[str, Any]:
        answer = self.read(event_id)
        assert answer.status_code == 200, answer.text
        return answer.json()["data"]  # type: ignore[no-any-return]

    def read(self, event_id: str) -> Any:
        return self.api.get(f"/events/external/{event_id}", headers=self.headers)

    def page(self, **query: Any) -> Any:
        return self.api.get("/events/external", params=query, headers=self.headers)


@pytest.fixture
def partner(api: TestClient, service_keys: ServiceKeys) -> Reader:
    return Reader(api, service_keys, "scheduler", ["chat_id:oc_ops", "chat_id:oc_other"], order="target")


def attempts(fate: dict[str, Any]) -> list[tuple[str, str, int]]:
    return [(a["operation"], a["outcome"], a["code"]) for a in fate["attempts"]]


def test_an_event_reads_queued_then_succeeded_with_its_message_and_its_one_call(
    partner: Reader, events: EventsPipeline, feishu: FakeFeishu
) -> None:
    before = now_ms()
    partner.accept("e1", title="deployed")
    queued = partner.fate("e1")
    assert queued | {"accepted_at_ms": 0} == {
        "event_id": "e1",
        "event_type": "job.failed",
        "status": "queued",
        "blocked": False,
        "card": None,
        "target": {"receive_id_type": "chat_id", "receive_id": "oc_ops"},
        "message_id": None,
        "superseded_by": None,
        "continued_from": None,
        "attempts": [],
        "accepted_at_ms": 0,
        "completed_at_ms": None,
    }
    assert before <= queued["accepted_at_ms"] <= now_ms()
    events.drain()
    done = partner.fate("e1")
    assert (done["status"], done["blocked"], attempts(done)) == ("succeeded", False, [("send", "done", 0)])
    assert done["message_id"] == feishu.log[0]["message_id"] and done["completed_at_ms"] >= done["accepted_at_ms"]


def test_an_older_revision_reads_superseded_by_the_newer_revisions_event(
    partner: Reader, events: EventsPipeline
) -> None:
    partner.accept("build-r1", event_id="build", revision=1)
    partner.accept("build-r2", event_id="build", revision=2)
    events.drain()
    older, newer = partner.fate("build-r1"), partner.fate("build-r2")
    assert (older["status"], older["superseded_by"], older["attempts"]) == (
        "superseded",
        {"revision": 2, "event_id": "build-r2"},
        [],
    )
    assert older["card"] == {"event_id": "build", "revision": 1} and newer["status"] == "succeeded"


def test_a_refused_event_reads_failed_and_blocked_with_feishus_code_then_skipped_once_an_operator_skips_it(
    partner: Reader, events: EventsPipeline, feishu: FakeFeishu
) -> None:
    feishu.queue_faults({"op": "send", "code": 230001, "status": 400})
    partner.accept("e1")
    events.drain()
    failed = partner.fate("e1")
    assert (failed["status"], failed["blocked"], attempts(failed)) == ("failed", True, [("send", "refused", 230001)])
    operations().skip(event_store().event_job("scheduler", "e1").job_id, by="alice")  # type: ignore[union-attr]
    skipped = partner.fate("e1")
    assert (skipped["status"], skipped["blocked"]) == ("skipped", False) and skipped["completed_at_ms"]
    assert "alice" not in str(skipped)  # an operator's name is not the partner's to read


def test_an_unanswered_send_reads_unknown_and_blocked(
    partner: Reader, events: EventsPipeline, feishu: FakeFeishu
) -> None:
    reconfigure(events_send_dedup_window_seconds=0)  # past Feishu's uuid window: left to an operator at once
    feishu.queue_faults({"op": "send", "after_send": True})
    partner.accept("e1")
    events.drain()
    unknown = partner.fate("e1")
    assert (unknown["status"], unknown["blocked"], attempts(unknown)) == ("unknown", True, [("send", "unanswered", 0)])


def test_an_event_whose_target_was_narrowed_away_reads_rejected_and_a_claimed_one_running(
    partner: Reader, events: EventsPipeline, service_keys: ServiceKeys
) -> None:
    partner.accept("e1")
    partner.accept("e2", target=OTHER_CHAT)
    service_keys.create_key("scheduler", ["/events/external"], targets=["chat_id:oc_other"], order="target")
    job = event_store().event_job("scheduler", "e2")
    assert job is not None
    event_store().commit(job, job.claimed("attempt-1", now_ms() + 60_000), now_ms())
    service_keys.revoke(partner.key_id)
    events.drain()
    assert partner.fate("e2")["status"] == "running"
    reader = Reader(partner.api, service_keys, "scheduler", ["chat_id:oc_other"])  # the service's key now
    assert reader.fate("e1")["status"] == "rejected" and reader.fate("e1")["blocked"] is False


def test_a_card_feishu_no_longer_edits_reads_continued_from_its_earlier_message(
    partner: Reader, events: EventsPipeline, feishu: FakeFeishu
) -> None:
    partner.accept("build-r1", event_id="build", revision=1)
    events.drain()
    first = feishu.log[0]["message_id"]
    feishu.recall(first)
    partner.accept("build-r2", event_id="build", revision=2)
    events.drain()
    continued = partner.fate("build-r2")
    assert (continued["status"], continued["continued_from"]) == ("succeeded", first)
    assert attempts(continued) == [("update", "refused", 230011), ("send", "done", 0)]
    assert continued["message_id"] not in (None, first)


def test_another_services_event_and_an_unknown_id_read_the_same_404(
    partner: Reader, api: TestClient, service_keys: ServiceKeys
) -> None:
    partner.accept("e1")
    rival = Reader(api, service_keys, "billing", ["chat_id:oc_ops"])
    theirs, missing = rival.read("e1"), rival.read("nope")
    assert theirs.status_code == missing.status_code == 404
    assert {k: v for k, v in theirs.json().items() if k != "request_id"} == {
        k: v for k, v in missing.json().items() if k != "request_id"
    }
    assert rival.page().json()["data"] == {"items": [], "next_page_token": ""}
    assert api.get("/events/external/e1").status_code == 401


def test_a_key_without_the_events_capability_reads_nothing(api: TestClient, service_keys: ServiceKeys) -> None:
    key, _ = service_keys.create_key("scheduler", ["/internal/v1/inbox"])
    answer = api.get("/events/external/e1", headers={"Authorization": f"Bearer {key}"})
    assert answer.status_code == 403


def test_the_list_is_newest_first_paged_and_filtered_by_status(
    partner: Reader, events: EventsPipeline, feishu: FakeFeishu
) -> None:
    for n in range(5):
        partner.accept(f"e{n}", target=OTHER_CHAT if n == 4 else TARGET)
    events.drain()
    feishu.queue_faults({"op": "send", "code": 230001, "status": 400})
    partner.accept("e5")
    events.drain()
    seen, token = [], ""
    while True:
        answer = partner.page(page_size=2, **({"page_token": token} if token else {}))
        assert answer.status_code == 200, answer.text
        page = answer.json()["data"]
        assert len(page["items"]) <= 2
        seen += [item["event_id"] for item in page["items"]]
        if not (token := page["next_page_token"]):
            break
    assert seen == ["e5", "e4", "e3", "e2", "e1", "e0"]
    failed = partner.page(status="failed").json()["data"]
    assert [item["event_id"] for item in failed["items"]] == ["e5"] and failed["next_page_token"] == ""
    first_page = partner.page(page_size=2).json()["data"]["next_page_token"]
    assert partner.page(page_size=2, page_token=first_page, status="failed").status_code == 400  # another query's


@pytest.mark.parametrize(
    "query",
    [{"status": "lost"}, {"page_size": 0}, {"page_size": 101}, {"page_token": "not-a-token"}, {"page_size": "x"}],
)
def test_a_careless_listing_is_a_clear_400(partner: Reader, query: dict[str, Any]) -> None:
    answer = partner.page(**query)
    assert answer.status_code == 400 and answer.json()["code"] == "INVALID_ARGUMENT", answer.text


def test_a_key_of_the_same_service_for_another_tenant_reads_none_of_its_events(
    partner: Reader, api: TestClient, service_keys: ServiceKeys
) -> None:
    """Service ids are the stack's; an event is read only for the tenant it was accepted for."""
    partner.accept("e1")
    key, _ = service_keys.create_key("scheduler", ["/events/external"], ["globex"], targets=["chat_id:oc_ops"])
    other_tenant = {"Authorization": f"Bearer {key}"}
    assert api.get("/events/external/e1", headers=other_tenant).status_code == 404
    assert api.get("/events/external", headers=other_tenant).json()["data"]["items"] == []
    assert partner.fate("e1")["status"] == "queued"


def test_an_event_id_with_a_slash_reads_the_same_written_plainly_or_escaped(partner: Reader) -> None:
    partner.accept("ci/run-7")
    assert partner.fate("ci/run-7")["event_id"] == partner.fate("ci%2Frun-7")["event_id"] == "ci/run-7"
