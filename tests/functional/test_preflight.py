"""`herald-ops preflight --stack NAME` reads the stack's parameters and says, one line each, what a deploy
still needs: SSM SecureStrings, a real identity provider with an RSA key set, the provider ids."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
import yaml
from herald_ops.cli import main
from moto import mock_aws

from herald.tenants.dynamo import DynamoTenantStore
from herald.tenants.models import FeishuApp, Tenant, TencentImApp
from herald_dev.fakes.jwks import FakeJwks

STACK = "herald-prod"


@pytest.fixture
def jwks() -> Iterator[FakeJwks]:
    fake = FakeJwks().start()
    yield fake
    fake.stop()


def _stack(parameters: dict[str, str], with_tenants_table: bool = False) -> None:
    resources: dict[str, Any] = {"Marker": {"Type": "AWS::SQS::Queue"}}
    if with_tenants_table:
        resources["TenantsTable"] = {
            "Type": "AWS::DynamoDB::Table",
            "Properties": {
                "BillingMode": "PAY_PER_REQUEST",
                "AttributeDefinitions": [{"AttributeName": "app_code", "AttributeType": "S"}],
                "KeySchema": [{"AttributeName": "app_code", "KeyType": "HASH"}],
            },
        }
    template = {"Parameters": {name: {"Type": "String"} for name in parameters}, "Resources": resources}
    boto3.client("cloudformation").create_stack(
        StackName=STACK,
        TemplateBody=yaml.safe_dump(template),
        Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in parameters.items()],
    )


def _run(capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, dict[str, Any]]]:
    code = main(["preflight", "--stack", STACK, "--region", "us-east-1", "--json"])
    findings = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    return code, {finding["check"]: finding for finding in findings}


def _parameters(issuer: str) -> dict[str, str]:
    return {
        "JwtIssuer": issuer,
        "JwtAudience": "herald",
        "TencentImSecretKeyParameter": "herald/prod/tencent-im-secret-key",
        "FeishuAppSecretParameter": "herald/prod/feishu-app-secret",
        "TencentImSdkAppId": "1400000000",
        "FeishuAppId": "cli_a1b2",
    }


def test_a_ready_stack_passes_every_check(jwks: FakeJwks, capsys: pytest.CaptureFixture[str]) -> None:
    with mock_aws():
        _stack(_parameters(jwks.issuer))
        ssm = boto3.client("ssm")
        for name in ("tencent-im-secret-key", "feishu-app-secret"):
            ssm.put_parameter(Name=f"/herald/prod/{name}", Type="SecureString", Value="s3cret")
        _set_account_logging_role()
        code, findings = _run(capsys)
    assert code == 0, findings
    assert set(findings) == {
        "stack",
        "TencentImSecretKeyParameter",
        "FeishuAppSecretParameter",
        "JwtIssuer",
        "JwtKeys",
        "JwtAudience",
        "TencentImSdkAppId",
        "FeishuAppId",
        "ApiGatewayLoggingRole",
    }
    assert all(finding["ok"] for finding in findings.values())
    assert "s3cret" not in json.dumps(findings)


def test_missing_secrets_placeholder_issuer_and_unset_ids_are_named(capsys: pytest.CaptureFixture[str]) -> None:
    with mock_aws():
        _stack({**_parameters("https://auth.example.invalid/"), "TencentImSdkAppId": "0", "FeishuAppId": "cli_unset"})
        boto3.client("ssm").put_parameter(Name="/herald/prod/feishu-app-secret", Type="String", Value="in the clear")
        code, findings = _run(capsys)
    assert code == 1
    failed = {check for check, finding in findings.items() if not finding["ok"]}
    assert failed == {
        "TencentImSecretKeyParameter",
        "FeishuAppSecretParameter",
        "JwtIssuer",
        "TencentImSdkAppId",
        "FeishuAppId",
        "ApiGatewayLoggingRole",  # the WebSocket API's access logs could not be written: its stage would fail
    }
    assert "SetApiGatewayLoggingRole=true" in findings["ApiGatewayLoggingRole"]["detail"]
    assert "put-parameter" in findings["TencentImSecretKeyParameter"]["detail"]
    assert "not a SecureString" in findings["FeishuAppSecretParameter"]["detail"]


def test_a_stack_that_sets_the_accounts_logging_role_itself_is_not_asked_for_one(
    jwks: FakeJwks, capsys: pytest.CaptureFixture[str]
) -> None:
    with mock_aws():
        _stack({**_parameters(jwks.issuer), "SetApiGatewayLoggingRole": "true"})
        _, findings = _run(capsys)
    assert "ApiGatewayLoggingRole" not in findings


def _set_account_logging_role() -> None:
    role = "arn:aws:iam::123456789012:role/apigateway-cloudwatch"
    boto3.client("apigateway").update_account(
        patchOperations=[{"op": "replace", "path": "/cloudwatchRoleArn", "value": role}]
    )


def test_an_unknown_stack_is_one_failed_finding(capsys: pytest.CaptureFixture[str]) -> None:
    with mock_aws():
        code, findings = _run(capsys)
    assert code == 1 and list(findings) == ["stack"]


def _key_policy(account: str, via_dynamodb: bool) -> str:
    statements: list[dict[str, Any]] = [
        {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{account}:root"}, "Action": "kms:*", "Resource": "*"}
    ]
    if via_dynamodb:
        statements.append(
            {
                "Effect": "Allow",
                "Principal": {"AWS": "*"},
                "Action": [
                    "kms:Encrypt",
                    "kms:Decrypt",
                    "kms:ReEncrypt*",
                    "kms:GenerateDataKey*",
                    "kms:DescribeKey",
                    "kms:CreateGrant",
                ],
                "Resource": "*",
                "Condition": {
                    "StringEquals": {"kms:ViaService": "dynamodb.us-east-1.amazonaws.com", "kms:CallerAccount": account}
                },
            }
        )
    return json.dumps({"Version": "2012-10-17", "Statement": statements})


@pytest.mark.parametrize(
    ("via_dynamodb", "disabled", "ok", "says"),
    [
        (True, False, True, "DynamoDB may use it"),
        (False, False, False, "does not allow kms:ViaService dynamodb.us-east-1.amazonaws.com"),
        (True, True, False, "is Disabled"),
    ],
)
def test_a_customer_key_must_be_enabled_and_usable_by_dynamodb(
    jwks: FakeJwks, capsys: pytest.CaptureFixture[str], via_dynamodb: bool, disabled: bool, ok: bool, says: str
) -> None:
    with mock_aws():
        kms = boto3.client("kms")
        account = boto3.client("sts").get_caller_identity()["Account"]
        key = kms.create_key(Policy=_key_policy(account, via_dynamodb))["KeyMetadata"]
        if disabled:
            kms.disable_key(KeyId=key["KeyId"])
        _stack({**_parameters(jwks.issuer), "KmsKeyArn": key["Arn"]})
        for name in ("tencent-im-secret-key", "feishu-app-secret"):
            boto3.client("ssm").put_parameter(Name=f"/herald/prod/{name}", Type="SecureString", Value="s3cret")
        _set_account_logging_role()
        code, findings = _run(capsys)
    assert findings["KmsKeyArn"]["ok"] is ok and says in findings["KmsKeyArn"]["detail"]
    assert code == (0 if ok else 1)


def test_each_registered_tenants_own_secrets_are_checked_too(
    jwks: FakeJwks, capsys: pytest.CaptureFixture[str]
) -> None:
    with mock_aws():
        _stack(_parameters(jwks.issuer), with_tenants_table=True)
        ssm = boto3.client("ssm")
        for name in ("tencent-im-secret-key", "feishu-app-secret"):
            ssm.put_parameter(Name=f"/herald/prod/{name}", Type="SecureString", Value="s3cret")
        ssm.put_parameter(Name="/herald/tenants/acme/im", Type="SecureString", Value="acme-s3cret")
        _set_account_logging_role()
        resources = boto3.client("cloudformation").list_stack_resources(StackName=STACK)["StackResourceSummaries"]
        (table,) = [r["PhysicalResourceId"] for r in resources if r["LogicalResourceId"] == "TenantsTable"]
        acme = Tenant(
            "acme",
            tencent_im=TencentImApp(1400000777, "admin", "/herald/tenants/acme/im"),
            feishu=FeishuApp("cli_acme", "/herald/tenants/acme/feishu"),
        )
        DynamoTenantStore(table).put(acme)
        code, findings = _run(capsys)
    assert code == 1
    assert findings["acme: Tencent IM key"]["ok"] and not findings["acme: Feishu app secret"]["ok"]
    assert "acme-s3cret" not in json.dumps(findings)
