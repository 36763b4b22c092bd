"""The audit log's rules, in memory: a record is written before its act with its arguments as text, gets its
outcome once, and is listed newest first by actor and verb."""

from __future__ import annotations

from herald.audit.models import BEGUN, RETENTION_DAYS
from herald.audit.service import AuditLog
from tests.support.clock import FakeClock
from tests.support.fakes import InMemoryAuditStore


def test_an_act_is_recorded_before_it_runs_and_given_its_outcome_once() -> None:
    store, clock = InMemoryAuditStore(), FakeClock(1_000)
    log = AuditLog(store, clock=clock)
    record = log.begin("ana", "keys revoke", "k1", {"key_id": "k1", "cap": ("/a", "/b")})
    assert store.records[record.record_id].outcome == BEGUN  # on the record before the act runs
    assert record.arguments == {"cap": "/a,/b", "key_id": "k1"}
    clock.advance(250)
    finished = log.finish(record, "ok")
    assert (finished.outcome, finished.finished_at_ms) == ("ok", 1_250)
    assert not store.finish(finished.finished("refused: forged", 2_000))  # a second outcome changes nothing
    assert store.records[record.record_id].outcome == "ok"
    assert record.expires_at_s == 1 + RETENTION_DAYS * 86_400


def test_records_are_listed_newest_first_by_part_of_their_actor_or_verb_and_since_a_time() -> None:
    clock = FakeClock(10_000)
    log = AuditLog(InMemoryAuditStore(), clock=clock)
    for actor, verb in [("ana", "events resolve"), ("bo", "keys revoke"), ("ana", "events pause")]:
        log.begin(actor, verb, "t", {})
        clock.advance(1_000)
    assert [r.verb for r in log.listed()] == ["events pause", "keys revoke", "events resolve"]
    assert [r.verb for r in log.listed(actor="ana")] == ["events pause", "events resolve"]
    assert [r.actor for r in log.listed(verb="revoke")] == ["bo"]
    assert [r.verb for r in log.listed(since_ms=11_000)] == ["events pause", "keys revoke"]
    assert [r.verb for r in log.listed(limit=1)] == ["events pause"]


def test_a_long_argument_is_cut_so_a_record_stays_small() -> None:
    log = AuditLog(InMemoryAuditStore(), clock=FakeClock(0))
    record = log.begin("ana", "events resolve", "j", {"note": "x" * 5_000})
    assert len(record.arguments["note"]) == 512 and record.arguments["note"].endswith("…")
