"""The agent turn queue in process on moto (contract §4), through the real HTTP app, the turns
table's stream and the outbox function; the test plays the engine (it reads the turn queue and finishes)."""

from __future__ import annotations

from typing import Any

import pytest

from herald.auth.service_keys import ServiceKeys
from herald.turns.models import TurnState
from herald.turns.wiring import turn_store
from tests.support.turns import TurnsHarness, member


@pytest.fixture
def session(turns: TurnsHarness) -> TurnsHarness:
    assert turns.session().status_code == 200
    return turns


def start_turn(turns: TurnsHarness, text: str = "hello", user: str = "alice") -> str:
    response = turns.post(user, text)
    assert response.status_code == 202, response.text
    assert response.json()["data"]["delivery"] == "started"
    (turn,) = turns.next_turns()
    return str(turn["turn_id"])


def queue(turns: TurnsHarness, text: str, user: str = "alice", lang: str | None = None) -> dict[str, Any]:
    response = turns.post(user, text, **({"lang": lang} if lang else {}))
    assert response.status_code == 202, response.text
    return response.json()["data"]  # type: ignore[no-any-return]


def types(events: list[dict[str, Any]]) -> list[str]:
    return [event["type"] for event in events]


def reason(response: Any) -> str:
    return str(response.json()["data"]["reason"])


# ---------------------------------------------------------------------------------------------- rule 1
def test_message_with_no_turn_running_starts_one_and_the_engine_gets_it(session: TurnsHarness) -> None:
    response = session.post("alice", "what is the status?", lang="en")
    assert response.status_code == 202
    data = response.json()["data"]
    assert data["delivery"] == "started" and "position" not in data
    (turn,) = session.next_turns()
    assert turn["session_id"] == "s1" and turn["agent"] == "po"
    assert turn["text"] == "what is the status?" and turn["lang"] == "en"
    assert turn["message_ids"] == [data["message_id"]]
    assert types(session.events()) == ["chat.message", "chat.message_delivered", "turn.started"]


def test_message_during_a_turn_is_queued_durably_with_its_position(session: TurnsHarness) -> None:
    start_turn(session)
    first = queue(session, "one")
    second = queue(session, "two")
    assert (first["delivery"], first["position"]) == ("queued", 1)
    assert (second["delivery"], second["position"]) == ("queued", 2)
    assert session.next_turns() == []  # nothing reaches the engine while the turn runs
    queued = [e for e in session.events() if e["type"] == "chat.message_queued"]
    assert [(e["data"]["message_id"], e["data"]["text"], e["data"]["position"]) for e in queued] == [
        (first["message_id"], "one", 1),
        (second["message_id"], "two", 2),
    ]
    # Durable: what the routes and the delivery read is stored, not held by a process.
    stored = turn_store().agent("lalu", "s1", "po")
    assert [m.text for m in stored.pending] == ["one", "two"]


# ---------------------------------------------------------------------------------------------- rule 2
def test_finish_delivers_every_pending_message_as_one_numbered_turn_in_the_newest_language(
    session: TurnsHarness,
) -> None:
    turn_id = start_turn(session)
    ids = [queue(session, text, lang=lang)["message_id"] for text, lang in (("one", "pt"), ("two\nlines", "en"))]
    ids.append(queue(session, "three")["message_id"])  # no language named: the newest that named one counts
    finished = session.step(turn_id)
    assert finished.status_code == 200
    assert finished.json()["data"]["state"] == "running" and finished.json()["data"]["pending"] == 0
    (turn,) = session.next_turns()
    assert turn["message_ids"] == ids
    assert turn["lang"] == "en"
    assert turn["text"] == (
        "3 messages arrived while you were working; read them together, in order:\n1. one\n2. two\n   lines\n3. three"
    )
    delivered = [e for e in session.events() if e["type"] == "chat.message_delivered"][-1]
    assert delivered["data"]["message_ids"] == ids and delivered["data"]["turn_id"] == turn["turn_id"]


def test_finish_with_one_pending_message_delivers_it_as_itself(session: TurnsHarness) -> None:
    turn_id = start_turn(session)
    queue(session, "just this", lang="pt")
    session.step(turn_id)
    (turn,) = session.next_turns()
    assert (turn["text"], turn["lang"]) == ("just this", "pt")


