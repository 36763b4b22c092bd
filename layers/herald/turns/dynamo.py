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

from pynamodb.attributes import ListAttribute, MapAttribute, UnicodeAttribute
from pynamodb.exceptions import UpdateError
from pynamodb.expressions.update import Action
from pynamodb.indexes import GlobalSecondaryIndex, KeysOnlyProjection
from pynamodb.models import Model

from herald.clock import now_ms
from herald.tables import Cancelled, Database, IntAttribute, Transaction, condition_failed, string_list
from herald.turns.models import (
    MAX_EVENT_SEQ,
    AgentTurns,
    Change,
    EventType,
    Message,
    QueuedMessage,
    Session,
    SessionEvent,
    SessionStatus,
    StaleRead,
    Turn,
    TurnState,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from herald.dynamo import Image

SESSION = "SESSION"
AGENT_ITEM = "agent"
EVENT_ITEM = "event"
DUE_SHARDS = 8  # the janitor's index is spread over this many partition keys


class ByDue(GlobalSecondaryIndex[Any]):
    """Agents whose started turn is not handed over yet, and reopened sessions not yet delivered."""

    class Meta:
        index_name = "by_due"
        projection = KeysOnlyProjection()

    due_shard = UnicodeAttribute(hash_key=True)
    due_at_ms = IntAttribute(range_key=True)


class SessionRow(Model):
    """TurnsTable, a session: `revision` guards engine updates, `next_seq` the event log."""

    pk = UnicodeAttribute(hash_key=True)  # SES#<app>#<session_id>
    sk = UnicodeAttribute(range_key=True, default=SESSION)
    session_id = UnicodeAttribute()
    app_code = UnicodeAttribute()
    owner_service = UnicodeAttribute(null=True)
    members: MapAttribute[str, Any] = MapAttribute(null=True)
    agents = string_list(null=True)
    status = UnicodeAttribute()
    revision = IntAttribute(null=True)
    next_seq = IntAttribute(null=True)
    due_shard = UnicodeAttribute(null=True)
    due_at_ms = IntAttribute(null=True)
    by_due = ByDue()

    def session(self) -> Session:
        return Session(
            session_id=self.session_id,
            app_code=self.app_code,
            members=self.members.as_dict() if self.members is not None else {},
            agents=tuple(self.agents or ()),
            status=SessionStatus(self.status),
            revision=self.revision or 0,
            next_seq=self.next_seq or 0,
            owner_service=self.owner_service or "",
        )


class AgentRow(Model):
    """TurnsTable, an agent's turns: state, current turn and queue; `version` guards every decision."""

    pk = UnicodeAttribute(hash_key=True)  # SES#<app>#<session_id>
    sk = UnicodeAttribute(range_key=True)  # AGENT#<agent>
    item_type = UnicodeAttribute(default=AGENT_ITEM)
    app_code = UnicodeAttribute()
    session_id = UnicodeAttribute()
    agent = UnicodeAttribute()
    state = UnicodeAttribute()
    turn: MapAttribute[str, Any] = MapAttribute(null=True)
    finished_turn_id = UnicodeAttribute(null=True)
    dispatched_turn_id = UnicodeAttribute(null=True)
    queue: ListAttribute[Any] = ListAttribute(null=True)
    version = IntAttribute()
    due_shard = UnicodeAttribute(null=True)
    due_at_ms = IntAttribute(null=True)
    by_due = ByDue()

    def agent_turns(self) -> AgentTurns:
        return AgentTurns(
            app_code=self.app_code,
            session_id=self.session_id,
            agent=self.agent,
            state=TurnState(self.state),
            turn=Turn.from_message(self.turn.as_dict()) if self.turn is not None else None,
            finished_turn_id=self.finished_turn_id,
            dispatched_turn_id=self.dispatched_turn_id,
            queue=tuple(QueuedMessage.from_dict(_plain(m)) for m in self.queue or ()),
            version=self.version,
        )


class MessageRow(Model):
    """TurnsTable, a message as sent (who sent it: what cancel checks)."""

    pk = UnicodeAttribute(hash_key=True)  # SES#<app>#<session_id>
    sk = UnicodeAttribute(range_key=True)  # MSG#<message_id>
    agent = UnicodeAttribute()
    sender = UnicodeAttribute()
    text = UnicodeAttribute()
    lang = UnicodeAttribute(null=True)
    sent_at_ms = IntAttribute()


class EventRow(Model):
    """TurnsTable, one entry of a session's event log."""

    pk = UnicodeAttribute(hash_key=True)  # SES#<app>#<session_id>
    sk = UnicodeAttribute(range_key=True)  # EVT#<seq>
    item_type = UnicodeAttribute(default=EVENT_ITEM)
    seq = IntAttribute()
    type = UnicodeAttribute()
    at_ms = IntAttribute()
    actor = UnicodeAttribute()
    data: MapAttribute[str, Any] = MapAttribute(null=True)

    def event(self) -> SessionEvent:
        data = self.data.as_dict() if self.data is not None else {}
        return SessionEvent(self.seq, EventType(self.type), self.at_ms, self.actor, data)


def _plain(value: Any) -> Any:
    """A raw map read from an untyped list, as a plain dict."""
    return value.as_dict() if isinstance(value, MapAttribute) else value


def session_pk(app_code: str, session_id: str) -> str:
    return f"SES#{app_code}#{session_id}"


def agent_sk(agent: str) -> str:
    return f"AGENT#{agent}"


def message_sk(message_id: str) -> str:
    return f"MSG#{message_id}"


def event_sk(seq: int) -> str:
    return f"EVT#{seq:012d}"


def _due_shard(session_id: str) -> str:
    return f"due#{zlib.crc32(session_id.encode()) % DUE_SHARDS}"


def _due_key(pk: str, sk: str) -> tuple[str, str, str | None]:
    """(tenant, session, agent) from an index entry's keys; the agent is None for a reopened session."""
    app_code, _, session_id = pk.removeprefix("SES#").partition("#")
    return app_code, session_id, None if sk == SESSION else sk.removeprefix("AGENT#")


def agent_from_image(image: Image) -> AgentTurns | None:
    """The agent a stream image shows (None for any other item)."""
    if image.get("item_type", {}).get("S") != AGENT_ITEM:
        return None
    return AgentRow.from_raw_data(image).agent_turns()


class DynamoTurnStore:
    def __init__(self, table_name: str, client: DynamoDBClient | None = None) -> None:
        self._database = database = Database(client)
        self._sessions = database.bind(SessionRow, table_name)
        self._agents = database.bind(AgentRow, table_name)
        self._messages = database.bind(MessageRow, table_name)
        self._events = database.bind(EventRow, table_name)

    # ------------------------------------------------------------------ reads
    def session(self, app_code: str, session_id: str) -> Session | None:
        try:
            return self._sessions.get(session_pk(app_code, session_id), SESSION, consistent_read=True).session()
        except self._sessions.DoesNotExist:
            return None

    def agent(self, app_code: str, session_id: str, agent: str) -> AgentTurns:
        try:
            row = self._agents.get(session_pk(app_code, session_id), agent_sk(agent), consistent_read=True)
        except self._agents.DoesNotExist:
            return AgentTurns(app_code, session_id, agent)
        return row.agent_turns()

    def message(self, app_code: str, session_id: str, message_id: str) -> Message | None:
        try:
            row = self._messages.get(session_pk(app_code, session_id), message_sk(message_id), consistent_read=True)
        except self._messages.DoesNotExist:
            return None
        return Message(app_code, session_id, row.agent, message_id, row.sender, row.text, row.lang, row.sent_at_ms)

    def events(self, app_code: str, session_id: str, after_seq: int, limit: int) -> list[SessionEvent]:
        rows = self._events.query(
            session_pk(app_code, session_id),
            self._events.sk.between(event_sk(after_seq + 1), event_sk(MAX_EVENT_SEQ)),
            consistent_read=True,
            limit=limit,
            page_size=limit,
        )
        return [row.event() for row in rows]

    def due(self, before_ms: int, limit: int) -> list[tuple[str, str, str | None]]:
        found: list[tuple[str, str, str | None]] = []
        for shard in range(DUE_SHARDS):
            rows = self._agents.by_due.query(
                f"due#{shard}", self._agents.due_at_ms <= before_ms, limit=limit, page_size=limit
            )
            found.extend(_due_key(row.pk, row.sk) for row in rows)
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
        rows = self._sessions
        while True:
            before = self.session(app_code, session_id)
            if before is not None and before.owner_service != owner_service:
                return before, before
            reopened = before is not None and not before.active and status is SessionStatus.ACTIVE
            revision = before.revision + 1 if before else 1
            actions: list[Action] = [
                rows.session_id.set(session_id),
                rows.app_code.set(app_code),
                rows.owner_service.set(owner_service),
                rows.members.set(dict(members)),
                rows.agents.set(list(agents)),
                rows.status.set(str(status)),
                rows.revision.set(revision),
                rows.next_seq.set(rows.next_seq | 0),
            ]
            if reopened:
                actions += [rows.due_shard.set(_due_shard(session_id)), rows.due_at_ms.set(now_ms())]
            as_read = rows.pk.does_not_exist() if before is None else rows.revision == before.revision
            try:
                rows(pk=session_pk(app_code, session_id)).update(actions=actions, condition=as_read)
            except UpdateError as error:
                if condition_failed(error):
                    continue  # another engine update landed since the read: read again
                raise
            next_seq = before.next_seq if before else 0  # as read: commits move it without touching the revision
            return before, Session(
                session_id, app_code, dict(members), tuple(agents), status, revision, next_seq, owner_service
            )

    def delivered_reopened(self, app_code: str, session_id: str) -> None:
        rows = self._sessions
        rows(pk=session_pk(app_code, session_id)).update(actions=[rows.due_shard.remove(), rows.due_at_ms.remove()])

    def commit(self, change: Change, at_ms: int) -> list[SessionEvent]:
        session = change.session
        pk = session_pk(session.app_code, session.session_id)
        events = [
            SessionEvent(session.next_seq + n, entry.type, at_ms, entry.actor, entry.data)
            for n, entry in enumerate(change.entries, start=1)
        ]
        sessions, messages, logged = self._sessions, self._messages, self._events

        def write(transaction: Transaction) -> None:
            transaction.update(
                sessions(pk=pk),
                [sessions.next_seq.set(session.next_seq + len(events))],
                (sessions.revision == session.revision) & (sessions.next_seq == session.next_seq),
            )
            self._agent_write(transaction, change, at_ms)
            if change.message is not None:
                message = change.message
                sent = messages(
                    pk=pk,
                    sk=message_sk(message.message_id),
                    agent=message.agent,
                    sender=message.sender,
                    text=message.text,
                    lang=message.lang,
                    sent_at_ms=message.sent_at_ms,
                )
                transaction.put(sent, messages.pk.does_not_exist())
            for event in events:
                entry = logged(
                    pk=pk,
                    sk=event_sk(event.seq),
                    seq=event.seq,
                    type=str(event.type),
                    at_ms=event.at_ms,
                    actor=event.actor,
                    data=dict(event.data),
                )
                transaction.put(entry, logged.pk.does_not_exist())

        try:
            self._database.transact(write)
        except Cancelled as cancelled:
            raise StaleRead(f"session {session.session_id} changed") from cancelled
        return events

    def _agent_write(self, transaction: Transaction, change: Change, at_ms: int) -> None:
        """The agent's new state, on the condition that it is still the version the change was decided
        from. It is in the janitor's index while its started turn is not handed over, from when it started."""
        before, after = change.before, change.after
        rows = self._agents
        pk, sk = session_pk(before.app_code, before.session_id), agent_sk(before.agent)
        as_read = rows.pk.does_not_exist() if before.version == 0 else rows.version == before.version
        if after == before:  # a refusal: nothing changes, but it is decided on the state as read
            transaction.check(rows, pk, as_read, range_key=sk)
            return
        optional: list[tuple[Any, Any]] = [
            (rows.turn, after.turn.to_message() if after.turn else None),
            (rows.finished_turn_id, after.finished_turn_id),
            (rows.dispatched_turn_id, after.dispatched_turn_id),
        ]
        actions: list[Action] = [
            rows.item_type.set(AGENT_ITEM),
            rows.app_code.set(after.app_code),
            rows.session_id.set(after.session_id),
            rows.agent.set(after.agent),
            rows.state.set(str(after.state)),
            rows.queue.set([m.to_dict() for m in after.queue]),
            rows.version.set(before.version + 1),
            *(attribute.set(value) if value is not None else attribute.remove() for attribute, value in optional),
        ]
        if after.undispatched:
            actions += [
                rows.due_shard.set(_due_shard(after.session_id)),
                rows.due_at_ms.set(rows.due_at_ms | at_ms),
            ]
        else:
            actions += [rows.due_shard.remove(), rows.due_at_ms.remove()]
        transaction.update(rows(pk=pk, sk=sk), actions, as_read)

    def mark_dispatched(self, turn: Turn) -> None:
        """Recorded only while the turn is still the agent's; the agent leaves the janitor's index."""
        rows = self._agents
        try:
            rows(pk=session_pk(turn.app_code, turn.session_id), sk=agent_sk(turn.agent)).update(
                actions=[
                    rows.dispatched_turn_id.set(turn.turn_id),
                    rows.version.add(1),
                    rows.due_shard.remove(),
                    rows.due_at_ms.remove(),
                ],
                condition=rows.turn["turn_id"] == turn.turn_id,
            )
        except UpdateError as error:
            if not condition_failed(error):
                raise
            # The turn already finished (a quick engine) or was dispatched and finished: nothing to record.
