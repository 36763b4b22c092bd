"""A deployed stack on moto, as herald-ops and the console find one: the tables of template.yaml, and a
CloudFormation stack whose HTTP function runs with their names (and any settings a test gives it)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator

import boto3
import pytest
import yaml
from moto import mock_aws

from herald_dev import moto_patches
from tests.support.aws import create_stack


@contextlib.contextmanager
def deployed_stack(name: str, settings: dict[str, str] | None = None) -> Iterator[dict[str, str]]:
    """The stack `name` on moto while the block runs; its HTTP function's environment."""
    moto_patches.install()
    with mock_aws():
        tables = create_stack("prod")
        environment = {
            variable: str(tables.resolve(value))
            for variable, value in tables.function_properties("HttpApiFunction")["Environment"]["Variables"].items()
        }
        environment.update(settings or {})
        function = {
            "Runtime": "python3.11",
            "Handler": "app.handler",
            "Role": {"Fn::GetAtt": ["Role", "Arn"]},
            "Code": {"ZipFile": "def handler(event, context): pass"},
            "Environment": {"Variables": {k: v for k, v in environment.items() if v != ""}},
        }
        role = {"AssumeRolePolicyDocument": {"Version": "2012-10-17", "Statement": []}}
        template = {
            "Resources": {
                "Role": {"Type": "AWS::IAM::Role", "Properties": role},
                "HttpApiFunction": {"Type": "AWS::Lambda::Function", "Properties": function},
            }
        }
        boto3.client("cloudformation").create_stack(StackName=name, TemplateBody=yaml.safe_dump(template))
        yield environment


def ops(capsys: pytest.CaptureFixture[str], stack: str, *args: str, code: int = 0) -> list[dict[str, object]]:
    """`herald-ops ARGS --json --stack STACK`, asserting its exit code; the JSON lines it printed."""
    from herald_ops.cli import main

    capsys.readouterr()
    assert main([*args, "--json", "--stack", stack]) == code
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
