"""The turns table's rows (`pk`, `sk`), one partition per session of a tenant
(`pk = SES#<app_code>#<session_id>`: the same session id in two tenants is two sessions):

* `sk = SESSION` — members, agents, status, the owning service, `revision` (bumped by each engine update)
  and `next_seq` (the last event sequence given);
* `sk = AGENT#<agent>` — the agent's turn state, current turn and queue, with a `version`;
* `sk = APPROVAL#<approval_id>` — an approval an agent asked for, with its decision and a `version`;
* an agent whose started turn is not yet handed to the engine, a decided approval whose decision is not yet handed
  to it, and a reopened session whose frozen queues are not yet delivered carry `due_shard` and `due_at_ms`: the
  keys of the janitor's sparse GSI `by_due`;
* `sk = MSG#<message_id>` — the message as sent (who sent it: what cancel checks);
* `sk = EVT#<seq>` — the session's event log.
"""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING, Any

from pynamodb.attributes import BooleanAttribute, ListAttribute, MapAttribute, UnicodeAttribute
from pynamodb.indexes import GlobalSecondaryIndex, KeysOnlyProjection
from pynamodb.models import Model

from herald.tables import IntAttribute, string_list
from herald.turns.models import (
    AgentTurns,
    Approval,
    ApprovalButton,
    ApprovalStatus,
    Due,
    EventType,
    QueuedMessage,
    Session,
    SessionEvent,
    SessionStatus,
    Turn,
    TurnState,
)

if TYPE_CHECKING:
    from herald.dynamo import Image

SESSION = "SESSION"
AGENT_ITEM = "agent"
APPROVAL_ITEM = "approval"
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
    approval_id = UnicodeAttribute(null=True)
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
            approval_id=self.approval_id,
            version=self.version,
        )


class ApprovalRow(Model):
    """TurnsTable, an approval an agent asked for: the request as accepted, then its one decision."""

    pk = UnicodeAttribute(hash_key=True)  # SES#<app>#<session_id>
    sk = UnicodeAttribute(range_key=True)  # APPROVAL#<approval_id>
    item_type = UnicodeAttribute(default=APPROVAL_ITEM)
    app_code = UnicodeAttribute()
    session_id = UnicodeAttribute()
    agent = UnicodeAttribute()
    turn_id = UnicodeAttribute()
    approval_id = UnicodeAttribute()
    user_id = UnicodeAttribute()
    text = UnicodeAttribute()
    buttons: ListAttribute[Any] = ListAttribute()
    confirm_id = UnicodeAttribute()
    fingerprint = UnicodeAttribute()
    requested_at_ms = IntAttribute()
    expire_at_ms = IntAttribute()
    status = UnicodeAttribute()
    decided_by = UnicodeAttribute(null=True)
    decided_at_ms = IntAttribute(null=True)
    reason = UnicodeAttribute(null=True)
    told = BooleanAttribute(default=False)
    version = IntAttribute()
    due_shard = UnicodeAttribute(null=True)
    due_at_ms = IntAttribute(null=True)
    by_due = ByDue()

    @classmethod
    def of(cls, approval: Approval, version: int) -> ApprovalRow:
        """`approval` as stored at `version`; in the janitor's index while its decision is not handed over."""
        return cls(
            pk=session_pk(approval.app_code, approval.session_id),
            sk=approval_sk(approval.approval_id),
            app_code=approval.app_code,
            session_id=approval.session_id,
            agent=approval.agent,
            turn_id=approval.turn_id,
            approval_id=approval.approval_id,
            user_id=approval.user_id,
            text=approval.text,
            buttons=[button.to_dict() for button in approval.buttons],
            confirm_id=approval.confirm_id,
            fingerprint=approval.fingerprint,
            requested_at_ms=approval.requested_at_ms,
            expire_at_ms=approval.expire_at_ms,
            status=str(approval.status),
            decided_by=approval.decided_by or None,
            decided_at_ms=approval.decided_at_ms or None,
            reason=approval.reason or None,
            told=approval.told,
            version=version,
            due_shard=shard_of(approval.session_id) if approval.untold else None,
            due_at_ms=approval.decided_at_ms if approval.untold else None,
        )

    def approval(self) -> Approval:
        return Approval(
            app_code=self.app_code,
            session_id=self.session_id,
            agent=self.agent,
            turn_id=self.turn_id,
            approval_id=self.approval_id,
            user_id=self.user_id,
            text=self.text,
            buttons=tuple(ApprovalButton(**_plain(b)) for b in self.buttons),
            confirm_id=self.confirm_id,
            fingerprint=self.fingerprint,
            requested_at_ms=self.requested_at_ms,
            expire_at_ms=self.expire_at_ms,
            status=ApprovalStatus(self.status),
            decided_by=self.decided_by or "",
            decided_at_ms=self.decided_at_ms or 0,
            reason=self.reason or "",
            told=bool(self.told),
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


def approval_sk(approval_id: str) -> str:
    return f"APPROVAL#{approval_id}"


def message_sk(message_id: str) -> str:
    return f"MSG#{message_id}"


def event_sk(seq: int) -> str:
    return f"EVT#{seq:012d}"


def shard_of(session_id: str) -> str:
    return f"due#{zlib.crc32(session_id.encode()) % DUE_SHARDS}"


def due_of(pk: str, sk: str) -> Due:
    """What an index entry's keys name."""
    app_code, _, session_id = pk.removeprefix("SES#").partition("#")
    if sk.startswith("AGENT#"):
        return Due(app_code, session_id, agent=sk.removeprefix("AGENT#"))
    if sk.startswith("APPROVAL#"):
        return Due(app_code, session_id, approval_id=sk.removeprefix("APPROVAL#"))
    return Due(app_code, session_id)


def agent_from_image(image: Image) -> AgentTurns | None:
    """The agent a stream image shows (None for any other item)."""
    if image.get("item_type", {}).get("S") != AGENT_ITEM:
        return None
    return AgentRow.from_raw_data(image).agent_turns()


def approval_from_image(image: Image) -> Approval | None:
    """The approval a stream image shows (None for any other item)."""
    if image.get("item_type", {}).get("S") != APPROVAL_ITEM:
        return None
    return ApprovalRow.from_raw_data(image).approval()
