"""DynamoDB adapter for the turn queue, on the turns table's rows (`herald.turns.rows`).

Every decision is one transaction: the session's revision and sequence, the agent's version and the approval's
version, as read, are its conditions. The table's stream is the outbox that hands started turns and approvals'
decisions to the engine's queue.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pynamodb.exceptions import UpdateError
from pynamodb.expressions.update import Action

from herald.clock import now_ms
from herald.tables import Cancelled, Database, Transaction, condition_failed
from herald.turns.models import (
    MAX_EVENT_SEQ,
    AgentTurns,
    Approval,
    Change,
    Due,
    Message,
    Session,
    SessionEvent,
    SessionStatus,
    StaleRead,
    Turn,
)
from herald.turns.rows import (
    AGENT_ITEM,
    DUE_SHARDS,
    SESSION,
    AgentRow,
    ApprovalRow,
    EventRow,
    MessageRow,
    SessionRow,
    agent_sk,
    approval_sk,
    due_of,
    event_sk,
    message_sk,
    session_pk,
    shard_of,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class DynamoTurnStore:
    def __init__(self, table_name: str, client: DynamoDBClient | None = None) -> None:
        self._database = database = Database(client)
        self._sessions = database.bind(SessionRow, table_name)
        self._agents = database.bind(AgentRow, table_name)
        self._messages = database.bind(MessageRow, table_name)
        self._events = database.bind(EventRow, table_name)
        self._approvals = database.bind(ApprovalRow, table_name)

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

    def approval(self, app_code: str, session_id: str, approval_id: str) -> Approval | None:
        try:
            row = self._approvals.get(session_pk(app_code, session_id), approval_sk(approval_id), consistent_read=True)
        except self._approvals.DoesNotExist:
            return None
        return row.approval()

    def events(self, app_code: str, session_id: str, after_seq: int, limit: int) -> list[SessionEvent]:
        rows = self._events.query(
            session_pk(app_code, session_id),
            self._events.sk.between(event_sk(after_seq + 1), event_sk(MAX_EVENT_SEQ)),
            consistent_read=True,
            limit=limit,
            page_size=limit,
        )
        return [row.event() for row in rows]

    def due(self, before_ms: int, limit: int) -> list[Due]:
        found: list[Due] = []
        for shard in range(DUE_SHARDS):
            rows = self._agents.by_due.query(
                f"due#{shard}", self._agents.due_at_ms <= before_ms, limit=limit, page_size=limit
            )
            found.extend(due_of(row.pk, row.sk) for row in rows)
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
                actions += [rows.due_shard.set(shard_of(session_id)), rows.due_at_ms.set(now_ms())]
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
            if change.approval is not None:
                self._approval_write(transaction, change.approval, change.approval_before)
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
            (rows.approval_id, after.approval_id),
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
                rows.due_shard.set(shard_of(after.session_id)),
                rows.due_at_ms.set(rows.due_at_ms | at_ms),
            ]
        else:
            actions += [rows.due_shard.remove(), rows.due_at_ms.remove()]
        transaction.update(rows(pk=pk, sk=sk), actions, as_read)

    def _approval_write(self, transaction: Transaction, approval: Approval, before: Approval | None) -> None:
        """The approval as decided, on the condition that it is still the version read (a new one: that none is)."""
        rows = self._approvals
        as_read = rows.pk.does_not_exist() if before is None else rows.version == before.version
        version = before.version + 1 if before is not None else 1
        transaction.put(rows.of(approval, version), as_read)

    def mark_told(self, approval: Approval) -> None:
        """The decision was handed to the engine's queue: the approval leaves the janitor's index. Written only
        over the decided approval as read; anything else means another teller recorded it first."""
        rows = self._approvals
        try:
            rows(pk=session_pk(approval.app_code, approval.session_id), sk=approval_sk(approval.approval_id)).update(
                actions=[rows.told.set(True), rows.version.add(1), rows.due_shard.remove(), rows.due_at_ms.remove()],
                condition=(rows.version == approval.version) & (rows.status == str(approval.status)),
            )
        except UpdateError as error:
            if not condition_failed(error):
                raise

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
