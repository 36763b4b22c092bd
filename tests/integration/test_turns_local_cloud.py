"""The agent turn queue through the local cloud (contract §4, each of its rules over HTTP): members post
to the HTTP API, the turns table's stream runs the outbox function as its event source mapping does, and
the test plays the agent engine on the real turn queue."""

from __future__ import annotations

import json
import secrets
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from herald.auth.dynamo import DynamoServiceKeyStore
from herald.auth.service_keys import ServiceKeys
from tests.support.local_cloud import LocalCloudProcess
from tests.support.tokens import make_token
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration


class Engine:
    """The agent engine's side: its key for the engine routes, and the turn queue it reads."""

    def __init__(self, cloud: LocalCloudProcess) -> None:
        keys = ServiceKeys(DynamoServiceKeyStore(cloud.resource("ServiceKeysTable"), cloud.client("dynamodb")))
        key, _ = keys.create_key(f"engine-{secrets.token_hex(3)}", ["/internal/v1/sessions"])
        self.http = httpx.Client(base_url=cloud.http_url, headers={"Authorization": f"Bearer {key}"}, timeout=30)
        self.sqs = cloud.client("sqs")
        self.queue_url = cloud.resource("TurnsQueue")
        self.taken: dict[str, list[dict[str, Any]]] = defaultdict(list)

    def open(self, agents: list[str]) -> str:
        session_id = f"s-{secrets.token_hex(4)}"
        body = {
            "app_code": "lalu",
            "members": {"alice": "developer", "bob": "developer"},
            "agents": agents,
            "status": "active",
        }
        assert self.http.put(f"/internal/v1/sessions/{session_id}", json=body).status_code == 200
        return session_id

    def drain(self) -> None:
        """What the queue holds now, kept by session (turns, and approvals' decisions)."""
        response = self.sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
        for message in response.get("Messages", []):
            body = json.loads(message["Body"])
            self.taken[body["session_id"]].append(body)
            self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])

    def next_turn(self, session_id: str) -> dict[str, Any]:
        """The session's next turn from the queue (turns of other sessions are kept for them)."""

        def arrived() -> dict[str, Any]:
            self.drain()
            turns = [m for m in self.taken[session_id] if m["type"] == "turn"]
            assert turns, "no turn yet"
            self.taken[session_id].remove(turns[0])
            return turns[0]

        return eventually(arrived, timeout=30)

    def finish(self, session_id: str, agent: str, turn_id: str) -> dict[str, Any]:
        response = self.http.post(f"/internal/v1/sessions/{session_id}/agents/{agent}/turns/{turn_id}/finish")
        assert response.status_code == 200, response.text
        return response.json()["data"]  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def engine(cloud: LocalCloudProcess) -> Engine:
    return Engine(cloud)


class Member:
    def __init__(self, cloud: LocalCloudProcess, user: str) -> None:
        self.http = httpx.Client(
            base_url=cloud.http_url, headers={"Authorization": f"Bearer {make_token(user)}"}, timeout=30
        )

    def post(self, session_id: str, agent: str, text: str, lang: str | None = None) -> httpx.Response:
        body = {"text": text, **({"lang": lang} if lang else {})}
        return self.http.post(f"/api/v1/sessions/{session_id}/agents/{agent}/messages", json=body)

    def cancel(self, session_id: str, agent: str, message_id: str) -> httpx.Response:
        return self.http.post(f"/api/v1/sessions/{session_id}/agents/{agent}/messages/{message_id}/cancel")

    def events(self, session_id: str) -> list[dict[str, Any]]:
        response = self.http.get(f"/api/v1/sessions/{session_id}/events", params={"limit": 200})
        assert response.status_code == 200, response.text
        return response.json()["data"]["events"]  # type: ignore[no-any-return]


def test_messages_during_a_turn_queue_durably_and_arrive_as_one_turn_with_cancels_honoured(
    cloud: LocalCloudProcess, engine: Engine
) -> None:
    """Rules 1-3: queued during the turn, N messages = 1 turn when it finishes, cancel by the sender only."""
    alice, bob = Member(cloud, "alice"), Member(cloud, "bob")
    session_id = engine.open(["po"])
    first = alice.post(session_id, "po", "start", lang="pt")
    assert first.status_code == 202 and first.json()["data"]["delivery"] == "started"
    turn = engine.next_turn(session_id)
    assert (turn["text"], turn["lang"], turn["message_ids"]) == ("start", "pt", [first.json()["data"]["message_id"]])

    queued = [alice.post(session_id, "po", text).json()["data"] for text in ("one", "two", "three")]
    assert [(q["delivery"], q["position"]) for q in queued] == [("queued", 1), ("queued", 2), ("queued", 3)]
    late = bob.post(session_id, "po", "bob's", lang="en").json()["data"]
    not_yours = bob.cancel(session_id, "po", queued[1]["message_id"])
    assert not_yours.status_code == 403 and not_yours.json()["data"]["reason"] == "message_of_another_person"
    assert alice.cancel(session_id, "po", queued[1]["message_id"]).status_code == 200

    assert engine.finish(session_id, "po", turn["turn_id"])["state"] == "running"
    merged = engine.next_turn(session_id)
    assert merged["message_ids"] == [queued[0]["message_id"], queued[2]["message_id"], late["message_id"]]
    assert merged["text"] == (
        "3 messages arrived while you were working; read them together, in order:\n1. one\n2. three\n3. bob's"
    )
    assert merged["lang"] == "en"
    gone = alice.cancel(session_id, "po", queued[0]["message_id"])
    assert gone.status_code == 409 and gone.json()["data"]["reason"] == "message_not_in_queue"
    assert engine.finish(session_id, "po", merged["turn_id"]) == {
        "session_id": session_id,
        "agent": "po",
        "state": "idle",
        "turn_id": None,
        "pending": 0,
    }
    kinds = [event["type"] for event in alice.events(session_id)]
    assert kinds.count("chat.message_queued") == 4 and kinds.count("chat.message_cancelled") == 1
    assert kinds.count("chat.message_delivered") == 2 and kinds[-1] == "turn.finished"


