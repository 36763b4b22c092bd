"""Owner service routes (docs/owner-services.md): a service key holding the owner capability by name
(`/internal/v1/confirms/owner`) registers its business types, asks for confirms and withdraws them."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from pydantic import ConfigDict, Field

from herald.confirms.models import Action, Button, view
from herald.confirms.owners.models import (
    MAX_EXPIRY_S,
    MAX_TEXT,
    MIN_EXPIRY_S,
    OwnerConfirmRequest,
    OwnerSpec,
    Registration,
)
from herald.confirms.owners.models import view as registration_view
from herald.confirms.routes import ConfirmView
from herald.confirms.wiring import owner_confirms, registrations
from herald.ids import APP_CODE_PATTERN
from herald.web.envelope import PARTNER, SERVICE, ApiModel, Envelope, errors, ok
from herald.web.input import FreeFormJson
from herald.web.security import TENANT, CurrentOwner

router = APIRouter(prefix="/internal/v1/confirms", tags=[PARTNER])

ID = r"^[A-Za-z0-9_.:-]{1,96}$"
TYPE = r"^[a-z][a-z0-9_]{1,47}$"
USER = r"^[0-9]{1,20}$"


class ActionSpec(ApiModel):
    model_config = ConfigDict(extra="forbid")

    action: Action
    label: str = Field(min_length=1, max_length=32)
    style: Literal["primary", "secondary", "danger"]


class RegisterBody(ApiModel):
    model_config = ConfigDict(extra="forbid")

    app_code: str | None = Field(default=None, pattern=APP_CODE_PATTERN, description=TENANT)
    callback_url: str = Field(max_length=2048, description="POSTed signed `confirm.action` and `confirm.expire`")
    fact_url: str = Field(max_length=2048, description="GET (signed) for the owner's truth about a business id")
    subtypes: list[Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_]{0,31}$")]] = Field(min_length=1, max_length=32)
    actions: list[ActionSpec] | None = Field(
        default=None, min_length=1, max_length=2, description="default: Reject (secondary), Accept (primary)"
    )
    default_expiry_seconds: int = Field(default=7 * 86_400, ge=MIN_EXPIRY_S, le=MAX_EXPIRY_S, strict=True)
    allow_links: bool = Field(
        default=False, strict=True, description="let `message_text` hold links and addresses (default: plain text only)"
    )


class TenantBody(ApiModel):
    model_config = ConfigDict(extra="forbid")

    app_code: str | None = Field(default=None, pattern=APP_CODE_PATTERN, description=TENANT)


class RegistrationView(ApiModel):
    app_code: str
    business_type: str
    service_id: str
    callback_url: str
    fact_url: str
    subtypes: list[str]
    actions: list[dict[str, str]]
    default_expiry_seconds: int
    allow_links: bool
    enabled: bool
    created_at_ms: int
    updated_at_ms: int


class Registered(ApiModel):
    registration: RegistrationView
    signing_secret: str | None = Field(description="`whsec_...`: shown once, when the registration is new or rotated")


class RegistrationItems(ApiModel):
    items: list[RegistrationView]


class CreateConfirmBody(ApiModel):
    model_config = ConfigDict(extra="forbid")

    app_code: str | None = Field(default=None, pattern=APP_CODE_PATTERN, description=TENANT)
    business_type: str = Field(pattern=TYPE)
    business_subtype: str = Field(max_length=32)
    business_id: str = Field(pattern=ID)
    source_event_id: str = Field(pattern=ID, description="idempotency: a retry returns the same confirm")
    sender_user_id: str = Field(pattern=USER)
    receiver_user_id: str = Field(pattern=USER)
    message_text: str = Field(min_length=1, max_length=MAX_TEXT)
    actions: list[Action] = Field(default_factory=list, max_length=2, description="default: every registered action")
    payload: FreeFormJson = Field(default_factory=dict)
    expire_at_ms: int | None = Field(default=None, gt=0, strict=True, description="default: the registered expiry")


class CancelBody(ApiModel):
    model_config = ConfigDict(extra="forbid")

    app_code: str | None = Field(default=None, pattern=APP_CODE_PATTERN, description=TENANT)
    business_type: str = Field(pattern=TYPE)
    business_id: str = Field(pattern=ID)


class CallbackConfirm(ConfirmView):
    app_code: str
    message_text: str
    payload: dict[str, Any]


class ActionCallback(ApiModel):
    """`POST {callback_url}` when the receiver acts. Headers: `webhook-id` (stable per command: the
    idempotency key), `webhook-timestamp`, `webhook-signature` (Standard Webhooks `v1,<base64 HMAC-SHA256>`)."""

    type: Literal["confirm.action"]
    action: Action
    acting_user_id: str
    reason: str
    command_id: str
    confirm: CallbackConfirm


class ExpireCallback(ApiModel):
    """`POST {callback_url}` when an undecided confirm passed its `expire_at_ms`."""

    type: Literal["confirm.expire"]
    confirm: CallbackConfirm


class OwnerFactAnswer(ApiModel):
    """The owner's truth after the call (200)."""

    state: Literal["pending", "accepted", "rejected", "cancelled", "expired"]
    decided_at_ms: int | None = None


