"""`/events/external` (contract §3): partner services post events with their service key, and read what became of
them with the same key."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse
from pydantic import ConfigDict, Field, StrictInt, model_validator

from herald.events.models import ExternalEvent, Target
from herald.events.status import MAX_PAGE_SIZE, FateStatus
from herald.events.wiring import intake, statuses
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


class CardRef(ApiModel):
    event_id: str = Field(description="the card id (the body's data.event_id)")
    revision: int


class TargetOut(ApiModel):
    receive_id_type: str
    receive_id: str


class SupersededBy(ApiModel):
    revision: int | None
    event_id: str | None = Field(description="the event of the newer revision sent instead (null: recorded before)")


class AttemptOut(ApiModel):
    at_ms: int
    operation: Literal["send", "update"]
    outcome: Literal["done", "refused", "throttled", "unanswered", "interrupted"]
    code: int = Field(description="Feishu's code (0: none)")


class EventFateOut(ApiModel):
    event_id: str
    event_type: str
    status: FateStatus = Field(description="held: queued, and an operator's pause holds it (nothing is sent)")
    blocked: bool = Field(description="it holds up the service's later events until settled or resolved")
    card: CardRef | None
    target: TargetOut
    message_id: str | None = Field(description="the Feishu message it went to")
    superseded_by: SupersededBy | None
    continued_from: str | None = Field(description="the message its card continues (Feishu no longer edits it)")
    attempts: list[AttemptOut] = Field(description="each call Herald made to Feishu for it, oldest first")
    accepted_at_ms: int
    completed_at_ms: int | None


class EventFatePage(ApiModel):
    items: list[EventFateOut]
    next_page_token: str = Field(description="the next page's token; empty after the last page")


@router.get(
    "/events/external",
    responses=errors(*SERVICE, "INVALID_ARGUMENT"),
    response_model=Envelope[EventFatePage],
    summary="The service's events, newest first, with what became of each (a page may hold fewer than page_size"
    " when filtered by status: follow next_page_token until it is empty)",
)
def list_external_events(
    request: Request,
    caller: CurrentService,
    status: Annotated[FateStatus | None, Query()] = None,
    page_size: Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)] = 20,
    page_token: Annotated[str, Query(max_length=1024)] = "",
) -> Envelope[EventFatePage]:
    found = statuses().list(caller.service_id, caller.delivery_tenant, status, page_size, page_token)
    items = [EventFateOut.model_validate(item) for item in found.items]
    return ok(request, EventFatePage(items=items, next_page_token=found.next_page_token))


@router.get(
    "/events/external/{event_id:path}",
    responses=errors(*SERVICE, "NOT_FOUND"),
    response_model=Envelope[EventFateOut],
    summary="What became of one of the service's events (another service's, or an unknown id: 404)",
)
def get_external_event(
    request: Request, caller: CurrentService, event_id: Annotated[str, Path(max_length=128)]
) -> Envelope[EventFateOut]:
    fate = statuses().get(caller.service_id, caller.delivery_tenant, event_id)
    return ok(request, EventFateOut.model_validate(fate))
