"""DynamoDB attribute-value conversion that keeps integers as `int` (boto3's deserializer yields Decimal)."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

AttributeValue = dict[str, Any]
Item = dict[str, AttributeValue]
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


def to_item(values: Mapping[str, Any]) -> Item:
    """Serialize a plain mapping; `None` values are left out (absent, not NULL)."""
    return {k: to_attr(v) for k, v in values.items() if v is not None}


def from_item(item: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    return {k: from_attr(v) for k, v in item.items()}


def from_image(image: Mapping[str, Mapping[str, Any]] | None) -> dict[str, Any] | None:
    """A stream image as plain values (None stays None)."""
    return from_item(image) if image else None


def is_conditional_check_failed(exc: Exception) -> bool:
    """True for a failed ConditionExpression (a lost race, never a fault)."""
    response = getattr(exc, "response", None)
    return isinstance(response, dict) and response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"


def is_transaction_cancelled(exc: Exception) -> bool:
    """True when a TransactWriteItems was cancelled (a failed condition, after conflict retries)."""
    response = getattr(exc, "response", None)
    return isinstance(response, dict) and response.get("Error", {}).get("Code") == "TransactionCanceledException"


THROTTLING_CODES = frozenset({"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"})


def cancellation_reasons(exc: Exception) -> list[str]:
    response = getattr(exc, "response", None)
    reasons = response.get("CancellationReasons", []) if isinstance(response, dict) else []
    return [str(reason.get("Code")) for reason in reasons]


def is_throttled(exc: Exception) -> bool:
    """DynamoDB said "not now" (over capacity or request rate), for a request or inside a transaction."""
    response = getattr(exc, "response", None)
    code = response.get("Error", {}).get("Code") if isinstance(response, dict) else None
    return code in THROTTLING_CODES or (
        code == "TransactionCanceledException" and "ThrottlingError" in cancellation_reasons(exc)
    )


def cancelled_on(exc: Exception, index: int) -> bool:
    """True when a cancelled transaction failed the condition of its item at `index`."""
    response = getattr(exc, "response", None)
    reasons = response.get("CancellationReasons", []) if isinstance(response, dict) else []
    return len(reasons) > index and reasons[index].get("Code") == "ConditionalCheckFailed"
