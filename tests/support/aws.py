"""Tables and queues for in-process tests, created from template.yaml (the one schema source)."""

from __future__ import annotations

import copy
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Self

import boto3
from herald_ops.template import StackTemplate
from moto.core.models import DEFAULT_ACCOUNT_ID
from moto.dynamodb.models import dynamodb_backends
from moto.sqs.models import sqs_backends

from herald_dev.provision import provision

REPO = Path(__file__).resolve().parents[2]


def create_stack(stack_name: str = "test") -> StackTemplate:
    """Create every table and queue of template.yaml on moto's mock_aws. The first stack of a name in a process is
    provisioned as the local cloud provisions one (`herald_dev.provision`, its calls through botocore); each later
    one, in a test's fresh mock, gets copies of the tables moto made then and the same queues, made on moto's backend
    directly: the calls cost 0.2 s of CPU a test, and five hundred tests make the same stack."""
    stack = StackTemplate.from_file(
        REPO / "template.yaml", stack_name=stack_name, parameter_overrides={"Stage": "test"}
    )
    where = (
        stack_name,
        os.environ.get("AWS_DEFAULT_REGION", ""),
        os.environ.get("MOTO_ACCOUNT_ID", DEFAULT_ACCOUNT_ID),
    )
    made = _provisioned.get(where)
    if made is None:
        queues = _QueuesAsked(boto3.client("sqs"))
        provision(stack, boto3.client("dynamodb"), queues)  # type: ignore[arg-type]
        _provisioned[where] = made = _Provisioned.of(stack, queues.asked, *where[1:])
    made.restore(stack)
    return stack


@dataclass(frozen=True)
class _Provisioned:
    """A stack as provisioned on moto: its tables as moto holds them, its queues as asked for, its attributes."""

    tables: dict[str, Any]
    queues: list[tuple[str, dict[str, Any]]]
    attributes: dict[str, dict[str, str]]
    region: str
    account: str

    @classmethod
    def of(cls, stack: StackTemplate, queues: list[tuple[str, dict[str, Any]]], region: str, account: str) -> Self:
        tables = dynamodb_backends[account][region].tables
        return cls(copy.deepcopy(tables), queues, copy.deepcopy(stack.attributes), region, account)

    def restore(self, stack: StackTemplate) -> None:
        """The stack in this mock: copies of its tables, its queues (dead-letter queues first, as asked)."""
        tables = dynamodb_backends[self.account][self.region].tables
        if set(self.tables) - set(tables):
            tables.update(copy.deepcopy(self.tables))
            for name, attributes in self.queues:
                sqs_backends[self.account][self.region].create_queue(name, **attributes)
        stack.attributes.update(copy.deepcopy(self.attributes))


_provisioned: dict[tuple[str, str, str], _Provisioned] = {}


class _QueuesAsked:
    """The SQS client provision uses, noting each queue it creates with its attributes."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.asked: list[tuple[str, dict[str, Any]]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def create_queue(self, **request: Any) -> Any:
        self.asked.append((request["QueueName"], dict(request.get("Attributes", {}))))
        return self._client.create_queue(**request)


def load_function(name: str) -> ModuleType:
    """Import functions/<name>/app.py under a unique module name (several app.py never clash)."""
    path = REPO / "functions" / name / "app.py"
    spec = importlib.util.spec_from_file_location(f"function_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_event(relative: str) -> dict[str, object]:
    import json

    return json.loads((REPO / "events" / relative).read_text())  # type: ignore[no-any-return]
