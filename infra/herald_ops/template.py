"""Reads template.yaml the way CloudFormation would, for the local cloud.

The YAML short forms (!Ref, !GetAtt, !Sub, ...) become their long forms, SAM Globals are merged into each
function, and intrinsic functions are resolved against a local stack: parameters (defaults, or overrides),
pseudo parameters, and the physical names and ARNs of resources the local cloud created. The template is
the only list of tables, queues and functions; nothing here names a resource of Herald's.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ACCOUNT_ID = "123456789012"
_NO_VALUE = object()


class TemplateError(Exception):
    pass


# libyaml's parser when PyYAML was built with it: template.yaml parses in a tenth of the pure-Python time.
_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _CfnLoader(_SafeLoader):  # type: ignore[valid-type,misc]
    pass


def _construct_tag(loader: yaml.SafeLoader, tag_suffix: str, node: yaml.Node) -> dict[str, Any]:
    name = "Ref" if tag_suffix == "Ref" else f"Fn::{tag_suffix}"
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
        if tag_suffix == "GetAtt" and isinstance(value, str):
            value = value.split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return {name: value}


_CfnLoader.add_multi_constructor("!", _construct_tag)


def load_template(path: Path) -> dict[str, Any]:
    """The template as data, a fresh copy each call: parsed once per process for each version of the file."""
    status = path.stat()
    return copy.deepcopy(_parsed(path.resolve(), status.st_mtime_ns, status.st_size))


@functools.lru_cache(maxsize=8)
def _parsed(path: Path, mtime_ns: int, size: int) -> dict[str, Any]:
    """One parse per version (mtime and size name it): every test's local stack reads the same template."""
    with path.open() as handle:
        document = yaml.load(handle, Loader=_CfnLoader)  # noqa: S506 - SafeLoader subclass with CFN tags
    if not isinstance(document, dict) or "Resources" not in document:
        raise TemplateError(f"{path} is not a CloudFormation template")
    return document


