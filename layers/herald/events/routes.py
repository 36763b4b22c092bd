"""`POST /events/external` (contract §3): partner services post events with their service key."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import ConfigDict, Field, StrictInt, model_validator

from herald.events.models import ExternalEvent, Target
from herald.events.wiring import intake
from herald.observability import metrics
from herald.web.envelope import PARTNER, SERVICE, ApiModel, Envelope, errors, ok
from herald.web.security import CurrentService

router = APIRouter(tags=[PARTNER])

MAX_REVISION = 2**53  # every JSON client reads it exactly
EVENT_ID = r"^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,127}$"  # no '#': ids are parts of DynamoDB keys
# Printable words with single spaces between them: no control (C0, DEL, C1), format (soft hyphen, direction
# marks and overrides, zero-width, BOM) or separator character, so what a partner names its event never drives
# the terminal of an operator who reads it. Ranges, not \p{...}: every JSON Schema reader understands them.
_NOT_IN_A_WORD = r"\x00-\x20\x7f-\xa0\u00ad\u061c\u180e\u2000-\u200f\u2028-\u202f\u205f-\u206f\u3000\ufeff"
_WORD = rf"[^{_NOT_IN_A_WORD}]+"
EVENT_TYPE = rf"^{_WORD}(?: {_WORD})*$"


class TargetIn(ApiModel):
    model_config = ConfigDict(extra="forbid")

    receive_id: str = Field(min_length=1, max_length=128)
    receive_id_type: Literal["open_id", "user_id", "union_id", "email", "chat_id"]


class EventData(ApiModel):
    model_config = ConfigDict(extra="forbid")

    event_id: str | None = Field(
        default=None, pattern=EVENT_ID, description="the card id: stable across the card's revisions"
    )
    revision: StrictInt | None = Field(
        default=None, ge=0, lt=MAX_REVISION, description="required with event_id; newer states are larger (< 2^53)"
    )
    title: str = Field(min_length=1, max_length=200)
    status: str = Field(min_length=1, max_length=64)
    summary: str = Field(default="", max_length=4000)
    format: Literal["plain", "markdown"] = Field(
        default="plain",
        description="how the card shows `summary`: plain text, or Feishu markdown (only for a key created with"
        " --allow-markdown; mentions are never allowed)",
    )
    target: TargetIn

    @model_validator(mode="after")
    def card_id_and_revision_go_together(self) -> EventData:
        if (self.event_id is None) != (self.revision is None):
            raise ValueError("data.event_id and data.revision go together: give both for a card, or neither")
        return self


class ExternalEventIn(ApiModel):
    model_config = ConfigDict(extra="forbid")

    event_id: str = Field(pattern=EVENT_ID, description="this event's id: the same on every retry")
    event_type: str = Field(
        min_length=1, max_length=128, pattern=EVENT_TYPE, description="printable words, single spaces between"
    )
    data: EventData


class AcceptedOut(ApiModel):
    event_id: str
    status: Literal["accepted"] = "accepted"
    duplicate: bool


@router.post(
    "/events/external",
    responses=errors(*SERVICE, "INVALID_ARGUMENT", "CONFLICT"),
    status_code=202,
    response_model=Envelope[AcceptedOut],
    summary="Store an external event for delivery (202: stored, not yet delivered)",
)
def post_external_event(request: Request, body: ExternalEventIn, caller: CurrentService) -> JSONResponse:
    data = body.data
    event = ExternalEvent(
        event_id=body.event_id,
        event_type=body.event_type,
        title=data.title,
        status=data.status,
        summary=data.summary,
        target=Target(data.target.receive_id_type, data.target.receive_id),
        card_id=data.event_id,
        revision=data.revision,
        markdown=data.format == "markdown",
    )
    accepted = intake().accept(caller, event)
    metrics.add_metric(
        name="ExternalEventDuplicate" if accepted.duplicate else "ExternalEventAccepted", unit="Count", value=1
    )
    envelope = ok(request, AcceptedOut(event_id=accepted.event_id, duplicate=accepted.duplicate))
    return JSONResponse(status_code=202, content=envelope.model_dump())