def test_eleven_concurrent_posts_queue_ten_and_refuse_one_per_agent_on_the_same_path(
    cloud: LocalCloudProcess, engine: Engine
) -> None:
    """Rules 4 and 5: ten pending per session and agent, refused by name beyond; every agent the same way."""
    alice = Member(cloud, "alice")
    session_id = engine.open(["po", "dev-lead"])
    for agent in ("po", "dev-lead"):
        assert alice.post(session_id, agent, "start").json()["data"]["delivery"] == "started"
        with ThreadPoolExecutor(max_workers=11) as pool:
            responses = list(pool.map(lambda n: alice.post(session_id, agent, f"m{n}"), range(11)))  # noqa: B023
        assert sorted(r.status_code for r in responses) == [202] * 10 + [409]
        (refused,) = [r for r in responses if r.status_code == 409]
        assert refused.json()["data"]["reason"] == "message_queue_full"
    turns = {engine.next_turn(session_id)["agent"] for _ in range(2)}
    assert turns == {"po", "dev-lead"}
    errors = [e for e in alice.events(session_id) if e["type"] == "agent.error"]
    assert sorted(e["data"]["agent"] for e in errors) == ["dev-lead", "po"]


def test_suspended_turn_and_ended_session_refuse_by_name(cloud: LocalCloudProcess, engine: Engine) -> None:
    alice = Member(cloud, "alice")
    session_id = engine.open(["po"])
    alice.post(session_id, "po", "start")
    turn = engine.next_turn(session_id)
    step = f"/internal/v1/sessions/{session_id}/agents/po/turns/{turn['turn_id']}"
    assert engine.http.post(f"{step}/suspend").json()["data"]["state"] == "suspended"
    waiting = alice.post(session_id, "po", "during approval")
    assert waiting.status_code == 409 and waiting.json()["data"]["reason"] == "awaiting_approval"
    body = {"app_code": "lalu", "members": {"alice": "developer"}, "agents": ["po"], "status": "ended"}
    assert engine.http.put(f"/internal/v1/sessions/{session_id}", json=body).status_code == 200
    ended = alice.post(session_id, "po", "after the end")
    assert ended.status_code == 409 and ended.json()["data"]["reason"] == "session_not_active"
    stranger = Member(cloud, "mallory").post(session_id, "po", "hi")
    assert stranger.status_code == 403 and stranger.json()["data"]["reason"] == "not_a_member"


def test_after_seq_is_bounded_by_the_sequence_space_on_the_real_engine(
    engine: Engine, cloud: LocalCloudProcess
) -> None:
    """A lower bound above the 12-digit space would make a key condition DynamoDB refuses (a 500 in AWS): the
    route answers 400 for it, and the edges of the space are served."""
    session_id = engine.open(["helper"])
    alice = Member(cloud, "alice")
    events = f"/api/v1/sessions/{session_id}/events"
    for too_far in ("9999999999990", "1000000000000", "-1", "1e3", "99999999999999999999999999"):
        refused = alice.http.get(events, params={"after_seq": too_far})
        assert refused.status_code == 400, (too_far, refused.text)
        assert refused.json()["code"] == "INVALID_ARGUMENT"
    for edge in (999_999_999_998, 999_999_999_999):
        served = alice.http.get(events, params={"after_seq": edge})
        assert served.status_code == 200, (edge, served.text)
        assert served.json()["data"] == {"events": [], "next_after_seq": edge}


def test_the_engine_takes_waiting_messages_at_a_step_and_a_cancel_racing_it_never_also_succeeds(
    cloud: LocalCloudProcess, engine: Engine
) -> None:
    """Issue 51, item 3, on the real engine: `/pending` against the sender's cancel of the same message, at once,
    many times: a message is taken or cancelled, never both; what is taken is not delivered at the turn's end."""
    alice = Member(cloud, "alice")
    session_id = engine.open(["po"])
    alice.post(session_id, "po", "start")
    turn = engine.next_turn(session_id)
    pending = f"/internal/v1/sessions/{session_id}/agents/po/turns/{turn['turn_id']}/pending"
    taken: list[str] = []
    cancelled: list[str] = []
    for round_ in range(8):
        message_id = alice.post(session_id, "po", f"round {round_}").json()["data"]["message_id"]
        with ThreadPoolExecutor(max_workers=2) as race:
            take = race.submit(engine.http.post, pending)
            cancel = race.submit(alice.cancel, session_id, "po", message_id)
        took, withdrew = take.result(), cancel.result()
        assert took.status_code == 200, took.text
        taken += took.json()["data"]["message_ids"]
        if withdrew.status_code == 200:
            cancelled.append(message_id)
        else:
            assert withdrew.json()["data"]["reason"] == "message_not_in_queue"
        assert (message_id in taken) != (message_id in cancelled), round_
    assert engine.finish(session_id, "po", turn["turn_id"])["state"] == "idle"  # none left for another turn
    delivered = [e["data"] for e in alice.events(session_id) if e["type"] == "chat.message_delivered"]
    assert [m for entry in delivered[1:] for m in entry["message_ids"]] == taken
