"""An operator's act as an auditor lists it: when, who, which verb on what, with which arguments (never a secret),
and what came of it. A record is written before its act and given its outcome once after; nothing edits it again,
and it is kept RETENTION_DAYS."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

RETENTION_DAYS = 400
BEGUN = "begun"  # written before its act; a record left so says the act was cut off (its process died)
OK = "ok"
_MAX_ARGUMENT_CHARS = 512


@dataclass(frozen=True)
class AuditRecord:
    record_id: str
    at_ms: int
    actor: str  # the AWS caller identity's ARN, the local user, or "console"
    verb: str  # "events resolve", "keys revoke", "console: dlq redrive", ...
    target: str
    arguments: dict[str, str] = field(default_factory=dict)
    outcome: str = BEGUN
    finished_at_ms: int | None = None

    @property
    def expires_at_s(self) -> int:
        return self.at_ms // 1000 + RETENTION_DAYS * 86_400

    def finished(self, outcome: str, at_ms: int) -> AuditRecord:
        return replace(self, outcome=outcome, finished_at_ms=at_ms)

    def view(self) -> dict[str, Any]:
        return {
            "at_ms": self.at_ms,
            "actor": self.actor,
            "verb": self.verb,
            "target": self.target,
            "arguments": self.arguments,
            "outcome": self.outcome,
            "finished_at_ms": self.finished_at_ms,
            "record_id": self.record_id,
        }


def argument_text(value: Any) -> str:
    """An argument as recorded: lists joined, long values cut (a record stays small)."""
    text = ",".join(str(v) for v in value) if isinstance(value, list | tuple) else str(value)
    return text if len(text) <= _MAX_ARGUMENT_CHARS else text[: _MAX_ARGUMENT_CHARS - 1] + "…"
