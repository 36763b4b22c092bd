"""DynamoDB adapter for the turn queue. One table (`pk`, `sk`), one partition per session of a tenant
(`pk = SES#<app_code>#<session_id>`: the same session id in two tenants is two sessions):

* `sk = SESSION` — members, agents, status, the owning service, `revision` (bumped by each engine update)
  and `next_seq` (the last event sequence given);
* `sk = AGENT#<agent>` — the agent's turn state, current turn and queue, with a `version`;
* an agent whose started turn is not yet handed to the engine, and a reopened session whose frozen queues
  are not yet delivered, carry `due_shard` and `due_at_ms`: the keys of the janitor's sparse GSI `by_due`;
* `sk = MSG#<message_id>` — the message as sent (who sent it: what cancel checks);
* `sk = EVT#<seq>` — the session's event log.

Every decision is one transaction: the session's revision and sequence and the agent's version, as read,
are its conditions. The table's stream is the outbox that hands started turns to the engine's queue.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from herald.clock import now_ms
from herald.dynamo import is_conditional_check_failed, is_transaction_cancelled, to_attr, to_item
from herald.dynamo_table import DynamoTable
from herald.turns.models import (
    AgentTurns,
    EventType,
    Message,
    QueuedMessage,
    Session,
    SessionEvent,
    SessionStatus,
    Turn,
    TurnState,
)
from herald.turns.service import Change, StaleRead

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef

SESSION = "SESSION"
AGENT_ITEM = "agent"
BY_DUE_INDEX = "by_due"
DUE_SHARDS = 8  # the janitor's index is spread over this many partition keys


def session_pk(app_code: str, session_id: str) -> str:
    return f"SES#{app_code}#{session_id}"


def agent_sk(agent: str) -> str:
    return f"AGENT#{agent}"


def message_sk(message_id: str) -> str:
    return f"MSG#{message_id}"


def event_sk(seq: int) -> str:
    return f"EVT#{seq:012d}"


def _key(app_code: str, session_id: str, sk: str) -> dict[str, Any]:
    return {"pk": {"S": session_pk(app_code, session_id)}, "sk": {"S": sk}}


def _due_shard(session_id: str) -> str:
    return f"due#{zlib.crc32(session_id.encode()) % DUE_SHARDS}"


def _due_key(item: Mapping[str, Any]) -> tuple[str, str, str | None]:
    """(tenant, session, agent) from an index entry's keys; the agent is None for a reopened session."""
    app_code, _, session_id = item["pk"].removeprefix("SES#").partition("#")
    return app_code, session_id, None if item["sk"] == SESSION else item["sk"].removeprefix("AGENT#")


def session_from_item(item: Mapping[str, Any]) -> Session:
    return Session(
        session_id=item["session_id"],
        app_code=item["app_code"],
        members=dict(item.get("members", {})),
        agents=tuple(item.get("agents", ())),
        status=SessionStatus(item["status"]),
        revision=item.get("revision", 0),
        next_seq=item.get("next_seq", 0),
        owner_service=item.get("owner_service", ""),
    )


def is_agent(item: Mapping[str, Any]) -> bool:
    return item.get("item_type") == AGENT_ITEM


def agent_from_item(item: Mapping[str, Any]) -> AgentTurns:
    turn = item.get("turn")
    return AgentTurns(
        app_code=item["app_code"],
        session_id=item["session_id"],
        agent=item["agent"],
        state=TurnState(item["state"]),
        turn=Turn.from_message(turn) if turn else None,
        finished_turn_id=item.get("finished_turn_id"),
        dispatched_turn_id=item.get("dispatched_turn_id"),
        queue=tuple(QueuedMessage.from_dict(m) for m in item.get("queue", ())),
        version=item["version"],
    )


def _event_from_item(item: Mapping[str, Any]) -> SessionEvent:
    return SessionEvent(item["seq"], EventType(item["type"]), item["at_ms"], item["actor"], item.get("data", {}))


