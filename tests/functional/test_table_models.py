"""Each table's PynamoDB models describe the table template.yaml creates: its keys, its indexes (keys and
projection) and its TTL attribute. template.yaml stays the one schema source; a model that drifts from it
fails here, not in production."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import boto3
import pytest
from herald_ops.template import StackTemplate
from pynamodb.attributes import TTLAttribute
from pynamodb.models import Model

from herald.audit.dynamo import AuditRow
from herald.auth.dynamo import ServiceKeyRow
from herald.confirms.owners.dynamo import RegistrationRow
from herald.confirms.rows import ConfirmBusinessRow, ConfirmRow, ConfirmSourceRow, DeliveryRow
from herald.events.rows import CardRow, EventRecordRow, HeadRow, JobRow
from herald.holds.dynamo import HeldRow, PauseRow
from herald.inbox.dynamo import CounterRow, DedupRow, NotificationRow, PreferencesRow, TombstoneRow
from herald.invitations.dynamo import ClaimRow, GrantRow, InvitationRow
from herald.limits.dynamo import BucketRow, WindowRow
from herald.realtime.dynamo import ConnectionRow
from herald.tenants.dynamo import TenantRow
from herald.turns.rows import AgentRow, ApprovalRow, EventRow, MessageRow, SessionRow

MODELS: dict[str, list[type[Model]]] = {
    "ServiceKeysTable": [ServiceKeyRow],
    "RateLimitsTable": [WindowRow, BucketRow],
    "ConnectionsTable": [ConnectionRow],
    "InvitationsTable": [InvitationRow, ClaimRow, GrantRow],
    "InboxTable": [NotificationRow, CounterRow, PreferencesRow, TombstoneRow, DedupRow],
    "ConfirmsTable": [ConfirmRow, ConfirmSourceRow, ConfirmBusinessRow],
    "OwnersTable": [RegistrationRow],
    "TenantsTable": [TenantRow],
    "DeliveriesTable": [DeliveryRow],
    "TurnsTable": [SessionRow, AgentRow, ApprovalRow, MessageRow, EventRow],
    "ExternalEventsTable": [JobRow, HeadRow, EventRecordRow, CardRow],
    "HoldsTable": [HeldRow, PauseRow],
    "AuditTable": [AuditRow],
}


def keys(schema: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    return {key["AttributeName"]: key["KeyType"] for key in schema}


def types(definitions: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    return {a["AttributeName"]: a["AttributeType"] for a in definitions}


def table_of(aws: StackTemplate, logical_id: str) -> dict[str, Any]:
    """The table as template.yaml made it: keys, key types, indexes (keys, projection), TTL attribute."""
    dynamodb = boto3.client("dynamodb")
    name = aws.physical_name(logical_id)
    table = dynamodb.describe_table(TableName=name)["Table"]
    ttl = dynamodb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
    return {
        "keys": keys(table["KeySchema"]),
        "types": types(table["AttributeDefinitions"]),
        "indexes": {
            index["IndexName"]: (keys(index["KeySchema"]), index["Projection"]["ProjectionType"])
            for index in table.get("GlobalSecondaryIndexes", [])
        },
        "ttl": ttl.get("AttributeName") if ttl.get("TimeToLiveStatus") == "ENABLED" else None,
    }


def model_of(model: type[Model]) -> dict[str, Any]:
    schema = model._get_schema()
    ttl = [attribute.attr_name for attribute in model.get_attributes().values() if isinstance(attribute, TTLAttribute)]
    return {
        "keys": keys(schema["key_schema"]),
        "types": types(schema["attribute_definitions"]),
        "indexes": {
            index["index_name"]: (keys(index["key_schema"]), index["projection"]["ProjectionType"])
            for index in schema["global_secondary_indexes"]
        },
        "ttl": ttl[0] if ttl else None,
    }


@pytest.mark.parametrize(("logical_id", "model"), [(t, m) for t, models in MODELS.items() for m in models])
def test_the_model_has_the_keys_indexes_and_ttl_of_its_table(
    aws: StackTemplate, logical_id: str, model: type[Model]
) -> None:
    table, declared = table_of(aws, logical_id), model_of(model)
    assert declared["keys"] == table["keys"]
    assert declared["types"] == {name: table["types"][name] for name in declared["types"]}
    assert declared["indexes"] == {name: table["indexes"].get(name) for name in declared["indexes"]}
    assert declared["ttl"] in (None, table["ttl"])


@pytest.mark.parametrize("logical_id", sorted(MODELS))
def test_the_models_of_a_table_declare_all_its_indexes_and_its_ttl(aws: StackTemplate, logical_id: str) -> None:
    """A table shared by several item types (one model each) may spread its indexes over them."""
    table, declared = table_of(aws, logical_id), [model_of(model) for model in MODELS[logical_id]]
    assert set().union(*(model["indexes"] for model in declared)) == set(table["indexes"])
    assert {model["ttl"] for model in declared} - {None} == ({table["ttl"]} if table["ttl"] else set())


def test_every_table_of_the_template_has_its_models(aws: StackTemplate) -> None:
    tables = {logical_id for logical_id, r in aws.resources.items() if r["Type"] == "AWS::DynamoDB::Table"}
    assert set(MODELS) == tables
