"""Which Herald an operator's command acts on: a deployed stack (`--stack`, through the operator's AWS
credentials) or the running local cloud (its state file). Either way the command builds Herald's services
from the settings that stack's functions run with, through the same container the functions use."""

from __future__ import annotations

import getpass
import json
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path
from typing import Any

import boto3

from herald.container import Clients, Container
from herald.settings import Settings

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_STATE = REPO_ROOT / ".herald" / "local.json"
DEFAULT_TEMPLATE = REPO_ROOT / "template.yaml"


@cache
def _session(profile: str | None, region: str | None) -> boto3.Session:
    """One session per profile and region: a new one reads botocore's endpoint and service models again."""
    return boto3.Session(profile_name=profile, region_name=region)


class NoLocalCloud(Exception):
    """No --stack, and no local cloud running."""


@dataclass(frozen=True)
class Stack:
    name: str | None  # None: the local cloud
    profile: str | None
    region: str | None
    state_file: Path
    template: Path

    @cached_property
    def local_state(self) -> dict[str, Any]:
        if not self.state_file.exists():
            raise NoLocalCloud(
                f"no local cloud is running ({self.state_file} not found): start it with `make dev`, or pass --stack"
            )
        state: dict[str, Any] = json.loads(self.state_file.read_text())
        return state

    def client(self, service: str, endpoint_url: str | None = None) -> Any:
        """A client of the deployed stack's account, or of the running local cloud's endpoints (`endpoint_url`:
        a service reached at its own, as the WebSocket API's connections are)."""
        if self.name:
            return _session(self.profile, self.region).client(service, endpoint_url=endpoint_url)  # type: ignore[call-overload]
        state = self.local_state
        endpoint = endpoint_url or state["aws_endpoint"]
        if service in ("dynamodb", "dynamodbstreams") and state.get("dynamodb_endpoint"):
            endpoint = state["dynamodb_endpoint"]
        if service == "sqs" and state.get("sqs_endpoint"):
            endpoint = state["sqs_endpoint"]
        return boto3.client(  # type: ignore[call-overload]
            service,
            endpoint_url=endpoint,
            region_name=state["region"],
            aws_access_key_id="local",
            aws_secret_access_key="local",  # noqa: S106 - the local emulators accept any credentials
        )

    @cached_property
    def physical_ids(self) -> dict[str, str]:
        """Logical id -> physical id (a table's name, a queue's URL)."""
        if self.name:
            pages = self.client("cloudformation").get_paginator("list_stack_resources").paginate(StackName=self.name)
            return {
                r["LogicalResourceId"]: r["PhysicalResourceId"]
                for page in pages
                for r in page["StackResourceSummaries"]
            }
        return {logical_id: str(attributes["Ref"]) for logical_id, attributes in self.local_state["resources"].items()}

    @cached_property
    def actor(self) -> str:
        """Who acts, as the audit log records it: the AWS caller identity's ARN for a deployed stack, the local
        user for the local cloud."""
        if self.name:
            return str(self.client("sts").get_caller_identity()["Arn"])
        return getpass.getuser()

    @cached_property
    def settings(self) -> Settings:
        """The settings the stack's functions run with: the deployed HTTP function's environment, or the
        local cloud's (secrets left out of both: no command here needs one)."""
        if self.name:
            function = self.physical_ids["HttpApiFunction"]
            configuration = self.client("lambda").get_function_configuration(FunctionName=function)
            return Settings.from_env(configuration["Environment"]["Variables"])
        return Settings.from_env(self.local_state["settings"])

    @cached_property
    def container(self) -> Container:
        """Herald's parts, built from the stack's settings, talking to its tables and queues."""
        management = self.settings.ws_management_endpoint
        clients = Clients(
            dynamodb=self.client("dynamodb"),
            sqs=self.client("sqs"),
            apigw_management=self.client("apigatewaymanagementapi", management) if management else None,
        )
        return Container(self.settings, clients)
