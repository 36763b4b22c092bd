"""In-memory adapters: the same ports as the Dynamo* ones, for domain tests without sockets."""

from __future__ import annotations

import dataclasses
import ipaddress
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from herald.audit.models import BEGUN, AuditRecord
from herald.auth.models import DeliveryScope, ServiceKeyRecord
from herald.circuits import CircuitState
from herald.clock import Clock
from herald.confirms.models import Confirm, Delivery, SendResult, StaleConfirm
from herald.errors import NotFound
from herald.events.cards import CardMessage, CardWrite
from herald.events.jobs import Guard, Job, JobStatus, StaleJob
from herald.events.models import DuplicateEvent, ExternalEvent, Lane, LaneHead, StoredEvent, Target
from herald.events.webhooks.models import StatusWebhook
from herald.holds.models import Held, Pause
from herald.limits.governor import Bucket
from herald.realtime.models import Connection
from herald.tenants.models import Tenant, TenantRules
from herald.tenants.service import Tenants
from herald.turns.models import (
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


class InMemoryServiceKeyStore:
    def __init__(self) -> None:
        self.keys: dict[str, ServiceKeyRecord] = {}
        self.reads = 0

    def get_key(self, key_id: str) -> ServiceKeyRecord | None:
        self.reads += 1
        return self.keys.get(key_id)

    def put_key(self, key: ServiceKeyRecord) -> None:
        assert key.key_id not in self.keys
        self.keys[key.key_id] = key

    def keys_of(self, service_id: str) -> list[ServiceKeyRecord]:
        return [key for key in self.keys.values() if key.service_id == service_id]

    def all_keys(self) -> list[ServiceKeyRecord]:
        return list(self.keys.values())

    def revoke(self, key_id: str, at_ms: int) -> ServiceKeyRecord:
        key = self.keys.get(key_id)
        if key is None:
            raise NotFound(key_id)
        if key.revoked_at_ms is None or key.revoked_at_ms > at_ms:
            key = self.keys[key_id] = dataclasses.replace(key, revoked_at_ms=at_ms)
        return key

    def touch(self, key_id: str, at_ms: int) -> None:
        self.keys[key_id] = dataclasses.replace(self.keys[key_id], last_used_at_ms=at_ms)


class InMemoryConnectionRegistry:
    def __init__(self) -> None:
        self.connections: dict[str, Connection] = {}

    def add(self, connection: Connection) -> None:
        self.connections[connection.connection_id] = connection

    def remove(self, connection_id: str) -> None:
        self.connections.pop(connection_id, None)

    def get(self, connection_id: str) -> Connection | None:
        return self.connections.get(connection_id)

    def for_user(self, app_code: str, user_id: str) -> list[Connection]:
        return [c for c in self.connections.values() if (c.app_code, c.user_id) == (app_code, user_id)]

    def for_tenant(self, app_code: str) -> list[Connection]:
        return [c for c in self.connections.values() if c.app_code == app_code]


class InMemoryCounter:
    """The rate limiter's counter in memory, counting its conditional writes and reads."""

    def __init__(self) -> None:
        self.hits: dict[str, int] = {}
        self.writes = 0
        self.reads = 0

    def hit(self, bucket: str, limit: int, expires_at_s: int, token: str) -> int | None:
        self.writes += 1
        if self.hits.get(bucket, 0) >= limit:
            return self.count(bucket)  # the refused write's read, as DynamoCounter's
        self.hits[bucket] = self.hits.get(bucket, 0) + 1
        return None

    def count(self, bucket: str) -> int:
        self.reads += 1
        return self.hits.get(bucket, 0)


class InMemoryUserAdmission:
    """The user rate limit in memory: `limit` requests per user in all (None: no limit)."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit
        self.counted: dict[tuple[str, str], int] = {}

    def check(self, app_code: str, user_id: str) -> None:
        from herald.errors import RateLimited

        seen = self.counted.get((app_code, user_id), 0)
        if self.limit is not None and seen >= self.limit:
            raise RateLimited("over the user limit", reason="user_rate_limited")
        self.counted[(app_code, user_id)] = seen + 1


class InMemoryPusher:
    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes]] = []
        self.gone: set[str] = set()
        self.closed: list[str] = []

    def send(self, connection_id: str, data: bytes) -> bool:
        if connection_id in self.gone:
            return False
        self.sent.append((connection_id, data))
        return True

    def close(self, connection_id: str) -> None:
        self.closed.append(connection_id)
        self.gone.add(connection_id)


class InMemoryTurnStore:
    """The turn store's port in memory, with the Dynamo store's conditions: a commit lands only if the
    session's revision and sequence and the agent's version are still as read (else StaleRead).

    `before_commit` runs just before each commit is checked: a race test makes another decision there,
    so every interleaving of two decisions is a plain, repeatable sequence (each hook runs once)."""

    def __init__(self) -> None:
        self.sessions: dict[tuple[str, str], Session] = {}
        self.agents: dict[tuple[str, str, str], AgentTurns] = {}
        self.messages: dict[tuple[str, str, str], Message] = {}
        self.log: dict[tuple[str, str], list[SessionEvent]] = {}
        self.approvals: dict[tuple[str, str, str], Approval] = {}
        self.dispatched: list[str] = []
        self.before_commit: list[Callable[[], object]] = []
        self.commits = 0

    def session(self, app_code: str, session_id: str) -> Session | None:
        return self.sessions.get((app_code, session_id))

    def put_session(
        self,
        app_code: str,
        session_id: str,
        members: Mapping[str, str],
        agents: Sequence[str],
        status: SessionStatus,
        owner_service: str,
    ) -> tuple[Session | None, Session]:
        before = self.sessions.get((app_code, session_id))
        if before is not None and before.owner_service != owner_service:
            return before, before
        after = Session(
            session_id,
            app_code,
            dict(members),
            tuple(agents),
            status,
            before.revision + 1 if before else 1,
            before.next_seq if before else 0,
            owner_service,
        )
        self.sessions[(app_code, session_id)] = after
        return before, after

    def agent(self, app_code: str, session_id: str, agent: str) -> AgentTurns:
        return self.agents.get((app_code, session_id, agent), AgentTurns(app_code, session_id, agent))

    def message(self, app_code: str, session_id: str, message_id: str) -> Message | None:
        return self.messages.get((app_code, session_id, message_id))

    def approval(self, app_code: str, session_id: str, approval_id: str) -> Approval | None:
        return self.approvals.get((app_code, session_id, approval_id))

    def commit(self, change: Change, at_ms: int) -> list[SessionEvent]:
        while self.before_commit:
            self.before_commit.pop(0)()
        session, before = change.session, change.before
        stored = self.sessions[(session.app_code, session.session_id)]
        current = self.agent(before.app_code, before.session_id, before.agent)
        read = (session.revision, session.next_seq, before.version)
        if (stored.revision, stored.next_seq, current.version) != read:
            raise StaleRead(f"session {session.session_id} changed")
        if change.approval is not None and self._approval_version(change.approval) != _version(change.approval_before):
            raise StaleRead(f"approval {change.approval.approval_id} changed")
        events = [
            SessionEvent(session.next_seq + n, entry.type, at_ms, entry.actor, entry.data)
            for n, entry in enumerate(change.entries, start=1)
        ]
        self.sessions[(session.app_code, session.session_id)] = dataclasses.replace(
            stored, next_seq=session.next_seq + len(events)
        )
        if change.after != before:
            key = (before.app_code, before.session_id, before.agent)
            self.agents[key] = dataclasses.replace(change.after, version=before.version + 1)
        if change.message is not None:
            message = change.message
            self.messages[(message.app_code, message.session_id, message.message_id)] = message
        if change.approval is not None:
            approval = change.approval
            key = (approval.app_code, approval.session_id, approval.approval_id)
            self.approvals[key] = dataclasses.replace(approval, version=_version(change.approval_before) + 1)
        self.log.setdefault((session.app_code, session.session_id), []).extend(events)
        self.commits += 1
        return events

    def events(self, app_code: str, session_id: str, after_seq: int, limit: int) -> list[SessionEvent]:
        return [e for e in self.log.get((app_code, session_id), []) if e.seq > after_seq][:limit]

    def mark_dispatched(self, turn: Turn) -> None:
        key = (turn.app_code, turn.session_id, turn.agent)
        current = self.agents.get(key)
        if current is not None and current.turn_id == turn.turn_id:
            self.agents[key] = dataclasses.replace(
                current, dispatched_turn_id=turn.turn_id, version=current.version + 1
            )
            self.dispatched.append(turn.turn_id)

    def _approval_version(self, approval: Approval) -> int:
        return _version(self.approvals.get((approval.app_code, approval.session_id, approval.approval_id)))

    def mark_told(self, approval: Approval) -> None:
        key = (approval.app_code, approval.session_id, approval.approval_id)
        stored = self.approvals.get(key)
        if stored is not None and (stored.version, stored.status) == (approval.version, approval.status):
            self.approvals[key] = dataclasses.replace(stored, told=True, version=stored.version + 1)

    def due(self, before_ms: int, limit: int) -> list[Due]:
        due = [
            Due(app, session, agent=agent) for (app, session, agent), turns in self.agents.items() if turns.undispatched
        ]
        due += [
            Due(app, session, approval_id=approval_id)
            for (app, session, approval_id), a in self.approvals.items()
            if a.untold
        ]
        return due[:limit]

    def delivered_reopened(self, app_code: str, session_id: str) -> None:
        """Nothing to forget: `due` here reads the agents' state (reopened sessions are not tracked)."""


def _version(approval: Approval | None) -> int:
    """An approval's stored version; 0 for none (a new one)."""
    return approval.version if approval is not None else 0


class InMemoryConfirmStore:
    """The confirm store's port in memory, with the Dynamo store's condition: a transition lands only on the
    version and status it was decided from (else StaleConfirm). `before_commit` as in InMemoryTurnStore."""

    def __init__(self) -> None:
        self.confirms: dict[tuple[str, str], Confirm] = {}
        self.sources: dict[tuple[str, str, str], str] = {}
        self.before_commit: list[Callable[[], object]] = []
        self.lost_replies = 0

    def create(self, confirm: Confirm) -> Confirm:
        source = (confirm.app_code, confirm.source_name, confirm.source_event_id)
        if source in self.sources:
            return self.confirms[(confirm.app_code, self.sources[source])]
        self.sources[source] = confirm.confirm_id
        self.confirms[(confirm.app_code, confirm.confirm_id)] = confirm
        return confirm

    def get(self, app_code: str, confirm_id: str) -> Confirm | None:
        return self.confirms.get((app_code, confirm_id))

    def get_many(self, app_code: str, confirm_ids: list[str]) -> list[Confirm]:
        return [c for cid in confirm_ids if (c := self.confirms.get((app_code, cid))) is not None]

    def by_source(self, app_code: str, source_name: str, source_event_id: str) -> Confirm | None:
        confirm_id = self.sources.get((app_code, source_name, source_event_id))
        return None if confirm_id is None else self.confirms[(app_code, confirm_id)]

    def by_business(self, app_code: str, business_type: str, business_id: str) -> Confirm | None:
        found = [
            c
            for (app, _), c in self.confirms.items()
            if (app, c.business_type, c.business_id) == (app_code, business_type, business_id)
        ]
        return max(found, key=lambda c: c.created_at_ms, default=None)

    def transition(self, current: Confirm, new: Confirm) -> Confirm:
        while self.before_commit:
            self.before_commit.pop(0)()
        stored = self.confirms[(current.app_code, current.confirm_id)]
        if (stored.version, stored.status) != (current.version, current.status):
            raise StaleConfirm(current.confirm_id)
        self.confirms[(new.app_code, new.confirm_id)] = new
        if self.lost_replies:  # the write landed; its reply was lost, and the SDK's retry met its own condition
            self.lost_replies -= 1
            raise StaleConfirm(current.confirm_id)
        return new

    def between(
        self, app_code: str, user_a: str, user_b: str, limit: int, page_token: str
    ) -> tuple[list[Confirm], str]:
        pair = {user_a, user_b}
        found = [c for c in self.confirms.values() if {c.sender_user_id, c.receiver_user_id} == pair]
        return sorted(found, key=lambda c: c.created_at_ms, reverse=True)[:limit], ""

    def due(self, now: int, limit: int) -> list[Confirm]:
        return [
            c
            for c in self.confirms.values()
            if (str(c.status) == "pending" and c.expire_at_ms <= now)
            or (str(c.status) == "processing" and c.lock_until_ms <= now)
        ][:limit]


class InMemoryDeliveryStore:
    """The push delivery records in memory, with the Dynamo store's rules: a record is created once and keeps
    its MsgRandom; a failure never overwrites a sent record; every recorded outcome counts an attempt."""

    def __init__(self) -> None:
        self.records: dict[tuple[str, str, str], Delivery] = {}

    def _current(self, delivery: Delivery) -> Delivery:
        return self.records[(delivery.app_code, delivery.confirm_id, delivery.key)]

    def _update(self, delivery: Delivery, **changes: Any) -> None:
        key = (delivery.app_code, delivery.confirm_id, delivery.key)
        self.records[key] = dataclasses.replace(self.records[key], **changes)

    def _outcome(self, delivery: Delivery, **changes: Any) -> None:
        self._update(delivery, attempts=self._current(delivery).attempts + 1, **changes)

    def begin(self, app_code: str, confirm_id: str, key: str, msg_random: int, now: int) -> Delivery:
        return self.records.setdefault(
            (app_code, confirm_id, key), Delivery(app_code, confirm_id, key, msg_random, "pending")
        )

    def sending(self, delivery: Delivery, now: int) -> None:
        self._update(delivery, sending_since_ms=self._current(delivery).sending_since_ms or now)

    def sent(self, delivery: Delivery, result: SendResult, now: int) -> None:
        self._outcome(delivery, status="sent", sent_at_ms=now, msg_key=result.msg_key, sending_since_ms=0)

    def failed(self, delivery: Delivery, error: str, permanent: bool, now: int) -> None:
        if self._current(delivery).status != "sent":
            status = "failed" if permanent else "pending"
            self._outcome(delivery, status=status, last_error=error, last_error_at_ms=now)

    def for_confirm(self, app_code: str, confirm_id: str) -> list[Delivery]:
        return [d for (app, confirm, _), d in self.records.items() if (app, confirm) == (app_code, confirm_id)]

    def failures(self, limit: int) -> list[Delivery]:
        return [d for d in self.records.values() if d.status == "failed"][:limit]


class InMemoryJobStore:
    """The external-event store's ports (intake, dispatch, operations, the janitor's reads) in memory. A commit
    lands only where `Guard.of(before, after)` holds, as on DynamoDB; the contract suite
    (tests/functional/test_job_store_contract.py) runs the same scenarios on both.

    `before[name]` holds calls to make once, just before the next call of that method (or that step of a
    commit: claim, mark, settle, retry, block, complete, resolve): a race test makes a competing decision
    there, between one decision's reads and its write."""

    def __init__(self) -> None:
        self.heads: dict[str, LaneHead] = {}
        self.jobs: dict[tuple[str, int], Job] = {}
        self.events: dict[tuple[str, str], StoredEvent] = {}
        self.cards: dict[tuple[str, str, str], CardMessage] = {}
        self.before: dict[str, list[Callable[[], object]]] = {}
        self.writes: list[str] = []  # each landed write's step, in order

    def _hook(self, name: str) -> None:
        while self.before.get(name):
            self.before[name].pop(0)()

    # intake
    def append(self, lane: Lane, event: ExternalEvent, clock: Clock, tenant: str = "") -> Job:
        self._hook("append")
        stored = self.events.get((lane.service_id, event.event_id))
        if stored is not None:
            raise DuplicateEvent(stored)
        head = self.heads.get(lane.key, LaneHead(lane.key))
        now = max(clock(), head.last_received_at_ms)
        seq, by_target = head.next_seq + 1, bool(lane.target)
        job = Job(lane.service_id, seq, event, event.content_hash, now, by_target=by_target, tenant=tenant)
        self.heads[lane.key] = dataclasses.replace(head, next_seq=job.seq, last_received_at_ms=now)
        self.events[(lane.service_id, event.event_id)] = StoredEvent(event.event_id, job.seq, job.content_hash, now)
        self.jobs[(lane.key, job.seq)] = job
        return job

    # reads
    def head(self, lane: str) -> LaneHead:
        self._hook("head")
        return self.heads.get(lane, LaneHead(lane))

    def job(self, lane: str, seq: int) -> Job | None:
        self._hook("job")
        return self.jobs.get((lane, seq))

    def card(self, service_id: str, card_id: str, target: Target) -> CardMessage | None:
        return self.cards.get((service_id, card_id, target.key))

    def waiting(self, lane: str, after_seq: int, limit: int) -> list[Job]:
        later = sorted(seq for (key, seq) in self.jobs if key == lane and seq > after_seq)
        return [self.jobs[(lane, seq)] for seq in later[:limit]]

    def blocked(self) -> list[Job]:
        return sorted((j for j in self.jobs.values() if j.status.blocking), key=lambda j: j.blocked_at_ms)

    def in_flight_until(self, before_ms: int) -> list[Job]:
        return [
            j
            for j in self.jobs.values()
            if j.status is JobStatus.RUNNING and j.marked_at_ms and j.lock_until_ms < before_ms
        ]

    # writes
    def advance(self, lane: str, from_seq: int, to_seq: int) -> None:
        self._hook("advance")
        head = self.heads[lane]
        if head.done_seq == from_seq:
            self.heads[lane] = dataclasses.replace(head, done_seq=to_seq)

    def commit(
        self, before: Job, after: Job, at_ms: int, *, card: CardWrite | None = None, advance: bool = False
    ) -> Job:
        self._hook(step_of(before, after))
        lane = after.lane.key
        key = (lane, after.seq)
        head = self.heads[lane]
        held = Guard.of(before, after, at_ms).holds(self.jobs[key])
        if advance and head.done_seq != after.seq - 1:
            held = False
        if card is not None:
            current = self.cards.get((card.service_id, card.card_id, card.target.key))
            held = held and (current.revision if current else None) == card.expected_revision
        if not held:
            if self.jobs[key].same_step(after):
                return after
            raise StaleJob(f"job {after.job_id} changed")
        self.jobs[key] = after
        if advance:
            self.heads[lane] = dataclasses.replace(head, done_seq=after.seq)
        if card is not None:
            self.cards[(card.service_id, card.card_id, card.target.key)] = card.card
        self.writes.append(step_of(before, after))
        return after

    def supersede(self, run: Sequence[tuple[Job, Job]], at_ms: int) -> None:
        self._hook("supersede")
        lane = run[0][1].lane.key
        head = self.heads[lane]
        held = head.done_seq == run[0][1].seq - 1
        if not (held and all(Guard.of(b, a, at_ms).holds(self.jobs[(lane, a.seq)]) for b, a in run)):
            raise StaleJob(f"a job of {lane} from {run[0][1].seq} to {run[-1][1].seq} changed")
        for _, after in run:
            self.jobs[(lane, after.seq)] = after
        self.heads[lane] = dataclasses.replace(head, done_seq=run[-1][1].seq)
        self.writes.append("supersede")


def step_of(before: Job, after: Job) -> str:
    """Which of a job's steps a commit makes, for the race hooks."""
    if before.status.blocking and after.status is not JobStatus.RUNNING:
        return "resolve"
    if before.status is JobStatus.UNKNOWN:
        return "settle"
    if after.status is JobStatus.RUNNING:
        return "mark" if after.attempt_id == before.attempt_id and before.status is JobStatus.RUNNING else "claim"
    if after.status is JobStatus.QUEUED:
        return "retry"
    return "block" if after.status.blocking else "complete"


@dataclasses.dataclass(frozen=True)
class FixedTargets:
    """Event dispatch's target policy with every service allowed the same targets."""

    allowed: frozenset[str]
    weight: int = 1

    def delivery_scope(self, service_id: str) -> DeliveryScope:
        return DeliveryScope("", self.allowed, self.weight)


@dataclasses.dataclass(frozen=True)
class PartnerKey:
    """A partner service's key, as event intake reads it."""

    service_id: str
    allowed_targets: frozenset[str]
    allow_markdown: bool = False
    target_rate: int | None = None
    orders_by_target: bool = False
    delivery_tenant: str = ""


class AdmitAll:
    """An intake limit that never refuses (the limits have their own tests)."""

    def check(self, subject: str, per_minute: int | None) -> None:
        return None


class InMemoryBucketStore:
    """The governors' buckets in memory, each written only over the version it was read at."""

    def __init__(self) -> None:
        self.buckets: dict[str, Bucket] = {}

    def read(self, name: str) -> Bucket:
        return self.buckets.get(name, Bucket())

    def write(self, buckets: Mapping[str, Bucket], expires_at_s: int) -> bool:
        if any(self.read(name).version != bucket.version for name, bucket in buckets.items()):
            return False
        for name, bucket in buckets.items():
            self.buckets[name] = dataclasses.replace(bucket, version=bucket.version + 1)
        return True


class InMemoryCircuitStore:
    """The provider apps' circuits in memory, each written only over the version it was read at."""

    def __init__(self) -> None:
        self.circuits: dict[str, CircuitState] = {}

    def read(self, name: str) -> CircuitState:
        return self.circuits.get(name, CircuitState())

    def write(self, name: str, state: CircuitState) -> bool:
        if self.read(name).version != state.version:
            return False
        self.circuits[name] = dataclasses.replace(state, version=state.version + 1)
        return True

    def answered(self, name: str, token: str) -> None:
        stored = self.read(name).answered(token)
        self.circuits[name] = dataclasses.replace(stored, version=stored.version + 1)


class InMemoryTenantStore:
    """The tenant registry in memory."""

    def __init__(self) -> None:
        self.tenants: dict[str, Tenant] = {}

    def get(self, app_code: str) -> Tenant | None:
        return self.tenants.get(app_code)

    def put(self, tenant: Tenant) -> None:
        self.tenants[tenant.app_code] = tenant

    def all(self) -> list[Tenant]:
        return list(self.tenants.values())


def tenants_in_memory(required: bool = False, clock: Callable[[], int] = lambda: 0) -> Tenants:
    """A registry of no tenant yet (every app_code uses the stack's providers unless `required`)."""
    return Tenants(
        InMemoryTenantStore(), TenantRules("herald/tenants", https_only=False), required=required, clock=clock
    )


class InMemoryWebhookStore:
    """Status webhooks by (service, tenant)."""

    def __init__(self) -> None:
        self.webhooks: dict[tuple[str, str], StatusWebhook] = {}

    def get(self, service_id: str, tenant: str) -> StatusWebhook | None:
        return self.webhooks.get((service_id, tenant))

    def put(self, webhook: StatusWebhook) -> None:
        self.webhooks[(webhook.service_id, webhook.tenant)] = webhook

    def delete(self, service_id: str, tenant: str) -> bool:
        return self.webhooks.pop((service_id, tenant), None) is not None

    def all(self) -> list[StatusWebhook]:
        return list(self.webhooks.values())


class StaticResolver:
    """Every host name resolves to `address` (a public one unless a test says otherwise); an address is itself."""

    def __init__(self, address: str = "93.184.215.14") -> None:
        self.address = address

    def addresses(self, host: str, port: int) -> list[str]:
        try:
            return [str(ipaddress.ip_address(host.strip("[]")))]
        except ValueError:
            return [self.address]


class InMemoryHoldStore:
    """The holds table in memory: each scope's held messages in key order, and the operators' pauses."""

    def __init__(self) -> None:
        self.items: dict[tuple[str, str], Held] = {}
        self.pauses_in_force: dict[str, Pause] = {}

    def put(self, held: Held) -> None:
        self.items[(held.scope, held.key)] = held

    def in_scope(self, scope: str) -> list[Held]:
        return [held for (s, _), held in sorted(self.items.items()) if s == scope]

    def delete(self, held: Held) -> None:
        self.items.pop((held.scope, held.key), None)

    def put_pause(self, pause: Pause) -> bool:
        return self.pauses_in_force.setdefault(pause.key, pause) is pause

    def pauses(self) -> list[Pause]:
        return list(self.pauses_in_force.values())

    def delete_pause(self, key: str) -> bool:
        return self.pauses_in_force.pop(key, None) is not None


class InMemoryAuditStore:
    """The audit table in memory: records by id (time order), an outcome given once."""

    def __init__(self) -> None:
        self.records: dict[str, AuditRecord] = {}

    def add(self, record: AuditRecord) -> None:
        assert record.record_id not in self.records
        self.records[record.record_id] = record

    def finish(self, record: AuditRecord) -> bool:
        if self.records[record.record_id].outcome != BEGUN:
            return False
        self.records[record.record_id] = record
        return True

    def since(self, since_ms: int, limit: int) -> list[AuditRecord]:
        found = [record for key, record in sorted(self.records.items(), reverse=True) if record.at_ms >= since_ms]
        return found[:limit]
