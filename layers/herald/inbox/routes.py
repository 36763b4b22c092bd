"""Inbox routes (contract §2): producers with service keys, app users with JWTs."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import ConfigDict, Field, StrictBool

from herald.auth.models import Principal
from herald.ids import APP_CODE_PATTERN
from herald.inbox.models import Kind, view
from herald.inbox.service import MAX_PAGE, Incoming
from herald.inbox.wiring import inbox
from herald.observability import metrics
from herald.web.envelope import APP, APP_AUDIENCE, PARTNER, SERVICE, ApiModel, Envelope, errors, ok
from herald.web.input import FreeFormJson
from herald.web.security import TENANT, CurrentPrincipal, CurrentService

producer_router = APIRouter(prefix="/internal/v1/inbox", tags=[PARTNER])
router = APIRouter(prefix="/api/v1/inbox", tags=[APP_AUDIENCE])


class NotificationIn(ApiModel):
    model_config = ConfigDict(extra="forbid")

    app_code: str | None = Field(default=None, pattern=APP_CODE_PATTERN, description=TENANT)
    user_id: str | None = Field(default=None, max_length=20)
    kind: Kind
    session_id: str = Field(min_length=1, max_length=128)
    tail: str = Field(min_length=1, max_length=128)
    title: str = Field(min_length=1, max_length=256)
    content: str = Field(default="", max_length=4000)
    payload: FreeFormJson = Field(default_factory=dict)
    session_type: str = Field(
        default="NORMAL", max_length=32, description="the session's type (SUBAGENT, SIDE_TASK, ...)"
    )
    channel: str = Field(default="", max_length=32, description="weixin / feishu for bot-channel sessions")
    phase: str = Field(default="", max_length=32, description="for TASK_*: COMPLETED, FAILED or CANCELLED")


class ResolveIn(ApiModel):
    model_config = ConfigDict(extra="forbid")

    app_code: str | None = Field(default=None, pattern=APP_CODE_PATTERN, description=TENANT)
    user_id: str = Field(min_length=1, max_length=20)
    kind: Kind
    session_id: str = Field(min_length=1, max_length=128)
    tail: str = Field(min_length=1, max_length=128)


class RecordedOut(ApiModel):
    notification_id: str
    created: bool
    skipped: str | None = None


class ResolvedOut(ApiModel):
    resolved: bool


class NotificationOut(ApiModel):
    notification_id: str
    kind: str
    title: str
    content: str
    session_id: str
    payload: dict[str, Any]
    is_read: bool
    read_at_ms: int
    created_at_ms: int


class NotificationPage(ApiModel):
    items: list[NotificationOut]
    next_page_token: str
    unread_count: int


class UnreadCount(ApiModel):
    unread_count: int


class Preferences(ApiModel):
    """The four kind switches decide what Herald records for the user; `system_notify` is the desktop
    client's master switch for system notifications (default on), read by clients and kept by Herald."""

    task_completed: bool
    question_pending: bool
    approval_pending: bool
    subagent_done: bool
    system_notify: bool = Field(description="Show desktop system notifications (the client's master switch).")


class PreferencesIn(ApiModel):
    """Switches to change; one left out stays as it is. Each is `true` or `false`: nothing else, not null."""

    model_config = ConfigDict(extra="forbid")

    task_completed: StrictBool = None  # type: ignore[assignment]
    question_pending: StrictBool = None  # type: ignore[assignment]
    approval_pending: StrictBool = None  # type: ignore[assignment]
    subagent_done: StrictBool = None  # type: ignore[assignment]
    system_notify: StrictBool = None  # type: ignore[assignment]


@producer_router.post(
    "/notifications", responses=errors(*SERVICE, "INVALID_ARGUMENT"), response_model=Envelope[RecordedOut]
)
def record(request: Request, body: NotificationIn, caller: CurrentService) -> Envelope[RecordedOut]:
    accepted = {"app_code": caller.tenant(body.app_code), "producer": caller.service_id}
    result = inbox().record(Incoming(**{**body.model_dump(), **accepted}))
    outcome = "Skipped" if result.skipped else "Recorded" if result.created else "Duplicate"
    metrics.add_metric(name=f"InboxNotification{outcome}", unit="Count", value=1)
    return ok(
        request, RecordedOut(notification_id=result.notification_id, created=result.created, skipped=result.skipped)
    )


@producer_router.post(
    "/notifications/resolve",
    responses=errors(*SERVICE, "INVALID_ARGUMENT", "NOT_FOUND"),
    response_model=Envelope[ResolvedOut],
)
def resolve(request: Request, body: ResolveIn, caller: CurrentService) -> Envelope[ResolvedOut]:
    """Only the service that created a notification resolves it; any other's, or none, is 404 alike."""
    app_code = caller.tenant(body.app_code)
    resolved = inbox().resolve(app_code, caller.service_id, body.user_id, body.kind, body.session_id, body.tail)
    return ok(request, ResolvedOut(resolved=resolved))


def _count(principal: Principal) -> int:
    return inbox().unread_count(principal.app_code, principal.user_id)


@router.get("/notifications", responses=errors(*APP, "INVALID_ARGUMENT"), response_model=Envelope[NotificationPage])
def list_notifications(
    request: Request,
    principal: CurrentPrincipal,
    unread_only: bool = False,
    page_size: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 20,
    page_token: Annotated[str, Query(max_length=1024)] = "",
) -> Envelope[NotificationPage]:
    items, token = inbox().page(principal, unread_only, page_size, page_token)
    page = NotificationPage(
        items=[NotificationOut(**view(n)) for n in items], next_page_token=token, unread_count=_count(principal)
    )
    return ok(request, page)


@router.get("/unread-count", responses=errors(*APP), response_model=Envelope[UnreadCount])
def unread_count(request: Request, principal: CurrentPrincipal) -> Envelope[UnreadCount]:
    return ok(request, UnreadCount(unread_count=_count(principal)))


@router.post("/notifications/read-all", responses=errors(*APP), response_model=Envelope[UnreadCount])
def read_all(request: Request, principal: CurrentPrincipal) -> Envelope[UnreadCount]:
    return ok(request, UnreadCount(unread_count=inbox().read_all(principal)))


@router.post(
    "/notifications/{notification_id}/read",
    responses=errors(*APP, "INVALID_ARGUMENT", "NOT_FOUND"),
    response_model=Envelope[UnreadCount],
)
def read(request: Request, notification_id: str, principal: CurrentPrincipal) -> Envelope[UnreadCount]:
    return ok(request, UnreadCount(unread_count=inbox().read(principal, notification_id)))


@router.delete(
    "/notifications/{notification_id}",
    responses=errors(*APP, "INVALID_ARGUMENT", "NOT_FOUND"),
    response_model=Envelope[UnreadCount],
)
def delete(request: Request, notification_id: str, principal: CurrentPrincipal) -> Envelope[UnreadCount]:
    return ok(request, UnreadCount(unread_count=inbox().delete(principal, notification_id)))


@router.get("/preferences", responses=errors(*APP), response_model=Envelope[Preferences])
def get_preferences(request: Request, principal: CurrentPrincipal) -> Envelope[Preferences]:
    return ok(request, Preferences(**inbox().preferences(principal)))


@router.put("/preferences", responses=errors(*APP, "INVALID_ARGUMENT"), response_model=Envelope[Preferences])
def put_preferences(request: Request, body: PreferencesIn, principal: CurrentPrincipal) -> Envelope[Preferences]:
    changes = {name: value for name, value in body.model_dump().items() if value is not None}
    return ok(request, Preferences(**inbox().set_preferences(principal, changes)))