def test_finish_with_nothing_pending_leaves_the_agent_idle_and_a_repeated_finish_is_answered(
    session: TurnsHarness,
) -> None:
    turn_id = start_turn(session)
    first = session.step(turn_id)
    again = session.step(turn_id)
    assert first.status_code == again.status_code == 200
    assert again.json()["data"] == first.json()["data"]
    assert first.json()["data"]["state"] == "idle" and first.json()["data"]["turn_id"] is None
    assert types(session.events()).count("turn.finished") == 1
    assert session.next_turns() == []


def test_finishing_a_turn_that_is_not_current_is_409(session: TurnsHarness) -> None:
    turn_id = start_turn(session)
    queue(session, "next")
    session.step(turn_id)
    session.next_turns()
    session.step(turn_id)  # the old one again: answered (it was finished)
    stale = session.step("turn_unknown")
    assert stale.status_code == 409 and reason(stale) == "turn_not_current"


# ---------------------------------------------------------------------------------------------- rule 3
def test_sender_cancels_a_waiting_message_and_it_is_not_delivered(session: TurnsHarness) -> None:
    turn_id = start_turn(session)
    keep = queue(session, "keep")["message_id"]
    drop = queue(session, "drop")["message_id"]
    response = session.cancel("alice", drop)
    assert response.status_code == 200
    assert response.json()["data"] == {"message_id": drop, "status": "cancelled"}
    cancelled = [e for e in session.events() if e["type"] == "chat.message_cancelled"]
    assert [(e["data"]["message_id"], e["data"]["by"]) for e in cancelled] == [(drop, "alice")]
    session.step(turn_id)
    (turn,) = session.next_turns()
    assert turn["message_ids"] == [keep] and turn["text"] == "keep"


def test_cancelling_someone_elses_message_is_403_and_changes_nothing(session: TurnsHarness) -> None:
    start_turn(session)
    message_id = queue(session, "mine", user="alice")["message_id"]
    response = session.cancel("bob", message_id)
    assert response.status_code == 403 and reason(response) == "message_of_another_person"
    assert "chat.message_cancelled" not in types(session.events())


def test_cancelling_a_delivered_or_cancelled_message_is_409_message_not_in_queue(session: TurnsHarness) -> None:
    turn_id = start_turn(session)
    delivered = queue(session, "delivered")["message_id"]
    session.step(turn_id)
    session.next_turns()
    late = session.cancel("alice", delivered)
    assert late.status_code == 409 and reason(late) == "message_not_in_queue"
    cancelled = queue(session, "cancelled")["message_id"]
    assert session.cancel("alice", cancelled).status_code == 200
    twice = session.cancel("alice", cancelled)
    assert twice.status_code == 409 and reason(twice) == "message_not_in_queue"


def test_cancelling_an_unknown_message_or_through_another_agent_is_404(session: TurnsHarness) -> None:
    session.session(agents=["po", "dev"])
    start_turn(session)
    message_id = queue(session, "to po")["message_id"]
    assert session.cancel("alice", "msg_nothing").status_code == 404
    assert session.cancel("alice", message_id, agent="dev").status_code == 404


# ---------------------------------------------------------------------------------------------- rule 4
def test_the_eleventh_pending_message_is_refused_by_name_and_recorded_unread(session: TurnsHarness) -> None:
    turn_id = start_turn(session)
    ids = [queue(session, f"m{n}")["message_id"] for n in range(10)]
    refused = session.post("alice", "one too many")
    assert refused.status_code == 409 and reason(refused) == "message_queue_full"
    refused_id = refused.json()["data"]["message_id"]
    events = session.events()
    assert types(events)[-2:] == ["chat.message", "agent.error"]
    assert events[-1]["data"] == {"agent": "po", "message_id": refused_id, "reason": "message_queue_full"}
    session.step(turn_id)
    (turn,) = session.next_turns()
    assert turn["message_ids"] == ids  # the refused one is never read


def test_the_cap_counts_per_agent_and_a_cancel_frees_a_place(session: TurnsHarness) -> None:
    session.session(agents=["po", "dev"])
    start_turn(session)
    ids = [queue(session, f"m{n}")["message_id"] for n in range(10)]
    assert session.post("alice", "to dev", agent="dev").json()["data"]["delivery"] == "started"
    assert session.cancel("alice", ids[3]).status_code == 200
    assert queue(session, "fits again")["position"] == 10


