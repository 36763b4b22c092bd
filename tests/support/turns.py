"""Drives the agent turn queue in process, on moto: members and the engine through the real HTTP app, the
turns table's stream to the outbox function, and the engine's side of the turn queue read back."""

from __future__ import annotations

import json
from typing import Any, cast

import boto3
import jsonschema
from fastapi.testclient import TestClient
from herald_ops.template import StackTemplate
from httpx import Response

from tests.support.aws import REPO, load_function
from tests.support.lambda_context import FakeLambdaContext
from tests.support.pipeline import StreamTap
from tests.support.tokens import make_token

# A valid body for the engine's approval route: the auth and tenant matrices call every route with one.
APPROVAL_ROUTE = ("POST", "/internal/v1/sessions/{session_id}/agents/{agent}/turns/{turn_id}/approvals")
APPROVAL_BODY = {"approval_id": "ap-1", "user_id": "10002", "text": "SECRET-QUESTION"}
SCHEMAS = {
    "turn": json.loads((REPO / "events" / "turns" / "turn.schema.json").read_text()),
    "approval.decided": json.loads((REPO / "events" / "turns" / "approval-decided.schema.json").read_text()),
}


class TurnsHarness:
    def __init__(self, api: TestClient, stack: StackTemplate, engine_key: str) -> None:
        self.api = api
        self.engine = {"Authorization": f"Bearer {engine_key}"}
        self.stream = StreamTap(stack.get_att("TurnsTable", "StreamArn"))
        self.outbox = load_function("turns_outbox").handler
        self.janitor = load_function("turns_janitor").handler
        self.queue_url = stack.resolve({"Ref": "TurnsQueue"})
        self.sqs = boto3.client("sqs")
        self.decisions: list[dict[str, Any]] = []  # approval.decided messages read off the engine's queue

    # ------------------------------------------------------------------ the engine
    def session(
        self,
        session_id: str = "s1",
        members: dict[str, str] | None = None,
        agents: list[str] | None = None,
        status: str = "active",
        app_code: str = "lalu",
    ) -> Response:
        body = {
            "app_code": app_code,
            "members": members if members is not None else {"alice": "developer", "bob": "developer"},
            "agents": agents if agents is not None else ["po"],
            "status": status,
        }
        return cast("Response", self.api.put(f"/internal/v1/sessions/{session_id}", json=body, headers=self.engine))

    def step(self, turn_id: str, step: str = "finish", session_id: str = "s1", agent: str = "po") -> Response:
        return cast(
            "Response",
            self.api.post(
                f"/internal/v1/sessions/{session_id}/agents/{agent}/turns/{turn_id}/{step}", headers=self.engine
            ),
        )

    def pump(self) -> int:
        """The stream's new records to the outbox function (which hands started turns to the queue)."""
        records = self.stream.read()
        if records:
            result = self.outbox({"Records": records}, FakeLambdaContext())
            assert result == {"batchItemFailures": []}, result
        return len(records)

    def turns(self) -> list[dict[str, Any]]:
        """Every turn waiting in the engine's queue, taken off it, in order (approvals' decisions are kept in
        `decisions`)."""
        taken: list[dict[str, Any]] = []
        while True:
            messages = self.sqs.receive_message(
                QueueUrl=self.queue_url, MaxNumberOfMessages=10, AttributeNames=["MessageGroupId"]
            ).get("Messages", [])
            if not messages:
                return taken
            for message in messages:
                turn = json.loads(message["Body"])
                jsonschema.validate(turn, SCHEMAS[turn["type"]])  # what the engine is promised (events/turns)
                assert (
                    message["Attributes"]["MessageGroupId"]
                    == f"{turn['app_code']}/{turn['session_id']}/{turn['agent']}"
                )
                (taken if turn["type"] == "turn" else self.decisions).append(turn)
                self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])

    def next_turns(self) -> list[dict[str, Any]]:
        self.pump()
        return self.turns()

    # ------------------------------------------------------------------ members
    def post(
        self, user: str, text: str, session_id: str = "s1", agent: str = "po", app_code: str = "lalu", **body: Any
    ) -> Response:
        return cast(
            "Response",
            self.api.post(
                f"/api/v1/sessions/{session_id}/agents/{agent}/messages",
                json={"text": text, **body},
                headers=member(user, app_code),
            ),
        )

    def cancel(self, user: str, message_id: str, session_id: str = "s1", agent: str = "po") -> Response:
        return cast(
            "Response",
            self.api.post(
                f"/api/v1/sessions/{session_id}/agents/{agent}/messages/{message_id}/cancel", headers=member(user)
            ),
        )

    def events(self, user: str = "alice", session_id: str = "s1", after_seq: int = 0) -> list[dict[str, Any]]:
        response = self.api.get(
            f"/api/v1/sessions/{session_id}/events", params={"after_seq": after_seq, "limit": 200}, headers=member(user)
        )
        assert response.status_code == 200, response.text
        return response.json()["data"]["events"]  # type: ignore[no-any-return]


def member(user: str, app_code: str = "lalu") -> dict[str, str]:
    return {"Authorization": f"Bearer {make_token(user, app_code)}"}
