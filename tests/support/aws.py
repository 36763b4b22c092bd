"""Tables and queues for in-process tests, created from template.yaml (the one schema source)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import boto3
from herald_ops.template import StackTemplate

from herald_dev.provision import provision

REPO = Path(__file__).resolve().parents[2]


def create_stack(stack_name: str = "test") -> StackTemplate:
    """Create every table and queue of template.yaml on the current endpoint (moto's mock_aws in tests)."""
    stack = StackTemplate.from_file(
        REPO / "template.yaml", stack_name=stack_name, parameter_overrides={"Stage": "test"}
    )
    provision(stack, boto3.client("dynamodb"), boto3.client("sqs"))
    return stack


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