def test_eleven_concurrent_posts_during_a_turn_queue_exactly_ten_and_refuse_one(session: TurnsHarness) -> None:
    from concurrent.futures import ThreadPoolExecutor

    for attempt in range(2):
        session.session(session_id=f"race{attempt}")
        start = session.post("alice", "start", session_id=f"race{attempt}")
        assert start.json()["data"]["delivery"] == "started"
        with ThreadPoolExecutor(max_workers=11) as pool:
            responses = list(
                pool.map(lambda n: session.post("alice", f"m{n}", session_id=f"race{attempt}"), range(11))  # noqa: B023
            )
        statuses = sorted(r.status_code for r in responses)
        assert statuses == [202] * 10 + [409]
        assert [reason(r) for r in responses if r.status_code == 409] == ["message_queue_full"]
        positions = sorted(r.json()["data"]["position"] for r in responses if r.status_code == 202)
        assert positions == list(range(1, 11))
        stored = turn_store().agent("lalu", f"race{attempt}", "po")
        assert len(stored.pending) == 10


# ---------------------------------------------------------------------------------------------- suspension
def test_suspended_turn_refuses_messages_and_queued_ones_wait_for_the_resumed_turns_finish(
    session: TurnsHarness,
) -> None:
    turn_id = start_turn(session)
    waiting = queue(session, "before the approval")["message_id"]
    assert session.step(turn_id, "suspend").json()["data"]["state"] == "suspended"
    refused = session.post("alice", "during the approval")
    assert refused.status_code == 409 and reason(refused) == "awaiting_approval"
    assert session.step(turn_id, "suspend").status_code == 200  # repeated: answered
    assert session.step(turn_id, "resume").json()["data"]["state"] == "running"
    assert session.next_turns() == []  # resuming delivers nothing: the turn still runs
    session.step(turn_id)
    (turn,) = session.next_turns()
    assert turn["message_ids"] == [waiting]
    assert types(session.events()).count("agent.error") == 1


# ---------------------------------------------------------------------------------------------- who may
def test_non_members_low_roles_and_other_tenants_are_refused_without_a_trace(session: TurnsHarness) -> None:
    session.session(members={"alice": "developer", "victor": "viewer", "olga": "owner"})
    stranger = session.post("mallory", "hi")
    assert stranger.status_code == 403 and reason(stranger) == "not_a_member"
    viewer = session.post("victor", "hi")
    assert viewer.status_code == 403 and reason(viewer) == "role_not_allowed"
    other_tenant = session.post("alice", "hi", app_code="other")
    assert other_tenant.status_code == 404
    assert session.post("alice", "hi", session_id="nope").status_code == 404
    assert session.post("alice", "hi", agent="ghost").status_code == 404
    assert session.api.get("/api/v1/sessions/s1/events", headers=member("mallory")).status_code == 403
    assert session.events() == []
    assert session.post("olga", "owners may talk").status_code == 202


def test_engine_routes_need_the_engine_capability(session: TurnsHarness, service_keys: ServiceKeys) -> None:
    body = {"app_code": "lalu", "members": {}, "agents": [], "status": "active"}
    assert session.api.put("/internal/v1/sessions/s2", json=body).status_code == 401
    assert session.api.put("/internal/v1/sessions/s2", json=body, headers=member("alice")).status_code == 401
    other, _ = service_keys.create_key("inbox-producer", ["/internal/v1/inbox"])
    refused = session.api.put("/internal/v1/sessions/s2", json=body, headers={"Authorization": f"Bearer {other}"})
    assert refused.status_code == 403
    assert (
        session.api.post(
            "/internal/v1/sessions/s1/agents/po/turns/t1/finish", headers={"Authorization": f"Bearer {other}"}
        ).status_code
        == 403
    )


def test_engine_key_of_one_tenant_cannot_create_or_drive_sessions_in_another(session: TurnsHarness) -> None:
    refused = session.session(app_code="other")
    assert refused.status_code == 403 and reason(refused) == "tenant_not_allowed"
    turn_id = start_turn(session)
    stepped = session.api.post(
        f"/internal/v1/sessions/s1/agents/po/turns/{turn_id}/finish?app_code=other", headers=session.engine
    )
    assert stepped.status_code == 403 and reason(stepped) == "tenant_not_allowed"


def test_the_same_session_id_in_two_tenants_is_two_sessions(session: TurnsHarness, service_keys: ServiceKeys) -> None:
    """Regression: a PUT of a session id that existed in another tenant answered 409 app_code_mismatch."""
    both, _ = service_keys.create_key("agent-engine", ["/internal/v1/sessions"], app_codes=["lalu", "other"])
    body = {"app_code": "other", "members": {"zed": "developer"}, "agents": ["po"], "status": "active"}
    created = session.api.put("/internal/v1/sessions/s1", json=body, headers={"Authorization": f"Bearer {both}"})
    assert created.status_code == 200, created.text
    assert session.post("zed", "hello other", app_code="other").status_code == 202
    assert session.post("alice", "hello lalu").status_code == 202
    assert session.post("alice", "not a member there", app_code="other").status_code == 403
    lalu_texts = [e["data"].get("text") for e in session.events() if e["type"] == "chat.message"]
    assert lalu_texts == ["hello lalu"]


