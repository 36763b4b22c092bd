"""Creates the template's DynamoDB tables and SQS queues on a local (or any) endpoint, idempotently."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError
from herald_ops.template import StackTemplate

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient

log = logging.getLogger("local-cloud")

_TABLE_KEYS = (
    "AttributeDefinitions",
    "KeySchema",
    "GlobalSecondaryIndexes",
    "LocalSecondaryIndexes",
    "StreamSpecification",
)
# CloudFormation queue properties -> SQS attribute names (the same words, as strings).
_QUEUE_ATTRIBUTES = (
    "FifoQueue",
    "ContentBasedDeduplication",
    "DeduplicationScope",
    "FifoThroughputLimit",
    "VisibilityTimeout",
    "MessageRetentionPeriod",
    "DelaySeconds",
    "MaximumMessageSize",
    "ReceiveMessageWaitTimeSeconds",
)


def provision(stack: StackTemplate, dynamodb: DynamoDBClient, sqs: SQSClient) -> None:
    for logical_id in stack.of_type("AWS::DynamoDB::Table"):
        create_table(stack, logical_id, dynamodb)
    queues = stack.of_type("AWS::SQS::Queue")
    # Dead-letter queues first: a redrive policy names its DLQ's ARN.
    for logical_id in sorted(queues, key=lambda lid: "RedrivePolicy" in queues[lid].get("Properties", {})):
        _create_queue(stack, logical_id, sqs)


def create_table(stack: StackTemplate, logical_id: str, dynamodb: DynamoDBClient) -> None:
    props = stack.resolve(stack.resources[logical_id].get("Properties", {}))
    name = stack.physical_name(logical_id)
    request: dict[str, Any] = {key: props[key] for key in _TABLE_KEYS if key in props}
    if "StreamSpecification" in request:
        request["StreamSpecification"] = {"StreamEnabled": True, **request["StreamSpecification"]}
    request["BillingMode"] = props.get("BillingMode", "PAY_PER_REQUEST")
    if request["BillingMode"] == "PROVISIONED":
        request["ProvisionedThroughput"] = props["ProvisionedThroughput"]
    try:
        table = dynamodb.create_table(TableName=name, **request)["TableDescription"]
        created = True
        log.info("created table %s (%s)", name, logical_id)
    except ClientError as exc:
        if exc.response["Error"]["Code"] != "ResourceInUseException":
            raise
        table, created = dynamodb.describe_table(TableName=name)["Table"], False
    if table.get("TableStatus") != "ACTIVE":
        dynamodb.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 0.2, "MaxAttempts": 100})  # type: ignore[typeddict-item]
    _enable_ttl(props.get("TimeToLiveSpecification"), name, dynamodb, new_table=created)
    attributes = {"Ref": name, "Arn": table["TableArn"]}
    if table.get("LatestStreamArn"):
        attributes["StreamArn"] = table["LatestStreamArn"]
    stack.attributes[logical_id] = attributes


def _enable_ttl(spec: dict[str, Any] | None, name: str, dynamodb: DynamoDBClient, *, new_table: bool) -> None:
    """Turn on the template's TTL: a new table has it off; one met again (a kept `make dev`) is asked first."""
    if not spec or not spec.get("Enabled"):
        return
    if not new_table:
        current = dynamodb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
        if current.get("TimeToLiveStatus") in ("ENABLED", "ENABLING"):
            return
    dynamodb.update_time_to_live(
        TableName=name, TimeToLiveSpecification={"AttributeName": spec["AttributeName"], "Enabled": True}
    )


def _create_queue(stack: StackTemplate, logical_id: str, sqs: SQSClient) -> None:
    props = stack.resolve(stack.resources[logical_id].get("Properties", {}))
    name = stack.physical_name(logical_id)
    attributes = {key: _attribute_text(props[key]) for key in _QUEUE_ATTRIBUTES if key in props}
    if "RedrivePolicy" in props:
        attributes["RedrivePolicy"] = json.dumps(props["RedrivePolicy"])
    url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]  # type: ignore[arg-type]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    stack.attributes[logical_id] = {"Ref": url, "Arn": arn, "QueueName": name, "QueueUrl": url}
    log.info("queue %s ready (%s)", name, logical_id)


def _attribute_text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)
