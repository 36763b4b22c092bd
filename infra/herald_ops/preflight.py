"""`herald-ops preflight --stack NAME`: what must exist before (or after) a deploy, checked against the
stack's own parameters, one finding a line. Nothing is changed.

* the stack exists and is in a settled state;
* the SSM SecureStrings the functions read (Tencent IM secret key, Feishu app secret) exist as SecureStrings,
  and so do those of every registered tenant's own apps;
* the identity provider: `JwtIssuer` is not the placeholder, its OpenID discovery document names the same
  issuer, and its key set holds an RSA signing key (API Gateway's JWT authorizer verifies RSA only);
* the provider ids are set (Tencent IM SDKAppID, Feishu app id);
* a customer managed key (`KmsKeyArn`, when set) is enabled and its key policy lets DynamoDB use it.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from herald.auth.tokens import DISCOVERY_PATH
from herald.tenants.models import Tenant

PLACEHOLDER_ISSUER = "https://auth.example.invalid/"
SETTLED = ("CREATE_COMPLETE", "UPDATE_COMPLETE", "UPDATE_ROLLBACK_COMPLETE", "IMPORT_COMPLETE")


@dataclass(frozen=True)
class Finding:
    check: str
    ok: bool
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"check": self.check, "ok": self.ok, "detail": self.detail}


def _fetch_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 - the operator's own IdP URL
        return json.loads(response.read())


def preflight(
    stack_name: str, cloudformation: Any, ssm: Any, kms: Any, apigateway: Any, tenants: Iterable[Tenant] = ()
) -> list[Finding]:
    try:
        (stack,) = cloudformation.describe_stacks(StackName=stack_name)["Stacks"]
    except Exception as exc:  # the stack is missing or unreadable: nothing else can be checked
        return [Finding("stack", False, f"{stack_name}: {exc}")]
    findings = [Finding("stack", stack["StackStatus"] in SETTLED, f"{stack_name} is {stack['StackStatus']}")]
    parameters = {p["ParameterKey"]: p.get("ResolvedValue", p["ParameterValue"]) for p in stack.get("Parameters", [])}
    for key in ("TencentImSecretKeyParameter", "FeishuAppSecretParameter"):
        findings.append(_secure_string(ssm, key, "/" + parameters.get(key, "").lstrip("/")))
    findings.extend(_identity_provider(parameters.get("JwtIssuer", ""), parameters.get("JwtAudience", "")))
    for key, unset in (("TencentImSdkAppId", "0"), ("FeishuAppId", "cli_unset")):
        value = parameters.get(key, unset)
        findings.append(Finding(key, value != unset, f"{key} = {value!r}" + (" (not set)" if value == unset else "")))
    if parameters.get("KmsKeyArn"):
        findings.append(_customer_key(kms, parameters["KmsKeyArn"]))
    if parameters.get("SetApiGatewayLoggingRole", "false") != "true":
        findings.append(_account_logging_role(apigateway))
    for tenant in tenants:
        if tenant.tencent_im is not None:
            findings.append(
                _secure_string(ssm, f"{tenant.app_code}: Tencent IM key", tenant.tencent_im.secret_parameter)
            )
        if tenant.feishu is not None:
            findings.append(
                _secure_string(ssm, f"{tenant.app_code}: Feishu app secret", tenant.feishu.secret_parameter)
            )
    return findings


def _account_logging_role(apigateway: Any) -> Finding:
    """The WebSocket API's access logs need the account's API Gateway CloudWatch Logs role (the stack sets it
    only with SetApiGatewayLoggingRole=true): without it the stage cannot be created."""
    role = apigateway.get_account().get("cloudwatchRoleArn")
    if not role:
        return Finding(
            "ApiGatewayLoggingRole",
            False,
            "this account and region have no API Gateway CloudWatch Logs role: deploy with "
            "SetApiGatewayLoggingRole=true, or set one in API Gateway's settings",
        )
    return Finding("ApiGatewayLoggingRole", True, f"API Gateway logs to CloudWatch as {role}")


def _customer_key(kms: Any, key_arn: str) -> Finding:
    """SQS checks each function's own permission (the stack grants it); DynamoDB and its streams use the key
    through the key policy, which must allow it for the account (`kms:ViaService` dynamodb)."""
    try:
        metadata = kms.describe_key(KeyId=key_arn)["KeyMetadata"]
        policy = json.loads(kms.get_key_policy(KeyId=key_arn, PolicyName="default")["Policy"])
    except Exception as exc:
        return Finding("KmsKeyArn", False, f"{key_arn}: {exc}")
    if metadata.get("KeyState") != "Enabled" or metadata.get("KeyManager") != "CUSTOMER":
        return Finding("KmsKeyArn", False, f"{key_arn} is {metadata.get('KeyState')} ({metadata.get('KeyManager')})")
    via_dynamodb = f"dynamodb.{key_arn.split(':')[3]}.amazonaws.com"
    if via_dynamodb not in json.dumps(policy.get("Statement", [])):
        return Finding("KmsKeyArn", False, f"the key policy of {key_arn} does not allow kms:ViaService {via_dynamodb}")
    return Finding("KmsKeyArn", True, f"{key_arn} is enabled and DynamoDB may use it")


def _secure_string(ssm: Any, key: str, name: str) -> Finding:
    try:
        parameter = ssm.get_parameter(Name=name, WithDecryption=False)["Parameter"]
    except Exception:
        return Finding(
            key,
            False,
            f"SSM parameter {name} is missing: aws ssm put-parameter --type SecureString --name {name} --value ...",
        )
    if parameter["Type"] != "SecureString":
        return Finding(key, False, f"SSM parameter {name} is a {parameter['Type']}, not a SecureString")
    return Finding(key, True, f"SSM SecureString {name} exists")


def _identity_provider(issuer: str, audience: str) -> list[Finding]:
    if not issuer or issuer == PLACEHOLDER_ISSUER:
        return [Finding("JwtIssuer", False, f"JwtIssuer is the placeholder {issuer!r}: set your identity provider's")]
    discovery_url = issuer.rstrip("/") + DISCOVERY_PATH
    try:
        discovery = _fetch_json(discovery_url)
        keys = _fetch_json(discovery["jwks_uri"]).get("keys", [])
    except Exception as exc:
        return [Finding("JwtIssuer", False, f"{discovery_url}: {exc}")]
    same_issuer = str(discovery.get("issuer", "")).rstrip("/") == issuer.rstrip("/")
    rsa = [key for key in keys if key.get("kty") == "RSA" and key.get("use", "sig") == "sig"]
    return [
        Finding("JwtIssuer", same_issuer, f"discovery names issuer {discovery.get('issuer')!r}"),
        Finding("JwtKeys", bool(rsa), f"{len(rsa)} RSA signing key(s) at {discovery['jwks_uri']}"),
        Finding("JwtAudience", bool(audience), f"JwtAudience = {audience!r}"),
    ]
