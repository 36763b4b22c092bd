"""The audit log's part: its table (written by herald-ops and the local console, never by a function)."""

from __future__ import annotations

from herald.audit.dynamo import DynamoAuditStore
from herald.audit.service import AuditLog
from herald.container import Container, part


@part
def audit_log(c: Container) -> AuditLog:
    return AuditLog(DynamoAuditStore(c.settings.audit_table, c.clients.dynamodb), clock=c.clock)
