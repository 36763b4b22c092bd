"""Both APIs write access logs (an IaC scanner flags an API without them): one JSON object a request, carrying
the request id Herald answers with, into a log group the stack owns with a retention; the WebSocket stage waits
for the account's API Gateway logging role when the stack sets it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from herald_ops.template import load_template

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = load_template(REPO / "template.yaml")
RESOURCES: dict[str, Any] = TEMPLATE["Resources"]


def access_log(api: str) -> dict[str, Any]:
    properties = RESOURCES[api]["Properties"]
    settings: dict[str, Any] = properties["AccessLogSettings"]
    return settings


@pytest.mark.parametrize(
    ("api", "log_group"), [("HttpApi", "HttpApiAccessLogs"), ("WebSocketStage", "WebSocketAccessLogs")]
)
def test_each_api_logs_one_json_object_a_request_with_herald_s_request_id_into_its_own_log_group(
    api: str, log_group: str
) -> None:
    settings = access_log(api)
    fields = json.loads(settings["Format"])  # the folded YAML is one line of JSON
    assert fields["requestId"] == "$context.requestId" and fields["status"] == "$context.status"
    assert all(value.startswith("$context.") for value in fields.values())
    assert settings["DestinationArn"] == {"Fn::GetAtt": [log_group, "Arn"]}
    group = RESOURCES[log_group]
    assert group["Type"] == "AWS::Logs::LogGroup"
    assert group["Properties"]["RetentionInDays"] == {"Ref": "AccessLogRetentionDays"}


def test_the_retention_is_a_setting_with_cloudwatchs_own_values() -> None:
    parameter = TEMPLATE["Parameters"]["AccessLogRetentionDays"]
    assert parameter["Default"] in parameter["AllowedValues"] and 30 in parameter["AllowedValues"]


def test_the_websocket_stage_waits_for_the_accounts_logging_role_when_the_stack_sets_it() -> None:
    assert "AccessLogPrerequisites" in RESOURCES["WebSocketStage"]["DependsOn"]
    waited = RESOURCES["AccessLogPrerequisites"]["Metadata"]["AccountLoggingRole"]
    assert waited["Fn::If"][0] == "SetsApiGatewayLoggingRole" and waited["Fn::If"][1] == {"Ref": "ApiGatewayAccount"}
    assert RESOURCES["ApiGatewayAccount"]["Condition"] == "SetsApiGatewayLoggingRole"
