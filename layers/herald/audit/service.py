"""Writing and reading the audit log. An act is recorded before it runs (a process that dies midway leaves a
record that says `begun`), and its outcome is written once after: the store refuses a second outcome, and there is
no way here to change or delete a record."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any, Protocol

from herald.audit.models import AuditRecord, argument_text
from herald.clock import Clock, now_ms


class AuditStore(Protocol):
    def add(self, record: AuditRecord) -> None:
        """Write a new record (never over another: its id is new)."""
        ...

    def finish(self, record: AuditRecord) -> bool:
        """Give a begun record its outcome; False when it had one already (nothing changed)."""
        ...

    def since(self, since_ms: int, limit: int) -> list[AuditRecord]:
        """Records from `since_ms` on, newest first, at most `limit`."""
        ...


class AuditLog:
    def __init__(self, store: AuditStore, clock: Clock = now_ms) -> None:
        self._store = store
        self._clock = clock

    def begin(self, actor: str, verb: str, target: str, arguments: Mapping[str, Any]) -> AuditRecord:
        now = self._clock()
        record = AuditRecord(
            record_id=f"{now:013d}-{secrets.token_hex(6)}",
            at_ms=now,
            actor=actor,
            verb=verb,
            target=target,
            arguments={name: argument_text(value) for name, value in sorted(arguments.items())},
        )
        self._store.add(record)
        return record

    def finish(self, record: AuditRecord, outcome: str) -> AuditRecord:
        finished = record.finished(outcome, self._clock())
        self._store.finish(finished)
        return finished

    def listed(
        self, since_ms: int = 0, actor: str | None = None, verb: str | None = None, limit: int = 200
    ) -> list[AuditRecord]:
        """Newest first; `actor` and `verb` match a part of theirs (`--verb resolve` finds each resolve)."""
        found = self._store.since(since_ms, limit if actor is None and verb is None else 10 * limit)
        chosen = [
            record
            for record in found
            if (actor is None or actor in record.actor) and (verb is None or verb in record.verb)
        ]
        return chosen[:limit]
