"""The engine's approval routes (contract §4): ask a member from a running turn, or withdraw the question. The turn
queue decides (`herald.turns.approvals`); the confirm and the notification are made before the engine is answered,
so the confirm id it gets is one the person's app can already act on."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from pydantic import ConfigDict, Field, field_validator

from herald.confirms.approvals.wiring import approval_projection
from herald.ids import APP_CODE_PATTERN
from herald.turns.approvals import ApprovalAsk
from herald.turns.models import Approval, ApprovalButton
from herald.turns.ports import EngineCaller
from herald.turns.routes import IDENTIFIER, AgentName, Identifier, NotBlank, SessionId
from herald.turns.wiring import approvals
from herald.web.envelope import ENGINE, SERVICE, ApiModel, Envelope, errors, ok
from herald.web.security import TENANT, CurrentService

router = APIRouter(prefix="/internal/v1/sessions", tags=[ENGINE])
DEFAULT_BUTTONS = (ApprovalButton("reject", "Reject", "secondary"), ApprovalButton("accept", "Approve", "primary"))


class ApprovalButtonIn(ApiModel):
    model_config = ConfigDict(extra="forbid")

    action: Literal["accept", "reject"]
    label: str = Field(min_length=1, max_length=32)
    style: Literal["primary", "secondary", "danger"] = "secondary"


class ApprovalIn(ApiModel):
    model_config = ConfigDict(extra="forbid")

    app_code: str | None = Field(default=None, pattern=APP_CODE_PATTERN, description=TENANT)
    approval_id: str = Field(pattern=IDENTIFIER, description="the engine's id for it, unique in the session")
    user_id: str = Field(pattern=r"^[0-9]{1,20}$", description="the member asked: a role that may talk to agents")
    text: Annotated[str, NotBlank] = Field(
        min_length=1, max_length=1000, description="the question, as the person's IM shows it"
    )
    actions: list[ApprovalButtonIn] | None = Field(
        default=None, min_length=1, max_length=2, description="the buttons (default: Reject, Approve)"
    )
    expire_in_s: int = Field(default=86_400, ge=60, le=7 * 86_400, description="then it is decided `expired`")

    @field_validator("actions")
    @classmethod
    def distinct_actions(cls, actions: list[ApprovalButtonIn] | None) -> list[ApprovalButtonIn] | None:
        if actions is not None and len({button.action for button in actions}) != len(actions):
            raise ValueError("actions repeat")
        return actions

    def ask(self) -> ApprovalAsk:
        buttons = [ApprovalButton(b.action, b.label, b.style) for b in self.actions] if self.actions else None
        return ApprovalAsk(
            self.approval_id, self.user_id, self.text, tuple(buttons or DEFAULT_BUTTONS), self.expire_in_s
        )


class ApprovalOut(ApiModel):
    approval_id: str
    confirm_id: str = Field(description="the confirm in the person's IM (contract §1, business type agent_approval)")
    turn_id: str
    user_id: str
    status: Literal["pending", "approved", "rejected", "expired", "cancelled"]
    expire_at_ms: int
    decided_by: str | None = None
    decided_at_ms: int | None = None


def _approval_out(approval: Approval) -> ApprovalOut:
    return ApprovalOut(
        approval_id=approval.approval_id,
        confirm_id=approval.confirm_id,
        turn_id=approval.turn_id,
        user_id=approval.user_id,
        status=approval.status.value,
        expire_at_ms=approval.expire_at_ms,
        decided_by=approval.decided_by or None,
        decided_at_ms=approval.decided_at_ms or None,
    )


@router.post(
    "/{session_id}/agents/{agent}/turns/{turn_id}/approvals",
    responses=errors(*SERVICE, "INVALID_ARGUMENT", "PERMISSION_DENIED", "NOT_FOUND", "CONFLICT"),
    status_code=201,
    response_model=Envelope[ApprovalOut],
    summary="Ask a member to approve: the turn waits until the member decides, it expires or the engine cancels",
)
def request(
    request: Request,
    session_id: SessionId,
    agent: AgentName,
    turn_id: Identifier,
    body: ApprovalIn,
    caller: CurrentService,
) -> JSONResponse:
    engine = EngineCaller(caller.service_id, caller.tenant(body.app_code))
    approval = approvals().request(engine, session_id, agent, turn_id, body.ask())
    approval_projection().project(approval)  # the confirm exists before the engine hears its id
    return JSONResponse(status_code=201, content=ok(request, _approval_out(approval)).model_dump(exclude_none=True))


@router.post(
    "/{session_id}/agents/{agent}/turns/{turn_id}/approvals/{approval_id}/cancel",
    responses=errors(*SERVICE, "INVALID_ARGUMENT", "NOT_FOUND", "CONFLICT"),
    response_model=Envelope[ApprovalOut],
    summary="Withdraw a pending approval: the turn runs on, decided `cancelled`",
)
def cancel(
    request: Request,
    session_id: SessionId,
    agent: AgentName,
    turn_id: Identifier,
    approval_id: Identifier,
    caller: CurrentService,
    app_code: Annotated[str | None, Query(pattern=APP_CODE_PATTERN, description=TENANT)] = None,
) -> Envelope[ApprovalOut]:
    engine = EngineCaller(caller.service_id, caller.tenant(app_code))
    approval = approvals().cancel(engine, session_id, agent, turn_id, approval_id)
    approval_projection().project(approval)  # the buttons grey out now (the stream does it again, harmlessly)
    return ok(request, _approval_out(approval))