class OwnerRefusal(ApiModel):
    """The owner refuses for good (409): the confirm fails and the client gets 409 `data.reason` = `reason`."""

    reason: str = Field(pattern=r"^[a-z][a-z0-9_]{0,63}$")


_OWNER_ANSWERS: dict[int | str, dict[str, Any]] = {
    409: {"model": OwnerRefusal, "description": "refused for good (a named reason)"},
    "5XX": {"description": "unavailable: a 502 to the client, the confirm repaired later from the fact"},
}
callbacks = APIRouter()


@callbacks.post(
    "{$request.body#/callback_url}",
    response_model=OwnerFactAnswer,
    responses=_OWNER_ANSWERS,
    operation_id="owners.callback",
)
def owner_callback(body: ActionCallback | ExpireCallback) -> None:
    """Herald calls the owner: carry out the action (idempotently, by `webhook-id`) or expire the thing."""


@callbacks.get("{$request.body#/fact_url}", response_model=OwnerFactAnswer, operation_id="owners.fact")
def owner_fact(business_type: str, business_subtype: str, business_id: str, confirm_id: str) -> None:
    """Herald asks the owner's truth about a business id (signed over an empty body), to repair a confirm."""


def _view(registration: Registration) -> RegistrationView:
    return RegistrationView(**registration_view(registration))


@router.put(
    "/owners/{business_type}",
    responses=errors(*SERVICE, "INVALID_ARGUMENT", "CONFLICT"),
    response_model=Envelope[Registered],
    callbacks=callbacks.routes,
)
def register(request: Request, business_type: str, body: RegisterBody, caller: CurrentOwner) -> Envelope[Registered]:
    """Register a business type for this service (the signing secret is in the answer, once), or change the
    service's own registration (the secret stays). Another service's business type is 409 `business_type_taken`."""
    buttons = tuple(Button(a.action, a.label, a.style) for a in body.actions) if body.actions else None
    spec = OwnerSpec(
        callback_url=body.callback_url,
        fact_url=body.fact_url,
        subtypes=frozenset(body.subtypes),
        default_expiry_s=body.default_expiry_seconds,
        allow_links=body.allow_links,
        **({"buttons": buttons} if buttons else {}),
    )
    registration, secret = registrations().register(
        caller.service_id, caller.tenant(body.app_code), business_type, spec
    )
    return ok(request, Registered(registration=_view(registration), signing_secret=secret))


@router.post(
    "/owners/{business_type}/rotate-secret",
    responses=errors(*SERVICE, "INVALID_ARGUMENT", "NOT_FOUND", "CONFLICT"),
    response_model=Envelope[Registered],
)
def rotate_secret(request: Request, business_type: str, body: TenantBody, caller: CurrentOwner) -> Envelope[Registered]:
    """A new signing secret, shown once; callbacks carry signatures by both secrets for 24 hours."""
    registration, secret = registrations().rotate_secret(caller.service_id, caller.tenant(body.app_code), business_type)
    return ok(request, Registered(registration=_view(registration), signing_secret=secret))


@router.get("/owners", responses=errors(*SERVICE, "INVALID_ARGUMENT"), response_model=Envelope[RegistrationItems])
def list_registrations(
    request: Request,
    caller: CurrentOwner,
    app_code: Annotated[str | None, Query(pattern=APP_CODE_PATTERN, description=TENANT)] = None,
) -> Envelope[RegistrationItems]:
    """This service's own registrations in the tenant."""
    items = registrations().of_service(caller.service_id, caller.tenant(app_code))
    return ok(request, RegistrationItems(items=[_view(r) for r in items]))


@router.post(
    "",
    responses=errors(*SERVICE, "INVALID_ARGUMENT", "NOT_FOUND", "CONFLICT"),
    response_model=Envelope[ConfirmView],
)
def create_confirm(request: Request, body: CreateConfirmBody, caller: CurrentOwner) -> Envelope[ConfirmView]:
    """One confirm, and one IM push to its receiver, per `source_event_id` however often it is retried."""
    app_code = caller.tenant(body.app_code)
    ask = OwnerConfirmRequest(
        business_type=body.business_type,
        business_subtype=body.business_subtype,
        business_id=body.business_id,
        source_event_id=body.source_event_id,
        sender_user_id=body.sender_user_id,
        receiver_user_id=body.receiver_user_id,
        message_text=body.message_text,
        actions=tuple(str(a) for a in body.actions),
        payload=body.payload,
        expire_at_ms=body.expire_at_ms,
    )
    return ok(request, ConfirmView(**view(owner_confirms().create(caller.service_id, app_code, ask))))


@router.post(
    "/cancel",
    responses=errors(*SERVICE, "INVALID_ARGUMENT", "NOT_FOUND", "CONFLICT"),
    response_model=Envelope[ConfirmView],
)
def cancel_confirm(request: Request, body: CancelBody, caller: CurrentOwner) -> Envelope[ConfirmView]:
    """The owner withdrew the thing: its pending confirm becomes `cancelled` (both parties' buttons grey);
    409 `processing` while the receiver's action is with the owner, 409 `<status>` once it ended otherwise."""
    app_code = caller.tenant(body.app_code)
    confirm = owner_confirms().cancel(caller.service_id, app_code, body.business_type, body.business_id)
    return ok(request, ConfirmView(**view(confirm)))
