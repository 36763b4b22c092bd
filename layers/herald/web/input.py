"""The input policy at the HTTP edge: every JSON body is parsed strictly and checked whole before any
route reads it, so nothing a client can send reaches DynamoDB unstorable (contract §0)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Request
from pydantic import AfterValidator, Field

from herald.errors import InvalidArgument
from herald.input_policy import FREE_FORM_LIMITS, PolicyViolation, check_body, check_free_form, parse_body


async def strict_json_body(request: Request) -> None:
    """For routes that read a body (a body sent to one that reads none is ignored, as before)."""
    route = request.scope.get("route")
    if getattr(route, "body_field", None) is None:
        return
    raw = await request.body()
    if not raw:
        return
    try:
        check_body(parse_body(raw))
    except PolicyViolation as exc:
        raise InvalidArgument(str(exc), reason="input_policy", details={"field": exc.field}) from exc


def _free_form(value: dict[str, Any]) -> dict[str, Any]:
    check_free_form(value, "payload")
    return value


FreeFormJson = Annotated[
    dict[str, Any],
    AfterValidator(_free_form),
    Field(description="the producer's own JSON, shown back as given: " + FREE_FORM_LIMITS.describe()),
]