class DynamoTurnStore(DynamoTable):
    # ------------------------------------------------------------------ reads
    def session(self, app_code: str, session_id: str) -> Session | None:
        item = self._get_item(_key(app_code, session_id, SESSION))
        return session_from_item(item) if item else None

    def agent(self, app_code: str, session_id: str, agent: str) -> AgentTurns:
        item = self._get_item(_key(app_code, session_id, agent_sk(agent)))
        return agent_from_item(item) if item else AgentTurns(app_code, session_id, agent)

    def message(self, app_code: str, session_id: str, message_id: str) -> Message | None:
        item = self._get_item(_key(app_code, session_id, message_sk(message_id)))
        if item is None:
            return None
        return Message(
            app_code,
            session_id,
            item["agent"],
            message_id,
            item["sender"],
            item["text"],
            item.get("lang"),
            item["sent_at_ms"],
        )

    def events(self, app_code: str, session_id: str, after_seq: int, limit: int) -> list[SessionEvent]:
        items, _ = self._query_page(
            {
                "TableName": self._table,
                "KeyConditionExpression": "pk = :pk AND sk BETWEEN :from AND :to",
                "ExpressionAttributeValues": {
                    ":pk": {"S": session_pk(app_code, session_id)},
                    ":from": {"S": event_sk(after_seq + 1)},
                    ":to": {"S": event_sk(10**12 - 1)},
                },
                "ConsistentRead": True,
                "Limit": limit,
            },
            None,
        )
        return [_event_from_item(item) for item in items]

    def due(self, before_ms: int, limit: int) -> list[tuple[str, str, str | None]]:
        found: list[tuple[str, str, str | None]] = []
        for shard in range(DUE_SHARDS):
            items, _ = self._query_page(
                {
                    "TableName": self._table,
                    "IndexName": BY_DUE_INDEX,
                    "KeyConditionExpression": "due_shard = :shard AND due_at_ms <= :before",
                    "ExpressionAttributeValues": {":shard": {"S": f"due#{shard}"}, ":before": {"N": str(before_ms)}},
                    "Limit": limit,
                },
                None,
            )
            found.extend(_due_key(item) for item in items)
        return found[:limit]

    # ------------------------------------------------------------------ writes
    def put_session(
        self,
        app_code: str,
        session_id: str,
        members: Mapping[str, str],
        agents: Sequence[str],
        status: SessionStatus,
        owner_service: str,
    ) -> tuple[Session | None, Session]:
        """Create or update, on the condition that the session is still as read (and still its owner's).
        A reopened session joins the janitor's index until its frozen queues are delivered."""
        while True:
            before = self.session(app_code, session_id)
            if before is not None and before.owner_service != owner_service:
                return before, before
            reopened = before is not None and not before.active and status is SessionStatus.ACTIVE
            values: dict[str, Any] = {
                ":sid": session_id,
                ":app": app_code,
                ":owner": owner_service,
                ":members": dict(members),
                ":agents": list(agents),
                ":status": str(status),
                ":revision": before.revision + 1 if before else 1,
                ":zero": 0,
            }
            expression = (
                "SET session_id = :sid, app_code = :app, owner_service = :owner, members = :members,"
                " agents = :agents, #status = :status, revision = :revision, next_seq = if_not_exists(next_seq, :zero)"
            )
            if reopened:
                values.update({":shard": _due_shard(session_id), ":now": now_ms()})
                expression += ", due_shard = :shard, due_at_ms = :now"
            condition = "attribute_not_exists(pk)"
            if before is not None:
                values[":read"] = before.revision
                condition = "revision = :read"
            try:
                self._ddb.update_item(
                    TableName=self._table,
                    Key=_key(app_code, session_id, SESSION),
                    UpdateExpression=expression,
                    ConditionExpression=condition,
                    ExpressionAttributeNames={"#status": "status"},
                    ExpressionAttributeValues={name: to_attr(value) for name, value in values.items()},
                )
            except ClientError as exc:
                if is_conditional_check_failed(exc):
                    continue  # another engine update landed since the read: read again
                raise
            next_seq = before.next_seq if before else 0  # as read: commits move it without touching the revision
            return before, Session(
                session_id, app_code, dict(members), tuple(agents), status, values[":revision"], next_seq, owner_service
            )

    def delivered_reopened(self, app_code: str, session_id: str) -> None:
        self._ddb.update_item(
            TableName=self._table,
            Key=_key(app_code, session_id, SESSION),
            UpdateExpression="REMOVE due_shard, due_at_ms",
        )

    def commit(self, change: Change, at_ms: int) -> list[SessionEvent]:
        session = change.session
        events = [
            SessionEvent(session.next_seq + n, entry.type, at_ms, entry.actor, entry.data)
            for n, entry in enumerate(change.entries, start=1)
        ]
        items: list[TransactWriteItemTypeDef] = [
            {
                "Update": {
                    "TableName": self._table,
                    "Key": _key(session.app_code, session.session_id, SESSION),
                    "UpdateExpression": "SET next_seq = :next",
                    "ConditionExpression": "revision = :revision AND next_seq = :seq",
                    "ExpressionAttributeValues": {
                        ":next": to_attr(session.next_seq + len(events)),
                        ":revision": to_attr(session.revision),
                        ":seq": to_attr(session.next_seq),
                    },
                }
            },
            self._agent_write(change, at_ms),
        ]
        if change.message is not None:
            message = change.message
            items.append(
                {
                    "Put": {
                        "TableName": self._table,
                        "Item": to_item(
                            {
                                "pk": session_pk(message.app_code, message.session_id),
                                "sk": message_sk(message.message_id),
                                "agent": message.agent,
                                "sender": message.sender,
                                "text": message.text,
                                "lang": message.lang,
                                "sent_at_ms": message.sent_at_ms,
                            }
                        ),
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                }
            )
        items.extend(
            {
                "Put": {
                    "TableName": self._table,
                    "Item": to_item(
                        {
                            "pk": session_pk(session.app_code, session.session_id),
                            "sk": event_sk(event.seq),
                            "item_type": "event",
                            "seq": event.seq,
                            "type": str(event.type),
                            "at_ms": event.at_ms,
                            "actor": event.actor,
                            "data": dict(event.data),
                        }
                    ),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            }
            for event in events
        )
        try:
            self._transact(items)
        except ClientError as exc:
            if is_transaction_cancelled(exc):
                raise StaleRead(f"session {session.session_id} changed") from exc
            raise
        return events

    def _agent_write(self, change: Change, at_ms: int) -> TransactWriteItemTypeDef:
        """The agent's new state, on the condition that it is still the version the change was decided
        from. It is in the janitor's index while its started turn is not handed over, from when it started."""
        before, after = change.before, change.after
        condition = "attribute_not_exists(pk)" if before.version == 0 else "#version = :read"
        guard: dict[str, Any] = {":read": to_attr(before.version)} if before.version else {}
        key = _key(before.app_code, before.session_id, agent_sk(before.agent))
        if after == before:  # a refusal: nothing changes, but it is decided on the state as read
            check: dict[str, Any] = {"TableName": self._table, "Key": key, "ConditionExpression": condition}
            if before.version:
                check["ExpressionAttributeNames"] = {"#version": "version"}
                check["ExpressionAttributeValues"] = guard
            return {"ConditionCheck": check}  # type: ignore[typeddict-item]
        values = {
            "item_type": AGENT_ITEM,
            "app_code": after.app_code,
            "session_id": after.session_id,
            "agent": after.agent,
            "state": str(after.state),
            "turn": after.turn.to_message() if after.turn else None,
            "finished_turn_id": after.finished_turn_id,
            "dispatched_turn_id": after.dispatched_turn_id,
            "queue": [m.to_dict() for m in after.queue],
            "version": before.version + 1,
        }
        sets = [f"#{name} = :{name}" for name, value in values.items() if value is not None]
        removes = [f"#{name}" for name, value in values.items() if value is None]
        if after.undispatched:
            values["due_shard"] = _due_shard(after.session_id)
            values["due_at_ms"] = at_ms
            sets += ["#due_shard = :due_shard", "#due_at_ms = if_not_exists(#due_at_ms, :due_at_ms)"]
        else:
            removes += ["#due_shard", "#due_at_ms"]
        expression = "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else "")
        names = {f"#{name}": name for name in (*values, "due_shard", "due_at_ms")}
        return {
            "Update": {
                "TableName": self._table,
                "Key": key,
                "UpdateExpression": expression,
                "ConditionExpression": condition,
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": {
                    **{f":{name}": to_attr(value) for name, value in values.items() if value is not None},
                    **guard,
                },
            }
        }

    def mark_dispatched(self, turn: Turn) -> None:
        """Recorded only while the turn is still the agent's; the agent leaves the janitor's index."""
        turn_id = turn.turn_id
        try:
            self._ddb.update_item(
                TableName=self._table,
                Key=_key(turn.app_code, turn.session_id, agent_sk(turn.agent)),
                UpdateExpression=(
                    "SET dispatched_turn_id = :turn, #version = #version + :one REMOVE due_shard, due_at_ms"
                ),
                ConditionExpression="#turn.turn_id = :turn",
                ExpressionAttributeNames={"#version": "version", "#turn": "turn"},
                ExpressionAttributeValues={":turn": to_attr(turn_id), ":one": to_attr(1)},
            )
        except ClientError as exc:
            if not is_conditional_check_failed(exc):
                raise
            # The turn already finished (a quick engine) or was dispatched and finished: nothing to record.
