"""Action confirm routes (contract §1). The client sends only the confirm id, the action and a
command id; everything else comes from the stored confirm."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from pydantic import ConfigDict, Field

from herald.auth.service_keys import capability_allows
from herald.confirms.models import Action, view
from herald.confirms.operations import DeliveryViewer
from herald.confirms.service import MAX_BATCH, MAX_PAGE
from herald.confirms.wiring import confirm_operations, confirms, registrations
from herald.ids import APP_CODE_PATTERN
from herald.web.envelope import APP, APP_AUDIENCE, OPERATOR, SERVICE, ApiModel, Envelope, errors, ok
from herald.web.security import CurrentPrincipal, CurrentReaderOrOwner

router = APIRouter(prefix="/api/v1/message/action-confirms", tags=[APP_AUDIENCE])


class AcceptBody(ApiModel):
    model_config = ConfigDict(extra="forbid")

    command_id: str = Field(min_length=1, max_length=96)


class RejectBody(AcceptBody):
    reason: str = Field(default="", max_length=256)


class StatusBody(ApiModel):
    model_config = ConfigDict(extra="forbid")

    confirm_ids: list[str] = Field(max_length=MAX_BATCH)


class ConfirmView(ApiModel):
    confirm_id: str
    business_type: str
    business_subtype: str
    business_id: str
    sender_user_id: str
    receiver_user_id: str
    status: str
    processed_action: str
    processed_at_ms: int
    created_at_ms: int
    expire_at_ms: int


class ConfirmItems(ApiModel):
    items: list[ConfirmView]


class ConfirmPage(ConfirmItems):
    next_page_token: str


@router.post("/status", responses=errors(*APP, "INVALID_ARGUMENT"), response_model=Envelope[ConfirmItems])
def batch_status(request: Request, body: StatusBody, principal: CurrentPrincipal) -> Envelope[ConfirmItems]:
    items = [ConfirmView(**view(c)) for c in confirms().statuses(principal, body.confirm_ids)]
    return ok(request, ConfirmItems(items=items))


@router.get("", responses=errors(*APP, "INVALID_ARGUMENT"), response_model=Envelope[ConfirmPage])
def list_with_peer(
    request: Request,
    principal: CurrentPrincipal,
    peer_user_id: Annotated[str, Query(min_length=1, max_length=20)],
    page_size: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
    page_token: Annotated[str, Query(max_length=1024)] = "",
) -> Envelope[ConfirmPage]:
    items, token = confirms().between(principal, peer_user_id, page_size, page_token)
    return ok(request, ConfirmPage(items=[ConfirmView(**view(c)) for c in items], next_page_token=token))


@router.post(
    "/{confirm_id}/accept",
    responses=errors(*APP, "INVALID_ARGUMENT", "PERMISSION_DENIED", "NOT_FOUND", "CONFLICT", "UPSTREAM_ERROR"),
    response_model=Envelope[ConfirmView],
)
def accept(request: Request, confirm_id: str, body: AcceptBody, principal: CurrentPrincipal) -> Envelope[ConfirmView]:
    confirm = confirms().act(principal, confirm_id, Action.ACCEPT, body.command_id)
    return ok(request, ConfirmView(**view(confirm)))


@router.post(
    "/{confirm_id}/reject",
    responses=errors(*APP, "INVALID_ARGUMENT", "PERMISSION_DENIED", "NOT_FOUND", "CONFLICT", "UPSTREAM_ERROR"),
    response_model=Envelope[ConfirmView],
)
def reject(request: Request, confirm_id: str, body: RejectBody, principal: CurrentPrincipal) -> Envelope[ConfirmView]:
    confirm = confirms().act(principal, confirm_id, Action.REJECT, body.command_id, body.reason)
    return ok(request, ConfirmView(**view(confirm)))


internal_router = APIRouter(prefix="/internal/v1/confirms", tags=[OPERATOR])


class DeliveryView(ApiModel):
    push: str
    status: str
    attempts: int
    sent_at_ms: int
    last_error: str
    last_error_at_ms: int
    msg_random: int


class ConfirmDeliveries(ApiModel):
    confirm: ConfirmView
    deliveries: list[DeliveryView]


@internal_router.get(
    "/{confirm_id}/deliveries",
    responses=errors(*SERVICE, "INVALID_ARGUMENT", "NOT_FOUND"),
    response_model=Envelope[ConfirmDeliveries],
)
def confirm_deliveries(
    request: Request,
    confirm_id: str,
    caller: CurrentReaderOrOwner,
    app_code: Annotated[str | None, Query(pattern=APP_CODE_PATTERN)] = None,
) -> Envelope[ConfirmDeliveries]:
    """For operators and support (a key with `/internal/v1/confirms`): where a confirm's IM pushes stand (sent
    at, attempts, last error). An owner service's key sees only the confirms of the business types it registered."""
    app_code = caller.tenant(app_code)
    viewer = DeliveryViewer(
        reader=capability_allows(caller.capabilities, request.url.path),
        owned=frozenset(r.business_type for r in registrations().of_service(caller.service_id, app_code)),
    )
    confirm, found = confirm_operations().deliveries(app_code, confirm_id, viewer)
    items = [
        DeliveryView(
            push=d.key,
            status=d.status,
            attempts=d.attempts,
            sent_at_ms=d.sent_at_ms,
            last_error=d.last_error,
            last_error_at_ms=d.last_error_at_ms,
            msg_random=d.msg_random,
        )
        for d in found
    ]
    return ok(request, ConfirmDeliveries(confirm=ConfirmView(**view(confirm)), deliveries=items))