@dataclass
class StackTemplate:
    """A template bound to a local stack name, region and parameter values."""

    template: dict[str, Any]
    stack_name: str = "herald-local"
    region: str = "us-east-1"
    parameter_overrides: Mapping[str, str] = field(default_factory=dict)
    # Attributes of created resources: logical id -> {"Ref": ..., "Arn": ..., "StreamArn": ...}
    attributes: dict[str, dict[str, str]] = field(default_factory=dict)

    @classmethod
    def from_file(cls, path: Path, **kwargs: Any) -> StackTemplate:
        return cls(load_template(path), **kwargs)

    # ------------------------------------------------------------------ resources
    @property
    def resources(self) -> dict[str, dict[str, Any]]:
        return self.template["Resources"]  # type: ignore[no-any-return]

    def of_type(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return {lid: res for lid, res in self.resources.items() if res.get("Type") == resource_type}

    def physical_name(self, logical_id: str) -> str:
        resource = self.resources[logical_id]
        props = resource.get("Properties", {})
        explicit = props.get("TableName") or props.get("QueueName") or props.get("FunctionName")
        if explicit:
            return str(self.resolve(explicit))
        name = f"{self.stack_name}-{logical_id}"
        if resource["Type"] == "AWS::SQS::Queue" and str(self.resolve(props.get("FifoQueue", False))).lower() == "true":
            name += ".fifo"
        return name

    def function_properties(self, logical_id: str) -> dict[str, Any]:
        """A function's properties with SAM Globals merged in (maps merge, the function's own value wins)."""
        merged: dict[str, Any] = copy.deepcopy(self.template.get("Globals", {}).get("Function", {}))
        own = self.resources[logical_id].get("Properties", {})
        for key, value in own.items():
            if key == "Environment":
                variables = merged.setdefault("Environment", {}).setdefault("Variables", {})
                variables.update(value.get("Variables", {}))
            else:
                merged[key] = copy.deepcopy(value)
        return merged

    # ------------------------------------------------------------------ intrinsics
    def parameter(self, name: str) -> str:
        if name in self.parameter_overrides:
            return str(self.parameter_overrides[name])
        spec = self.template.get("Parameters", {}).get(name)
        if spec is None:
            raise TemplateError(f"unknown parameter {name}")
        if "Default" not in spec:
            raise TemplateError(f"parameter {name} has no default; pass it as an override")
        return str(spec["Default"])

    def _pseudo(self, name: str) -> str | None:
        return {
            "AWS::StackName": self.stack_name,
            "AWS::Region": self.region,
            "AWS::AccountId": ACCOUNT_ID,
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::StackId": f"arn:aws:cloudformation:{self.region}:{ACCOUNT_ID}:stack/{self.stack_name}/x",
        }.get(name)

    def ref(self, name: str) -> Any:
        if name == "AWS::NoValue":
            return _NO_VALUE
        pseudo = self._pseudo(name)
        if pseudo is not None:
            return pseudo
        if name in self.template.get("Parameters", {}) or name in self.parameter_overrides:
            return self.parameter(name)
        if name in self.attributes and "Ref" in self.attributes[name]:
            return self.attributes[name]["Ref"]
        if name in self.resources:
            return self.physical_name(name)
        raise TemplateError(f"cannot resolve Ref {name}")

    def get_att(self, logical_id: str, attribute: str) -> str:
        known = self.attributes.get(logical_id, {})
        if attribute in known:
            return known[attribute]
        if logical_id not in self.resources:
            raise TemplateError(f"GetAtt of unknown resource {logical_id}")
        resource_type = self.resources[logical_id]["Type"]
        name = self.physical_name(logical_id)
        if attribute == "Arn" and resource_type == "AWS::Serverless::Function":
            return f"arn:aws:lambda:{self.region}:{ACCOUNT_ID}:function:{name}"
        if attribute == "Arn" and resource_type == "AWS::DynamoDB::Table":
            return f"arn:aws:dynamodb:{self.region}:{ACCOUNT_ID}:table/{name}"
        if attribute in ("Arn", "QueueName") and resource_type == "AWS::SQS::Queue":
            return f"arn:aws:sqs:{self.region}:{ACCOUNT_ID}:{name}" if attribute == "Arn" else name
        raise TemplateError(f"GetAtt {logical_id}.{attribute} is not known locally (was the resource created?)")

    def condition(self, name: str) -> bool:
        spec = self.template.get("Conditions", {}).get(name)
        if spec is None:
            raise TemplateError(f"unknown condition {name}")
        return bool(self.resolve(spec))

    def resolve(self, value: Any) -> Any:
        if isinstance(value, list):
            items = [self.resolve(v) for v in value]
            return [v for v in items if v is not _NO_VALUE]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, arg),) = value.items()
            handler = self._intrinsics().get(key)
            if handler is not None:
                return handler(arg)
        resolved = {k: self.resolve(v) for k, v in value.items()}
        return {k: v for k, v in resolved.items() if v is not _NO_VALUE}

    def _intrinsics(self) -> dict[str, Callable[[Any], Any]]:
        return {
            "Ref": self.ref,
            "Fn::GetAtt": lambda arg: self.get_att(*(arg.split(".", 1) if isinstance(arg, str) else arg)),
            "Fn::Sub": self._sub,
            "Fn::Join": lambda arg: str(self.resolve(arg[0])).join(str(v) for v in self.resolve(arg[1])),
            "Fn::Select": lambda arg: self.resolve(arg[1])[int(self.resolve(arg[0]))],
            "Fn::Split": lambda arg: str(self.resolve(arg[1])).split(str(self.resolve(arg[0]))),
            "Fn::If": lambda arg: self.resolve(arg[1] if self.condition(arg[0]) else arg[2]),
            "Fn::Equals": lambda arg: str(self.resolve(arg[0])) == str(self.resolve(arg[1])),
            "Fn::Not": lambda arg: not self.resolve(arg[0]),
            "Fn::And": lambda arg: all(self.resolve(v) for v in arg),
            "Fn::Or": lambda arg: any(self.resolve(v) for v in arg),
            "Condition": self.condition,
        }

    def _sub(self, arg: Any) -> str:
        text, variables = (arg, {}) if isinstance(arg, str) else (arg[0], self.resolve(arg[1]))

        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            if name.startswith("!"):
                return "${" + name[1:] + "}"
            if name in variables:
                return str(variables[name])
            if "." in name and not name.startswith("AWS::"):
                logical_id, attribute = name.split(".", 1)
                return self.get_att(logical_id, attribute)
            return str(self.ref(name))

        return re.sub(r"\$\{([^}]+)\}", replace, text)