def test_another_engine_cannot_change_a_session_or_drive_its_turns(
    session: TurnsHarness, service_keys: ServiceKeys
) -> None:
    """Regression: a second engine key rewrote the members of another service's session, made a user
    owner, who then read its events."""
    turn_id = start_turn(session)
    intruder, _ = service_keys.create_key("other-engine", ["/internal/v1/sessions"])
    headers = {"Authorization": f"Bearer {intruder}"}
    body = {"app_code": "lalu", "members": {"mallory": "owner"}, "agents": ["po"], "status": "active"}
    taken = session.api.put("/internal/v1/sessions/s1", json=body, headers=headers)
    assert taken.status_code == 403 and reason(taken) == "session_of_another_service"
    assert session.api.get("/api/v1/sessions/s1/events", headers=member("mallory")).status_code == 403
    for step in ("finish", "suspend", "resume", "pending"):
        path = f"/internal/v1/sessions/s1/agents/po/turns/{turn_id}/{step}"
        refused = session.api.post(path, headers=headers)
        assert refused.status_code == 403 and reason(refused) == "session_of_another_service", step
    assert session.step(turn_id).status_code == 200  # its owner still drives it


# ---------------------------------------------------------------------------------------------- ended sessions
def test_ended_session_freezes_the_queue_and_reopening_delivers_it(session: TurnsHarness) -> None:
    turn_id = start_turn(session)
    waiting = queue(session, "waits")["message_id"]
    assert session.session(status="ended").status_code == 200
    refused = session.post("alice", "too late")
    assert refused.status_code == 409 and reason(refused) == "session_not_active"
    frozen = session.cancel("alice", waiting)
    assert frozen.status_code == 409 and reason(frozen) == "session_not_active"
    assert session.step(turn_id).json()["data"] == {
        "session_id": "s1",
        "agent": "po",
        "state": "idle",
        "turn_id": None,
        "pending": 1,
    }
    assert session.next_turns() == []  # frozen: nothing is delivered for an ended session
    assert "too late" not in [e["data"].get("text") for e in session.events()]
    assert session.session(status="active").status_code == 200
    (turn,) = session.next_turns()
    assert turn["message_ids"] == [waiting]


# ---------------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "body",
    [
        {"text": ""},
        {"text": "   "},
        {"text": "x" * 4001},
        {"text": "hi", "lang": "english!"},
        {"text": "hi", "extra": 1},
        {},
    ],
)
def test_bad_message_is_400_and_records_nothing(session: TurnsHarness, body: dict[str, Any]) -> None:
    response = session.api.post("/api/v1/sessions/s1/agents/po/messages", json=body, headers=member("alice"))
    assert response.status_code == 400 and response.json()["code"] == "INVALID_ARGUMENT"
    assert session.events() == []


@pytest.mark.parametrize(
    "body",
    [
        {"app_code": "lalu", "members": {"alice": "boss"}, "agents": ["po"], "status": "active"},
        {"app_code": "lalu", "members": {}, "agents": ["po", "po"], "status": "active"},
        {"app_code": "lalu", "members": {}, "agents": ["bad/name"], "status": "active"},
        {"app_code": "lalu", "members": {}, "agents": [], "status": "paused"},
        {"app_code": "LALU#1", "members": {}, "agents": [], "status": "active"},
    ],
)
def test_bad_session_is_400_and_changes_nothing(session: TurnsHarness, body: dict[str, Any]) -> None:
    response = session.api.put("/internal/v1/sessions/s1", json=body, headers=session.engine)
    assert response.status_code == 400
    assert session.post("alice", "unchanged").status_code == 202


def test_event_log_reads_on_from_a_sequence(session: TurnsHarness) -> None:
    turn_id = start_turn(session)
    queue(session, "a")
    everything = session.events()
    assert [e["seq"] for e in everything] == list(range(1, len(everything) + 1))
    session.step(turn_id)
    later = session.events(after_seq=everything[-1]["seq"])
    assert types(later) == ["turn.finished", "chat.message_delivered", "turn.started"]
    assert later[0]["seq"] == everything[-1]["seq"] + 1
    assert turn_store().agent("lalu", "s1", "po").state is TurnState.RUNNING
