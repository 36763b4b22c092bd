"""herald-ops preflight: what a deployed stack still needs (SSM secrets, its identity provider, its ids)."""

from __future__ import annotations

from typing import Any

import click
from herald_ops.commands.audit import reads_only
from herald_ops.commands.common import (
    print_rows,
    refuse,
    stack_of,
    stack_options,
)
from herald_ops.output import Listing
from herald_ops.stack import Stack

FINDINGS = Listing(("check", "ok", "detail"), "Nothing to check.")


@click.command(
    "preflight", help="what a deployed stack needs: SSM secrets (its own, its tenants'), identity provider, ids"
)
@stack_options
@reads_only
def preflight_command(**where: Any) -> int:
    from herald_ops.preflight import preflight

    stack = stack_of(**where)
    if not stack.name:
        return refuse("preflight checks a deployed stack: pass --stack NAME")
    client = stack.client
    findings = preflight(
        stack.name, client("cloudformation"), client("ssm"), client("kms"), client("apigateway"), _registered(stack)
    )
    print_rows([finding.to_dict() for finding in findings], FINDINGS)
    return 0 if all(finding.ok for finding in findings) else 1


def _registered(stack: Stack) -> list[Any]:
    """The stack's registered tenants (none when the stack is missing or has no tenants table yet)."""
    from herald.tenants.dynamo import DynamoTenantStore

    try:
        table = stack.physical_ids.get("TenantsTable")
    except Exception:
        return []
    return DynamoTenantStore(table, stack.client("dynamodb")).all() if table else []
