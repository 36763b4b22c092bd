"""The one input policy for free-form JSON (contract §0): what Herald accepts is what DynamoDB can store
and what a reader can render, refused whole otherwise with a message naming the field.

Plain Python, no web framework: the HTTP edge applies `check_body` to every JSON request body and
`check_free_form` to fields that carry a client's own JSON (an inbox payload), with tighter limits.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

# DynamoDB numbers: at most 38 significant digits, magnitude 1E-130 to 9.99…E+125 (or zero).
MAX_NUMBER_DIGITS = 38
MAX_NUMBER_EXPONENT = 125
MIN_NUMBER_EXPONENT = -130


class PolicyViolation(ValueError):
    """The input breaks the policy; `field` is a dotted path to where (`payload.items.3`)."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}" if field else problem)
        self.field = field
        self.problem = problem


@dataclass(frozen=True)
class JsonLimits:
    max_bytes: int  # the value as compact UTF-8 JSON
    max_depth: int  # nesting of objects and arrays (a flat object is 1)
    max_keys: int  # object keys and array items, counted over the whole value
    max_string: int  # characters of any one string or key

    def describe(self) -> str:
        return (
            f"at most {self.max_bytes} bytes as JSON, {self.max_depth} levels deep, {self.max_keys} keys and items"
            f" in all, strings of at most {self.max_string} characters; numbers finite with at most"
            f" {MAX_NUMBER_DIGITS} significant digits and magnitude within 1E{MIN_NUMBER_EXPONENT}..1E"
            f"{MAX_NUMBER_EXPONENT + 1}; no empty keys; valid Unicode"
        )


# Any request body as a whole (the largest route, an inbox notification, fits well inside).
BODY_LIMITS = JsonLimits(max_bytes=64 * 1024, max_depth=12, max_keys=2_000, max_string=16 * 1024)
# A client's own JSON stored and shown back (an inbox notification's `payload`).
FREE_FORM_LIMITS = JsonLimits(max_bytes=16 * 1024, max_depth=8, max_keys=200, max_string=4_000)


def _reject_constant(name: str) -> Any:
    raise PolicyViolation("body", f"{name} is not a JSON number Herald accepts")


def parse_body(raw: bytes) -> Any:
    """Parse a request body strictly: NaN and Infinity are not JSON; invalid UTF-8 is refused."""
    if len(raw) > BODY_LIMITS.max_bytes:
        raise PolicyViolation("body", f"larger than {BODY_LIMITS.max_bytes} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PolicyViolation("body", "not valid UTF-8") from exc
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise PolicyViolation("body", f"not valid JSON ({exc.msg} at {exc.pos})") from exc
    except RecursionError as exc:
        raise PolicyViolation("body", "nested too deep") from exc


def check_body(value: Any) -> None:
    check(value, BODY_LIMITS, "body")


def check_free_form(value: Any, field: str) -> None:
    check(value, FREE_FORM_LIMITS, field)


def check(value: Any, limits: JsonLimits, field: str) -> None:
    """Walk the value once; the first violation found is raised."""
    keys = _walk(value, limits, field, 1)
    if keys > limits.max_keys:
        raise PolicyViolation(field, f"more than {limits.max_keys} keys and items")
    size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    if size > limits.max_bytes:
        raise PolicyViolation(field, f"larger than {limits.max_bytes} bytes as JSON")


def _walk(value: Any, limits: JsonLimits, path: str, depth: int) -> int:
    if isinstance(value, dict):
        return _walk_object(value, limits, path, depth)
    if isinstance(value, list):
        if depth > limits.max_depth:
            raise PolicyViolation(path, f"nested deeper than {limits.max_depth} levels")
        return len(value) + sum(_walk(item, limits, f"{path}.{index}", depth + 1) for index, item in enumerate(value))
    if isinstance(value, str):
        _check_string(value, limits, path)
    elif isinstance(value, bool) or value is None:
        pass
    elif isinstance(value, int | float):
        _check_number(value, path)
    return 0


def _walk_object(value: dict[Any, Any], limits: JsonLimits, path: str, depth: int) -> int:
    if depth > limits.max_depth:
        raise PolicyViolation(path, f"nested deeper than {limits.max_depth} levels")
    if len(value) > limits.max_keys:
        raise PolicyViolation(path, f"more than {limits.max_keys} keys")
    count = len(value)
    for key, item in value.items():
        if not isinstance(key, str) or key == "":
            raise PolicyViolation(path, "has an empty key")
        _check_string(key, limits, f"{path} key")
        count += _walk(item, limits, f"{path}.{key}", depth + 1)
        if count > limits.max_keys:
            raise PolicyViolation(path, f"more than {limits.max_keys} keys and items")
    return count


def _check_string(value: str, limits: JsonLimits, path: str) -> None:
    if len(value) > limits.max_string:
        raise PolicyViolation(path, f"a string longer than {limits.max_string} characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise PolicyViolation(path, "not valid Unicode (a lone surrogate)") from exc


def _check_number(value: int | float, path: str) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise PolicyViolation(path, "not a finite number")
    if isinstance(value, int):
        if abs(value) >= 10**MAX_NUMBER_DIGITS:
            raise PolicyViolation(path, f"an integer of more than {MAX_NUMBER_DIGITS} digits")
        return
    number = Decimal(repr(value))
    if number.is_zero():
        return
    digits = len(number.normalize().as_tuple().digits)
    exponent = number.adjusted()
    if digits > MAX_NUMBER_DIGITS or not MIN_NUMBER_EXPONENT <= exponent <= MAX_NUMBER_EXPONENT:
        raise PolicyViolation(path, "a number DynamoDB cannot store (38 significant digits, 1E-130..1E126)")
