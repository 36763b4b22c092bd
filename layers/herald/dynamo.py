"""DynamoDB attribute values as plain values and back, integers kept `int` (boto3's deserializer yields
Decimal): page-token cursors."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

AttributeValue = dict[str, Any]
Image = dict[str, Any]  # a stream record's image, as DynamoDB sends it (attribute-value maps)


def to_attr(value: Any) -> AttributeValue:
    if value is None:
        return {"NULL": True}
    if isinstance(value, bool):
        return {"BOOL": value}
    if isinstance(value, int | float):
        return {"N": str(value)}
    if isinstance(value, str):
        return {"S": value}
    if isinstance(value, bytes):
        return {"B": value}
    if isinstance(value, Mapping):
        return {"M": {str(k): to_attr(v) for k, v in value.items()}}
    if isinstance(value, list | tuple):
        return {"L": [to_attr(v) for v in value]}
    if isinstance(value, set | frozenset):
        if all(isinstance(v, str) for v in value):
            return {"SS": sorted(value)}
        return {"NS": sorted(str(v) for v in value)}
    raise TypeError(f"cannot store {type(value).__name__} in DynamoDB")


def _number(text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        return float(text)


def from_attr(attr: Mapping[str, Any]) -> Any:
    ((kind, value),) = attr.items()
    if kind == "S":
        return value
    if kind == "N":
        return _number(value)
    if kind == "BOOL":
        return bool(value)
    if kind == "NULL":
        return None
    if kind == "M":
        return {k: from_attr(v) for k, v in value.items()}
    if kind == "L":
        return [from_attr(v) for v in value]
    if kind == "SS":
        return set(value)
    if kind == "NS":
        return {_number(v) for v in value}
    if kind == "B":
        return value if isinstance(value, bytes) else base64.b64decode(value)
    if kind == "BS":
        return {v if isinstance(v, bytes) else base64.b64decode(v) for v in value}
    raise TypeError(f"unknown DynamoDB attribute type {kind}")
