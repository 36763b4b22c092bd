"""`herald local --secret NAME=VALUE`: a template parameter's secret is stored where that parameter names it,
and a name starting with `/` (a tenant's secret) is stored under that very name; both as SecureStrings, and the
value is never logged."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from herald_ops.stack import DEFAULT_TEMPLATE
from herald_ops.template import StackTemplate
from moto import mock_aws

from herald_dev.cloud import store_secrets


@pytest.fixture
def ssm() -> Iterator[object]:
    with mock_aws():
        yield boto3.client("ssm", region_name="us-east-1")


def test_a_template_parameters_secret_and_a_tenants_named_secret_are_stored_as_secure_strings(
    ssm: object, caplog: pytest.LogCaptureFixture
) -> None:
    stack = StackTemplate.from_file(DEFAULT_TEMPLATE, parameter_overrides={"Stage": "local"})
    secrets = {"TencentImSecretKeyParameter": "stack-key-1", "/herald/tenants/shop/tencent-im-key": "shop-key-2"}
    with caplog.at_level("INFO"):
        store_secrets(ssm, stack, secrets)
    client = boto3.client("ssm", region_name="us-east-1")
    stack_name = "/" + str(stack.parameter("TencentImSecretKeyParameter")).lstrip("/")
    for name, value in ((stack_name, "stack-key-1"), ("/herald/tenants/shop/tencent-im-key", "shop-key-2")):
        stored = client.get_parameter(Name=name, WithDecryption=True)["Parameter"]
        assert (stored["Type"], stored["Value"]) == ("SecureString", value)
    assert "stored /herald/tenants/shop/tencent-im-key as the SecureString" in caplog.text
    assert "stack-key-1" not in caplog.text and "shop-key-2" not in caplog.text
